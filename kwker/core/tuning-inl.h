// This engine's measured thresholds (the defaults of the knobs in runtime/tuning.h). The values
// come from `python kwker/bench/thresholds.py`, whose table is committed as
// kwker/bench/thresholds.md; regenerate both together when an algorithm changes.
#pragma once
#include <cstdint>

#include "core/engine_ns-inl.h"
#include "runtime/tuning.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

#if defined(__AVX512F__)
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {256, 128, 380, 512, 170, 256, 256, 128, 128, 256, 350000, 60000, 0, 8, 8};
#elif defined(__AVX2__)
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {128, 64, 190, 256, 85, 128, 128, 64, 64, 256, 350000, 60000, 0, 8, 8};
#elif defined(__SSE4_2__)
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {64, 32, 95, 128, 40, 64, 64, 32, 32, 256, 350000, 60000, 0, 8, 8};
#else
constexpr int64_t kTuningDefaults[tune::kKnobCount] = {16, 16, 0, 0, 0, 0, 16, 16, 16, 256, 350000, 60000, 0, 8, 8};
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
