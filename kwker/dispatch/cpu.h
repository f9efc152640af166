// CPU feature detection (cpuid + xgetbv: a feature counts only when the OS also saves its
// register state, which is what hides AVX-512 on some VMs).
#ifndef KWKER_DISPATCH_CPU_H_
#define KWKER_DISPATCH_CPU_H_
#include <string>

namespace kwker {

struct CpuInfo {
  std::string vendor, brand;
  bool sse42 = false, popcnt = false, avx = false, avx2 = false, bmi1 = false, bmi2 = false,
       fma = false, lzcnt = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool amx = false;
  // The avx512 engine's 16-bit quicksort compresses 16-bit lanes where this is set
  // (engines/avx512/sort16.cc): same results, fewer instructions.
  bool avx512_vbmi2 = false;
  // Used by the CPU backend's linear kernels where they give the same results (runtime info).
  bool avx512_vnni = false, avx512_bf16 = false, avx_vnni = false, amx_int8 = false,
       amx_bf16 = false;
};

const CpuInfo &cpu_info();

}  // namespace kwker
#endif
