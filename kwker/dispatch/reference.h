// The scalar reference every engine is checked against (self-check and native tests): a
// deliberately independent, simple implementation of the documented order, plus the input
// generator for the check battery.
#ifndef KWKER_DISPATCH_REFERENCE_H_
#define KWKER_DISPATCH_REFERENCE_H_
#include <cstdint>
#include <string>
#include <vector>

namespace kwker {
namespace ref {

int dtype_size(int dtype);
const char *dtype_name(int dtype);
bool is_float(int dtype);

enum Dist {
  kUniform, kSorted, kReversed, kFewDistinct, kAllEqual, kNanHeavy, kSpecials, kNumDists
};
const char *dist_name(int dist);

// n elements of dtype, deterministic in (dtype, dist, n, seed).
std::vector<uint8_t> generate(int dtype, int dist, int64_t n, uint64_t seed);

// Stable sort by the documented order: for_sort orders -0.0 before 0.0; argsort ties them.
void sort(int dtype, const void *src, void *dst, int64_t n, unsigned flags);
void argsort(int dtype, const void *src, int64_t n, int64_t *out, unsigned flags);
// Element-wise bit equality, NaN payloads included (a sort is a permutation of its input).
bool values_equal(int dtype, const void *a, const void *b, int64_t n);

}  // namespace ref
}  // namespace kwker
#endif
