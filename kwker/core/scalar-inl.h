// Scalar comparison sorts used where no SIMD kernel applies: (key, index) pairs, in-place
// fallbacks when scratch memory is forbidden, and selection for top-k.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/engine_ns-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

template <class T> inline void swap_vals(T &a, T &b) {
  T t = a;
  a = b;
  b = t;
}

template <class T, class Less> void insertion_sort(T *a, size_t n, Less less) {
  for (size_t i = 1; i < n; ++i) {
    T v = a[i];
    size_t j = i;
    while (j > 0 && less(v, a[j - 1])) {
      a[j] = a[j - 1];
      --j;
    }
    a[j] = v;
  }
}

template <class T, class Less> void sift_down(T *a, size_t start, size_t n, Less less) {
  size_t root = start;
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && less(a[child], a[child + 1])) ++child;
    if (!less(a[root], a[child])) return;
    swap_vals(a[root], a[child]);
    root = child;
  }
}

template <class T, class Less> void heap_sort(T *a, size_t n, Less less) {
  if (n < 2) return;
  for (size_t i = n / 2; i-- > 0;) sift_down(a, i, n, less);
  for (size_t end = n - 1; end > 0; --end) {
    swap_vals(a[0], a[end]);
    sift_down(a, 0, end, less);
  }
}

template <class T, class Less> inline size_t median3(T *a, size_t i, size_t j, size_t k, Less less) {
  if (less(a[i], a[j])) {
    if (less(a[j], a[k])) return j;
    return less(a[i], a[k]) ? k : i;
  }
  if (less(a[i], a[k])) return i;
  return less(a[j], a[k]) ? k : j;
}

// Hoare partition around a[0] as pivot; returns the pivot's final position.
template <class T, class Less> size_t partition_pivot(T *a, size_t n, Less less) {
  size_t m = median3(a, 0, n / 2, n - 1, less);
  swap_vals(a[0], a[m]);
  T pivot = a[0];
  size_t i = 0, j = n;
  for (;;) {
    do ++i; while (i < n && less(a[i], pivot));
    do --j; while (less(pivot, a[j]));
    if (i >= j) break;
    swap_vals(a[i], a[j]);
  }
  swap_vals(a[0], a[j]);
  return j;
}

// Introsort: quicksort with a depth bound (heapsort beyond it) so adversarial inputs stay
// O(n log n).
template <class T, class Less> void intro_sort(T *a, size_t n, Less less, int depth = -1) {
  if (depth < 0) {
    depth = 0;
    for (size_t m = n; m > 1; m >>= 1) depth += 2;
  }
  while (n > 24) {
    if (depth-- == 0) {
      heap_sort(a, n, less);
      return;
    }
    size_t p = partition_pivot(a, n, less);
    // Recurse into the smaller side to bound stack depth.
    if (p < n - p - 1) {
      intro_sort(a, p, less, depth);
      a += p + 1;
      n -= p + 1;
    } else {
      intro_sort(a + p + 1, n - p - 1, less, depth);
      n = p;
    }
  }
  insertion_sort(a, n, less);
}

// Moves the k smallest elements (by less) to a[0..k), in any order.
template <class T, class Less> void select_k(T *a, size_t n, size_t k, Less less) {
  if (k == 0 || k >= n) return;
  int depth = 0;
  for (size_t m = n; m > 1; m >>= 1) depth += 2;
  size_t lo = 0, hi = n;  // the k-th position lies in [lo, hi)
  while (hi - lo > 24) {
    if (depth-- == 0) {
      heap_sort(a + lo, hi - lo, less);
      return;
    }
    size_t p = lo + partition_pivot(a + lo, hi - lo, less);
    if (p == k || p + 1 == k) return;
    if (p < k) lo = p + 1; else hi = p;
  }
  insertion_sort(a + lo, hi - lo, less);
}

struct LessNatural {
  template <class T> bool operator()(const T &x, const T &y) const { return x < y; }
};

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
