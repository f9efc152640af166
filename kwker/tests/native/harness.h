// Shared by the native test files: the check counter, guarded buffers with poisoned red zones,
// case labels and the list of engines this CPU runs.
#ifndef KWKER_TESTS_NATIVE_HARNESS_H_
#define KWKER_TESTS_NATIVE_HARNESS_H_
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dispatch/reference.h"
#include "kwker/kwker.h"

namespace harness {

inline int g_passed = 0, g_failed = 0;
inline std::string g_where;

inline void check(bool ok, const std::string &what) {
  if (ok) {
    ++g_passed;
    return;
  }
  ++g_failed;
  if (g_failed <= 30) std::fprintf(stderr, "FAIL [%s] %s\n", g_where.c_str(), what.c_str());
}

constexpr size_t kRed = 64;
constexpr uint8_t kPoison = 0xA5;

// A buffer with poisoned red zones on both sides; intact() proves nothing wrote past the ends.
struct Guarded {
  std::vector<uint8_t> raw;
  size_t bytes;
  explicit Guarded(size_t b) : raw(b + 2 * kRed, kPoison), bytes(b) {}
  uint8_t *data() { return raw.data() + kRed; }
  bool intact() const {
    for (size_t i = 0; i < kRed; ++i)
      if (raw[i] != kPoison || raw[kRed + bytes + i] != kPoison) return false;
    return true;
  }
};

inline std::string label(int dtype, int dist, int64_t n, unsigned flags) {
  std::string s = std::string(kwker::ref::dtype_name(dtype)) + " " + kwker::ref::dist_name(dist) +
                  " n=" + std::to_string(n);
  if (flags & KWKER_DESCENDING) s += " desc";
  if (flags & KWKER_NANS_FIRST) s += " nans_first";
  return s;
}

inline std::vector<const char *> g_engines;  // the engines this CPU runs

}  // namespace harness

void run_short_tests();  // short_tests.cc
void run_pairs_tests();  // pairs_tests.cc
void run_linear_tests(); // linear_tests.cc

#endif
