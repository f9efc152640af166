#include "dispatch/cpu.h"

#include <cpuid.h>
#include <cstdint>
#include <cstring>

namespace kwker {
namespace {

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuInfo detect() {
  CpuInfo c;
  unsigned a, b, cx, d;
  if (!__get_cpuid(0, &a, &b, &cx, &d)) return c;
  unsigned max_leaf = a;
  char vendor[13] = {0};
  memcpy(vendor, &b, 4);
  memcpy(vendor + 4, &d, 4);
  memcpy(vendor + 8, &cx, 4);
  c.vendor = vendor;
  __get_cpuid(1, &a, &b, &cx, &d);
  c.sse42 = cx & bit_SSE4_2;
  c.popcnt = cx & bit_POPCNT;
  c.fma = cx & bit_FMA;
  bool osxsave = cx & bit_OSXSAVE;
  bool cpu_avx = cx & bit_AVX;
  uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  bool os_avx = (xcr0 & 0x6) == 0x6;            // SSE + AVX state
  bool os_avx512 = (xcr0 & 0xE6) == 0xE6;       // + opmask, ZMM_Hi256, Hi16_ZMM
  bool os_amx = (xcr0 & 0x60000) == 0x60000;    // XTILECFG + XTILEDATA
  c.avx = cpu_avx && os_avx;
  c.fma = c.fma && c.avx;
  c.f16c = (cx & bit_F16C) && c.avx;
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &a, &b, &cx, &d);
    c.avx2 = (b & bit_AVX2) && c.avx;
    c.bmi1 = b & bit_BMI;
    c.bmi2 = b & bit_BMI2;
    c.avx512f = (b & bit_AVX512F) && os_avx512;
    c.avx512bw = (b & bit_AVX512BW) && os_avx512;
    c.avx512dq = (b & bit_AVX512DQ) && os_avx512;
    c.avx512vl = (b & bit_AVX512VL) && os_avx512;
    c.amx = (d & (1u << 24)) && (d & (1u << 25)) && os_amx;  // AMX-TILE and AMX-INT8 (bit 22 is AMX-BF16, below)
    c.avx512_vnni = (cx & (1u << 11)) && os_avx512;
    c.avx512_vbmi2 = (cx & (1u << 6)) && c.avx512bw;
    c.amx_bf16 = (d & (1u << 22)) && os_amx;
    c.amx_int8 = (d & (1u << 25)) && os_amx;
    if (a >= 1) {
      unsigned a1, b1, c1, d1;
      __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
      c.avx_vnni = (a1 & (1u << 4)) && c.avx;
      c.avx512_bf16 = (a1 & (1u << 5)) && os_avx512;
    }
  }
  if (__get_cpuid(0x80000001, &a, &b, &cx, &d)) c.lzcnt = cx & bit_LZCNT;
  char brand[49] = {0};
  if (__get_cpuid(0x80000000, &a, &b, &cx, &d) && a >= 0x80000004) {
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      __get_cpuid(0x80000002 + leaf, &a, &b, &cx, &d);
      memcpy(brand + 16 * leaf, &a, 4);
      memcpy(brand + 16 * leaf + 4, &b, 4);
      memcpy(brand + 16 * leaf + 8, &cx, 4);
      memcpy(brand + 16 * leaf + 12, &d, 4);
    }
  }
  c.brand = brand;
  while (!c.brand.empty() && c.brand.back() == ' ') c.brand.pop_back();
  size_t first = c.brand.find_first_not_of(' ');
  c.brand = first == std::string::npos ? "" : c.brand.substr(first);
  return c;
}

}  // namespace

const CpuInfo &cpu_info() {
  static const CpuInfo info = detect();
  return info;
}

}  // namespace kwker
