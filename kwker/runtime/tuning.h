// Tuning knobs: the thresholds at which the engines switch algorithms. Each engine carries its
// own measured defaults (core/tuning-inl.h, from kwker/bench/thresholds.py); a knob set through
// kwker_set_tuning overrides them for every engine until it is set back to -1. Engine-neutral:
// the overrides are plain integers read with a relaxed atomic load, so no template crosses
// the engine boundary.
#ifndef KWKER_RUNTIME_TUNING_H_
#define KWKER_RUNTIME_TUNING_H_
#include <cstdint>

namespace kwker {
namespace tune {

enum Knob : int {
  kSortNetwork32 = 0,  // sorts of <= this many 8/16/32-bit keys run in registers
  kSortNetwork64,      // ... 64-bit keys
  kSortPairMin32,      // from this many 32-bit keys on, up to kSortPairMax32, two networks and
  kSortPairMax32,      //   a merge layer (core/coded-inl.h) instead of the quicksort
  kSortPairMin64,      // ... 64-bit keys
  kSortPairMax64,
  kArgsortNetwork16,   // stable argsorts of <= this many 8/16-bit keys ((key << 16 | index))
  kArgsortNetwork32,   // ... 32-bit keys ((key << 32 | index))
  kArgsortNetwork64,   // ... 64-bit keys (packed, see core/pack-inl.h)
  kPresortedMin,       // presorted detection runs from this many keys on
  kCount16SortMin,     // 16-bit counting sort from this many keys on (radix)
  kCount16ArgsortMin,  // 16-bit stable counting argsort from this many keys on (radix)
  kRadix64MaxBits,     // 64-bit argsort: LSD radix when the key range spans <= this many bits
  kSortTinyMax,        // sorts of <= this many keys (at most 8) use scalar optimal networks
  kArgsortTinyMax,     // ... stable argsorts
  kKnobCount
};

extern const char *const kKnobNames[kKnobCount];
extern int64_t g_override[kKnobCount];  // -1: the engine's default

inline int64_t override_of(Knob k) { return __atomic_load_n(&g_override[k], __ATOMIC_RELAXED); }
int knob_by_name(const char *name);  // -1 when unknown
void set_override(int knob, int64_t value);

}  // namespace tune
}  // namespace kwker
#endif
