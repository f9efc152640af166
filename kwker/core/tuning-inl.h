// This engine's measured thresholds (the defaults of the knobs in runtime/tuning.h). The values
// come from `python kwker/bench/thresholds.py`, whose table is committed as
// kwker/bench/thresholds.md; regenerate both together when an algorithm changes.
#pragma once
#include <cstdint>

#include "core/engine_ns-inl.h"
#include "runtime/tuning.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

// Order of runtime/tuning.h: sort network 16/32/64; pair min/max 16, 32, 64; argsort network
// 16/32/64; sort tiny, argsort tiny; presorted; counting 16 sort, argsort; radix64 bits;
// float comparisons from 32, 64 and up to 32, 64 (avx512 and avx2); float pair min 32, 64;
// 16-bit compress quicksort (avx512 only: core/sort16_compress.h); 64-bit radix argsort min;
// 32-bit integer radix argsort / pair sort min; float rows in registers compared as floats up to.
#if defined(__AVX512F__)
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {
    512, 256, 128, 513, 1024, 257, 512, 129, 256, 192, 128, 128, 7, 8, 256, 200000, 65537, 11,
    9, 9, 256, 64, 0, 0, 1025, 2000, 0, 0};
// Intel cores measured differently where a network's min / max become float comparisons: a
// 512-bit vminps / vminpd has a longer latency there than the integer forms, while AMD's Zen
// cores run the float forms faster on short networks (thresholds.md, "avx512 on Intel" and
// "avx512 on AMD"). Rows sorted in registers still gain from them on Intel up to 16 keys a row,
// where skipping the keys' encoding outweighs the latency. CPUs of other vendors take the first
// table.
constexpr int64_t kIntelDefaults[][2] = {{tune::kSortFloatMin32, 0},
                                         {tune::kSortFloatMin64, 33},
                                         {tune::kSortFloatMax32, 0},
                                         {tune::kSortFloatMax64, 256},
                                         {tune::kSortFloatPairMin32, 0},
                                         {tune::kSortFloatPairMin64, 0},
                                         {tune::kSortFloatRowsMax, 16}};
#elif defined(__AVX2__)
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {
    256, 128, 64, 257, 512, 129, 256, 112, 128, 128, 32, 64, 7, 7, 256, 60000, 65537, 11,
    9, 9, 256, 128, 129, 65, 0, 1000, 50000, 0};
// On Intel cores the two paths these knobs enable lose at every size (thresholds.md, "avx2 on
// Intel"): the 32-bit argsort network packs (key << 32 | index) and compares 64-bit lanes, a
// vpcmpgtq and two blends per compare-exchange, where the 32-bit words' path that replaces it
// compares 32-bit lanes; and the 32-bit LSD radix's scatters ran slower than the packed
// quicksort they replace (one thread, 1,000 to 2,000,000 keys: 0.31-0.94x).
constexpr int64_t kIntelDefaults[][2] = {{tune::kArgsortNetwork32, 0},
                                         {tune::kRadix32PairsMin, 0}};
#elif defined(__SSE4_2__)
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {
    128, 64, 32, 129, 256, 128, 128, 0, 0, 64, 32, 32, 7, 7, 256, 30000, 30000, 22, 0, 0, 0, 0,
    0, 0, 0, 500, 2049, 0};
#else
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {
    16, 16, 16, 0, 0, 0, 0, 0, 0, 16, 16, 16, 8, 8, 16384, 10000, 10000, 22, 0, 0, 0, 0, 0, 0, 0,
    500, 1000, 0};
#endif

inline int64_t tuning_default(int k) {
  if (k < 0 || k >= tune::kKnobCount) return -1;
#if defined(__AVX512F__) || defined(__AVX2__)
  if (tune::g_intel_cpu)
    for (const auto &d : kIntelDefaults)
      if (d[0] == k) return d[1];
#endif
  return kTuningDefaults[k];
}
inline int64_t tuned(tune::Knob k) {
  const int64_t v = tune::override_of(k);
  return v < 0 ? tuning_default(k) : v;
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
