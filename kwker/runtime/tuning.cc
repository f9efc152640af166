#include "runtime/tuning.h"

#include <cstring>

#include "dispatch/cpu.h"

namespace kwker {
namespace tune {

const char *const kKnobNames[kKnobCount] = {
    "sort_network_max_16",    "sort_network_max_32",    "sort_network_max_64",
    "sort_pair_min_16",       "sort_pair_max_16",       "sort_pair_min_32",
    "sort_pair_max_32",       "sort_pair_min_64",       "sort_pair_max_64",
    "argsort_network_max_16", "argsort_network_max_32", "argsort_network_max_64",
    "sort_tiny_max",          "argsort_tiny_max",       "presorted_min",
    "count16_sort_min",       "count16_argsort_min",    "radix64_argsort_max_bits",
    "sort_float_min_32",      "sort_float_min_64",      "sort_float_max_32",
    "sort_float_max_64",      "sort_float_pair_min_32", "sort_float_pair_min_64",
    "sort16_compress_min",    "radix64_argsort_min",    "radix32_pairs_min",
    "sort_float_rows_max"};

// From the one CPUID reader the dispatch and the doctor use (a function-local static, so safe
// to call during static initialisation).
const bool g_intel_cpu = cpu_info().vendor == "GenuineIntel";
const bool g_amd_avx2_cpu = cpu_info().vendor == "AuthenticAMD" && !cpu_info().avx512f;

int64_t g_override[kKnobCount] = {};  // value + 1, so zero (static init) means "none"

int knob_by_name(const char *name) {
  if (!name) return -1;
  for (int k = 0; k < kKnobCount; ++k)
    if (std::strcmp(name, kKnobNames[k]) == 0) return k;
  return -1;
}

void set_override(int knob, int64_t value) {
  __atomic_store_n(&g_override[knob], value < 0 ? 0 : value + 1, __ATOMIC_RELAXED);
}

}  // namespace tune
}  // namespace kwker
