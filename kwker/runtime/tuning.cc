#include "runtime/tuning.h"

#include <cstring>

namespace kwker {
namespace tune {

const char *const kKnobNames[kKnobCount] = {
    "sort_network_max_32",   "sort_network_max_64",     "sort_pair_min_32",
    "sort_pair_max_32",      "sort_pair_min_64",        "sort_pair_max_64",
    "argsort_network_max_16",
    "argsort_network_max_32", "argsort_network_max_64", "presorted_min",
    "count16_sort_min",      "count16_argsort_min",     "radix64_argsort_max_bits",
    "sort_tiny_max",         "argsort_tiny_max"};

int64_t g_override[kKnobCount] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

int knob_by_name(const char *name) {
  if (!name) return -1;
  for (int k = 0; k < kKnobCount; ++k)
    if (std::strcmp(name, kKnobNames[k]) == 0) return k;
  return -1;
}

void set_override(int knob, int64_t value) {
  __atomic_store_n(&g_override[knob], value < 0 ? -1 : value, __ATOMIC_RELAXED);
}

}  // namespace tune
}  // namespace kwker
