// The avx512 engine's 16-bit quicksort with VPCOMPRESSW (core/sort16_compress.h). This file is
// compiled with -mavx512vbmi2 on top of the engine's flags, so the core headers it includes
// get a namespace of their own: no instantiation of theirs may be merged with the engine's,
// which must still run on AVX-512 CPUs without VBMI2 (Skylake-X, Cascade Lake).
#undef KWKER_ENGINE_NS
#define KWKER_ENGINE_NS n_avx512_vbmi2
#undef KWKER_SORT16_COMPRESS
#include "core/sort16_compress.h"

#include "core/parallel-inl.h"
#include "core/vqsort-inl.h"
#include "dispatch/cpu.h"

#if !defined(__AVX512VBMI2__)
#error "engines/avx512/sort16.cc needs -mavx512vbmi2 (CMakeLists.txt)"
#endif

namespace kwker {

bool sort16_compress_runs() {
  static const bool yes = cpu_info().avx512_vbmi2;
  return yes;
}

void sort16_compress(int16_t *a, size_t n) {
  KWKER_ENGINE_NS::vq::sort<KWKER_ENGINE_NS::vq::Ops<int16_t>>(a, n);
}

void split16_compress(const int16_t *keys, size_t m, int16_t s0, int16_t *buf, size_t cap,
                      size_t &nl, int16_t *&high) {
  KWKER_ENGINE_NS::split_block(keys, m, s0, buf, cap, nl, high);
}

}  // namespace kwker
