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
// 16/32/64; sort tiny, argsort tiny; presorted; counting 16 sort, argsort; radix64 bits.
#if defined(__AVX512F__)
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {
    512, 256, 128, 700, 1024, 380, 512, 170, 256, 256, 128, 128, 8, 8, 256, 350000, 60000, 11};
#elif defined(__AVX2__)
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {
    256, 128, 64, 350, 512, 190, 256, 85, 128, 128, 64, 64, 8, 8, 256, 350000, 60000, 11};
#elif defined(__SSE4_2__)
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {
    128, 64, 32, 175, 256, 95, 128, 40, 64, 64, 32, 32, 8, 8, 256, 350000, 60000, 11};
#else
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {
    16, 16, 16, 0, 0, 0, 0, 0, 0, 16, 16, 16, 8, 8, 256, 350000, 60000, 11};
#endif

inline int64_t tuned(tune::Knob k) {
  const int64_t v = tune::override_of(k);
  return v < 0 ? kTuningDefaults[k] : v;
}
inline int64_t tuning_default(int k) {
  return k >= 0 && k < tune::kKnobCount ? kTuningDefaults[k] : -1;
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
