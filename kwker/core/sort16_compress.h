// The 16-bit quicksort on compressed 16-bit lanes: vq::sort on Ops<int16_t> with the
// VPCOMPRESSW partition step (AVX512-VBMI2, core/simd16-inl.h). Every other engine and CPU
// sorts 16-bit keys widened to 32 bits or on scalar lanes; the sorted keys are the same
// either way. Compiled once, with the avx512 engine's flags plus -mavx512vbmi2, in
// engines/avx512/sort16.cc; only the avx512 engine calls it (KWKER_SORT16_COMPRESS), and only
// where sort16_compress_runs() (cpuid).
#ifndef KWKER_CORE_SORT16_COMPRESS_H_
#define KWKER_CORE_SORT16_COMPRESS_H_
#include <stddef.h>
#include <stdint.h>

namespace kwker {
bool sort16_compress_runs();                  // this CPU has AVX512-VBMI2 (OS state included)
void sort16_compress(int16_t *a, size_t n);  // a[0..n) ascending, in place
// The parallel sort's split of one block (parallel-inl.h's split_block, same contract): keys
// <= s0 to buf from the front (their count in nl), the others from buf + cap down to *high.
void split16_compress(const int16_t *keys, size_t m, int16_t s0, int16_t *buf, size_t cap,
                      size_t &nl, int16_t *&high);
}  // namespace kwker
#endif
