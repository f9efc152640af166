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
  // Sorts of <= this many keys run in registers (8/16-bit dtypes on the 16-bit network).
  kSortNetwork16 = 0,
  kSortNetwork32,
  kSortNetwork64,
  // Above one network, from kSortPairMin to kSortPairMax keys: two networks and a merge layer
  // (core/coded-inl.h) instead of the quicksort.
  kSortPairMin16,
  kSortPairMax16,
  kSortPairMin32,
  kSortPairMax32,
  kSortPairMin64,
  kSortPairMax64,
  // Stable argsorts of <= this many keys in registers: 8/16-bit keys as (key << 16 | index),
  // 32-bit as (key << 32 | index), 64-bit packed (core/pack-inl.h).
  kArgsortNetwork16,
  kArgsortNetwork32,
  kArgsortNetwork64,
  kSortTinyMax,        // sorts of <= this many keys (at most 8) use scalar optimal networks
  kArgsortTinyMax,     // ... stable argsorts
  kPresortedMin,       // presorted detection runs from this many keys on
  kCount16SortMin,     // 16-bit counting sort from this many keys on (radix)
  kCount16ArgsortMin,  // 16-bit stable radix argsort and pair sort from this many keys on
  kRadix64MaxBits,     // 64-bit argsort: LSD radix when the key range spans <= this many bits
  // Register sorts of float32 / float64 values (no NaN or -0.0 among them) compare them as
  // floats from min to max keys; min 0: never (the only setting on engines without float
  // comparisons, core/coded-inl.h). Their defaults differ between Intel and AMD cores.
  kSortFloatMin32,
  kSortFloatMin64,
  kSortFloatMax32,
  kSortFloatMax64,
  // Float values inside that window take the two-network merge (kSortPairMax still bounds it)
  // from this many keys: compared as floats it pays from fewer keys than the integer networks
  // do (AVX2 float64: from 65 keys, int64 from 112). 0: the same as kSortPairMin.
  kSortFloatPairMin32,
  kSortFloatPairMin64,
  // 16-bit quicksorts on compressed 16-bit lanes from this many keys on, where an engine has
  // them (avx512 on CPUs with AVX512-VBMI2, core/sort16_compress.h); 0: never (the keys are
  // widened to 32 bits or sorted on scalar lanes instead).
  kSort16CompressMin,
  // 64-bit stable argsorts take that LSD radix from this many keys on (below, clearing and
  // scanning its counters costs more than the packed quicksort of the keys).
  kRadix64ArgsortMin,
  // Stable argsorts and pair sorts of 32-bit integer keys take the 8-bit LSD radix
  // (core/radix-inl.h) from this many keys (up to 2^21); 0: never.
  kRadix32PairsMin,
  // Rows sorted in registers (rows of 2-16 keys, core/coded-inl.h) compare float32 / float64
  // values as floats up to this many keys a row (its padded length) besides the float window
  // above, which stands for 1-D sorts (and for longer rows, sorted one at a time); 0: the window
  // alone decides.
  kSortFloatRowsMax,
  kKnobCount
};

extern const char *const kKnobNames[kKnobCount];
extern int64_t g_override[kKnobCount];  // the override + 1; 0: the engine's default

// The override of knob k, or -1 when the engine's default applies.
inline int64_t override_of(Knob k) {
  return __atomic_load_n(&g_override[k], __ATOMIC_RELAXED) - 1;
}
int knob_by_name(const char *name);  // -1 when unknown
// Whether this is an Intel CPU: some knobs have a second set of defaults for Intel cores
// (core/tuning-inl.h). Set once, before main, from CPUID.
extern const bool g_intel_cpu;
// AMD cores without AVX-512 (Zen 3 and before): the CPU backend's decode step streams float32
// and 16-bit weight panels with other prefetch distances there (core/linear-inl.h).
extern const bool g_amd_avx2_cpu;
void set_override(int knob, int64_t value);

}  // namespace tune
}  // namespace kwker
#endif
