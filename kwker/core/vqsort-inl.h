// vqsort-inl.h: in-place, unstable, ascending vectorised quicksort of signed integer
// keys. One algorithm, compiled once per engine; the ISA-specific parts are the
// Ops<T> layer (simd-inl.h) and the sorting networks built on it (network-inl.h).
//
//   kwker::KWKER_ENGINE_NS::sort_keys(int16_t*, size_t)   (scalar lanes, or 32 compressed
//                                                         lanes: core/sort16_compress.h)
//   kwker::KWKER_ENGINE_NS::sort_keys(int32_t*, size_t)
//   kwker::KWKER_ENGINE_NS::sort_keys(int64_t*, size_t)
//
// Algorithm (introsort shape, no heap allocation, never touches memory outside a[0..n)):
//   * n <= W * 16 keys: a sorting network on registers (network-inl.h).
//   * otherwise pick a pivot (ninther of 9 evenly spaced keys for ranges < 8192, else
//     the median of 64 evenly spaced keys sorted by the same networks) and partition
//     with the vector partition below;
//   * recurse on the smaller side, loop on the larger one;
//   * heapsort a range once its depth budget (about 2 log2 n) is spent.
// Duplicates: every range carries bounds lo <= a[i] <= hi learned from the pivots
// above it. lo == hi means the range is constant and done. If the pivot equals hi,
// the range is split into "< pivot" and "== pivot" instead (the latter is done), so
// inputs with few distinct values cost a few passes per value, not a degenerate
// recursion.
//
// This header is compiled with different -m flags into one shared library: every
// definition stays inside kwker::KWKER_ENGINE_NS, and no std algorithm is
// instantiated on primitive types (see simd-inl.h).
#ifndef KWKER_CORE_VQSORT_INL_H_
#define KWKER_CORE_VQSORT_INL_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "network-inl.h"
#include "simd-inl.h"
#include "tuning-inl.h"
#if defined(KWKER_SORT16_COMPRESS)
#include "sort16_compress.h"
#endif

namespace kwker {
namespace KWKER_ENGINE_NS {
namespace vq {

// Ranges at least this long choose the pivot from a sorted 64-key sample.
constexpr size_t kBigPivotThreshold = 8192;

// ---------------------------------------------------------------------------
// Heapsort: the O(n log n) guarantee once a range has used its depth budget.
template <class T>
inline void sift_down(T* a, size_t root, size_t n) {
  const T x = a[root];
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n) break;
    if (child + 1 < n && a[child] < a[child + 1]) ++child;
    if (!(x < a[child])) break;
    a[root] = a[child];
    root = child;
  }
  a[root] = x;
}

template <class T>
inline void heap_sort(T* a, size_t n) {
  if (n < 2) return;
  for (size_t i = n / 2; i-- > 0;) sift_down(a, i, n);
  for (size_t end = n - 1; end > 0; --end) {
    const T top = a[0];
    a[0] = a[end];
    a[end] = top;
    sift_down(a, 0, end);
  }
}

// ---------------------------------------------------------------------------
// Partition a[0..n) so that a[0..m) <= pivot < a[m..n); returns m.
//
// Scheme: n % W leading keys are set aside (fixed up at the end with scalar swaps),
// the rest is a whole number of vectors. U vectors from each end are loaded into
// registers first, which opens a gap of U*W free slots at each end. Then vectors are
// read from whichever end has the smaller gap and written back with partition_store
// (lanes <= pivot at the left write pointer, lanes > pivot at the right one). Each
// side's gap is then always >= W when a store happens, so the full-width stores never
// clobber unread keys. Finally the saved vectors are written; for the very last one
// the remaining space is exactly W and both store footprints coincide.
//
// With a Guard (the first partition of sort_unless_above), every vector is tested before any
// of its keys is stored. A hit stops the pass: the saved vectors go back into the free slots
// (the gaps hold exactly 2U vectors' worth) and the result is kStopped. Only keys that passed
// the test have moved then, so every key that failed it is still at its input position.
constexpr size_t kStopped = ~size_t(0);

struct NoGuard {
  static constexpr bool kOn = false;
};

template <class S> struct AboveGuard {  // stops at keys k with (k & mask) > lim
  static constexpr bool kOn = true;
  using T = typename S::Key;
  using V = typename S::V;
  T mask, lim;
  V vmask, vlim;
  AboveGuard(T m, T l) : mask(m), lim(l), vmask(S::set1(m)), vlim(S::set1(l)) {}
  KWKER_VQ_INLINE bool hit(const V* v, size_t count) const {
    unsigned bits = 0;
    for (size_t i = 0; i < count; ++i) bits |= S::above(v[i], vmask, vlim);
    return bits != 0;
  }
  KWKER_VQ_INLINE bool hit_key(T k) const { return T(k & mask) > lim; }
  bool hit_keys(const T* k, size_t count) const {  // a branch-free scan, as the loop vectorises
    bool any = false;
    for (size_t i = 0; i < count; ++i) any |= hit_key(k[i]);
    return any;
  }
};

// The end of a partition whose rem first keys were set aside while the vectors behind them
// were split at m (keys <= pivot in [rem, m)): walks the set-aside keys from the back, swapping
// each key > pivot with the last key of the "<=" side (possibly itself). Returns the split.
template <class T> inline size_t place_set_aside(T* a, size_t rem, size_t m, T pivot) {
  for (size_t i = rem; i-- > 0;) {
    if (a[i] > pivot) {
      --m;
      const T t = a[i];
      a[i] = a[m];
      a[m] = t;
    }
  }
  return m;
}

// Puts the saved vectors into the gaps [wl, read_l) and [read_r, wr) of a stopped partition.
template <class S>
inline void refill_gaps(const typename S::V* saved_l, const typename S::V* saved_r,
                        typename S::Key* wl, typename S::Key* read_l, typename S::Key* read_r) {
  using T = typename S::Key;
  constexpr size_t W = S::W;
  constexpr size_t U = S::kUnroll;
  T buf[2 * U * W];
  for (size_t u = 0; u < U; ++u) {
    S::store(buf + u * W, saved_l[u]);
    S::store(buf + (U + u) * W, saved_r[u]);
  }
  const size_t gl = size_t(read_l - wl);
  memcpy(wl, buf, gl * sizeof(T));
  memcpy(read_r, buf + gl, (2 * U * W - gl) * sizeof(T));
}

// How far ahead of its reads each end of the partition prefetches (2-8 KiB measured alike).
constexpr uintptr_t kPrefetchBytes = 4096;

template <class S, class Guard = NoGuard>
inline size_t partition(typename S::Key* a, size_t n, typename S::Key pivot,
                        const Guard& guard = Guard()) {
  using T = typename S::Key;
  using V = typename S::V;
  constexpr size_t W = S::W;
  constexpr size_t U = S::kUnroll;
  const V vp = S::set1(pivot);

  const size_t rem = n % W;
  T* const base = a + rem;
  const size_t len = n - rem;  // >= 2 * U * W, guaranteed by the leaf size
  if constexpr (Guard::kOn)
    if (guard.hit_keys(a, rem)) return kStopped;

  V saved_l[U], saved_r[U];
#pragma GCC unroll 16
  for (size_t u = 0; u < U; ++u) {
    saved_l[u] = S::load(base + u * W);
    saved_r[u] = S::load(base + len - (u + 1) * W);
  }
  if constexpr (Guard::kOn)
    if (guard.hit(saved_l, U) || guard.hit(saved_r, U)) return kStopped;  // nothing moved yet
  T* read_l = base + U * W;
  T* read_r = base + len - U * W;
  T* wl = base;
  T* wr = base + len;

  // Main loop: U vectors per step from the end with the smaller gap.
  while (size_t(read_r - read_l) >= U * W) {
    V v[U];
    const T* src;
    const bool left = read_l - wl <= wr - read_r;
    if (left) {
      src = read_l;
      read_l += U * W;
    } else {
      read_r -= U * W;
      src = read_r;
    }
#pragma GCC unroll 16
    for (size_t u = 0; u < U; ++u) v[u] = S::load(src + u * W);
    // The keys one step reads kPrefetchBytes further along its end, requested now: the two
    // streams (one rising, one falling, taken in irregular turns) are beyond what the hardware
    // prefetchers follow (1 thread, Intel Xeon, AVX-512: int32 at 1e7 3.65-3.86 -> 2.97-3.14
    // ns/el, int64 7.28-7.68 -> 5.79-6.16; 1e5-1e6, mostly in cache, 1.00-1.05x).
    {
      const uintptr_t at = reinterpret_cast<uintptr_t>(src);
      const uintptr_t pf = left ? at + kPrefetchBytes : at - kPrefetchBytes;
      for (size_t b = 0; b < U * W * sizeof(T); b += 64)
        __builtin_prefetch(reinterpret_cast<const void*>(pf + b), 0, 3);
    }
    if constexpr (Guard::kOn) {
      if (guard.hit(v, U)) {  // unread again: these keys stay where they are
        if (left) read_l -= U * W;
        else read_r += U * W;
        refill_gaps<S>(saved_l, saved_r, wl, read_l, read_r);
        return kStopped;
      }
    }
#pragma GCC unroll 16
    for (size_t u = 0; u < U; ++u) S::partition_store(v[u], vp, wl, wr);
  }
  // Fewer than U unread vectors left: one at a time.
  while (read_r != read_l) {
    V v;
    const bool left = read_l - wl <= wr - read_r;
    if (left) {
      v = S::load(read_l);
      read_l += W;
    } else {
      read_r -= W;
      v = S::load(read_r);
    }
    if constexpr (Guard::kOn) {
      if (guard.hit(&v, 1)) {
        if (left) read_l -= W;
        else read_r += W;
        refill_gaps<S>(saved_l, saved_r, wl, read_l, read_r);
        return kStopped;
      }
    }
    S::partition_store(v, vp, wl, wr);
  }
#pragma GCC unroll 16
  for (size_t u = 0; u < U; ++u) {
    S::partition_store(saved_l[u], vp, wl, wr);
    S::partition_store(saved_r[u], vp, wl, wr);
  }

  return place_set_aside(a, rem, size_t(wl - a), pivot);
}

// The same partition from src into dst (no overlap, n >= W): the copy and the first partition
// pass in one, reading src once in one rising stream instead of both ends of one buffer. Keys
// <= pivot go to dst from the front, the others from the back; every vector is stored whole at
// both ends (S::partition_store), which never writes outside the unwritten middle because that
// is always a whole number of vectors. kStopped when a key hits guard (src untouched; dst
// holds garbage).
template <class S, class Guard = NoGuard>
inline size_t partition_copy(const typename S::Key* src, typename S::Key* dst, size_t n,
                             typename S::Key pivot, const Guard& guard = Guard()) {
  using T = typename S::Key;
  using V = typename S::V;
  constexpr size_t W = S::W;
  constexpr size_t U = S::kUnroll;
  const V vp = S::set1(pivot);
  const size_t rem = n % W;
  if constexpr (Guard::kOn)
    if (guard.hit_keys(src, rem)) return kStopped;
  memcpy(dst, src, rem * sizeof(T));  // set aside at the front, as partition() does
  const T* rd = src + rem;
  const T* const end = src + n;
  T* wl = dst + rem;
  T* wr = dst + n;
  while (size_t(end - rd) >= U * W) {
    V v[U];
#pragma GCC unroll 16
    for (size_t u = 0; u < U; ++u) v[u] = S::load(rd + u * W);
    for (size_t b = 0; b < U * W * sizeof(T); b += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(rd) + kPrefetchBytes + b, 0, 3);
    if constexpr (Guard::kOn)
      if (guard.hit(v, U)) return kStopped;
    rd += U * W;
#pragma GCC unroll 16
    for (size_t u = 0; u < U; ++u) S::partition_store(v[u], vp, wl, wr);
  }
  while (rd != end) {
    const V v = S::load(rd);
    if constexpr (Guard::kOn)
      if (guard.hit(&v, 1)) return kStopped;
    rd += W;
    S::partition_store(v, vp, wl, wr);
  }
  return place_set_aside(dst, rem, size_t(wl - dst), pivot);
}

// ---------------------------------------------------------------------------
// Pivot. Small ranges are partitioned often, so their pivot must be cheap: the
// "ninther" (median of three medians of three, from 9 evenly spaced keys) is a few
// scalar min/max. Big ranges take the median of 64 evenly spaced keys sorted by a
// network: a better split is worth the ~100 extra cycles there.
template <class T>
KWKER_VQ_INLINE T median3(T a, T b, T c) {
  const T lo = a < b ? a : b;
  const T hi = a < b ? b : a;
  const T m = hi < c ? hi : c;
  return lo < m ? m : lo;
}

template <class T>
KWKER_VQ_INLINE T ninther(const T* a, size_t n) {
  const size_t s = n / 9;
  const T* p = a + s / 2;
  return median3(median3(p[0], p[s], p[2 * s]), median3(p[3 * s], p[4 * s], p[5 * s]),
                 median3(p[6 * s], p[7 * s], p[8 * s]));
}

template <class S>
inline typename S::Key choose_pivot(const typename S::Key* a, size_t n) {
  using T = typename S::Key;
  constexpr size_t kSample = 64;
  if constexpr (S::W * S::kMaxVecs < kSample) {
    return ninther(a, n);
  } else {
    if (n < kBigPivotThreshold) return ninther(a, n);
    T sample[kSample];
    const size_t step = n / kSample;
    const T* p = a + step / 2;
    for (size_t i = 0; i < kSample; ++i) sample[i] = p[i * step];
    small_sort<S>(sample, kSample);
    return sample[kSample / 2];
  }
}

inline int floor_log2(size_t n) {
  int r = 0;
  while (n > 1) {
    n >>= 1;
    ++r;
  }
  return r;
}

// Whether one to two networks' worth of keys (n) is sorted by the two-network merge instead of
// one more partition and two networks: the measured window of the sort_pair_min / max knobs for
// this key width. Asked by the quicksort for its ranges and by the short paths
// (use_short_sort, driver-inl.h) for whole inputs: the merge replaces that partition in both.
template <class S> KWKER_VQ_INLINE bool pair_leaf(size_t n) {
  constexpr int w = sizeof(typename S::Key) == 2 ? 0 : sizeof(typename S::Key) == 4 ? 1 : 2;
  return n >= size_t(tuned(tune::Knob(tune::kSortPairMin16 + 2 * w))) &&
         n <= size_t(tuned(tune::Knob(tune::kSortPairMax16 + 2 * w)));
}

// Ranges reported to fin(ptr, len) are final: never read or moved again. The caller's
// per-element output transform (key decoding, index unpacking) runs there, on data that is
// still in cache, instead of in a separate pass over the whole array.
struct NoFinalize {
  template <class T> KWKER_VQ_INLINE void operator()(T*, size_t) const {}
};

// How a quicksort's leaves (leaf_sort) compare its keys. On AVX2 an int64 compare-exchange is a
// vpcmpgtq and two blends, a float64 one a vminpd and a vmaxpd, so 64-bit leaves there compare
// doubles whose float order is the keys' order wherever one can be had:
enum KeyKind {
  kIntKeys = 0,    // integer networks only
  // The bit patterns of NaN-free doubles (the in-place float sort): as they are where >= 0,
  // with the sign bit cleared where < 0 (-0.0 down to -inf: a bigger magnitude is a bigger
  // integer there).
  kFloatBits = 1,
  // Any int64 keys: w >= 0 read as a double is monotone up to +inf's bits (0x7FF0...), and
  // w < 0 with every bit but the sign flipped is monotone down to ~that (a negative double whose
  // magnitude shrinks as w grows; FloatCodec's keys come back as their own values). Denormals
  // included, so MXCSR's DAZ bit must be clear.
  kInt64AsDouble = 2,
};

#if defined(__AVX2__) && !defined(__AVX512F__)
// Negative 64-bit keys made doubles in registers by an XOR with Mask (and back on store), so
// that the doubles' order is the keys' order (vq::KeyKind): the sign bit for the bit patterns of
// negative doubles, every bit but the sign for int64 keys below 0.
template <uint64_t Mask> struct XorF64Ops : FOps<double> {
  static KWKER_VQ_INLINE V flip(V v) {
    return _mm256_xor_pd(v, _mm256_castsi256_pd(_mm256_set1_epi64x(int64_t(Mask))));
  }
  static KWKER_VQ_INLINE V load(const double* p) { return flip(FOps<double>::load(p)); }
  static KWKER_VQ_INLINE void store(double* p, V v) { FOps<double>::store(p, flip(v)); }
  static KWKER_VQ_INLINE V load_partial(const double* p, size_t n) {
    const __m256i m = Ops<int64_t>::first_lanes(n);
    return _mm256_blendv_pd(set1(Limits<double>::kMax), flip(_mm256_maskload_pd(p, m)),
                            _mm256_castsi256_pd(m));
  }
  static KWKER_VQ_INLINE void store_partial(double* p, V v, size_t n) {
    FOps<double>::store_partial(p, flip(v), n);
  }
};

template <class S> KWKER_VQ_INLINE void leaf_networks(double* d, size_t n, bool pair) {
  if (pair) pair_sort<S>(d, n);
  else small_sort<S>(d, n);
}
#endif

// One leaf of the quicksort, keys in [lo, hi]: n <= kLeaf keys (small_sort), or up to twice that
// by the two-network merge (pair). A leaf compares doubles only where its bounds put every key
// on one side of 0 and, for kInt64AsDouble, within the monotone range; else (a leaf spanning 0,
// or one that may hold a key beyond it) the integer networks. The result is the same bits
// either way.
template <class S, int Kind>
KWKER_VQ_INLINE void leaf_sort(typename S::Key* a, size_t n, typename S::Key lo,
                               typename S::Key hi, bool pair) {
#if defined(__AVX2__) && !defined(__AVX512F__)
  if constexpr (Kind != kIntKeys && sizeof(typename S::Key) == 8) {
    constexpr int64_t kInf = 0x7FF0000000000000;  // +inf's bits
    double* d = reinterpret_cast<double*>(a);
    if (lo >= 0 && (Kind == kFloatBits || hi <= kInf)) {
      leaf_networks<FOps<double>>(d, n, pair);
      return;
    }
    if (hi < 0 && Kind == kFloatBits) {
      leaf_networks<XorF64Ops<0x8000000000000000u>>(d, n, pair);
      return;
    }
    if (hi < 0 && lo >= ~kInf) {
      leaf_networks<XorF64Ops<0x7FFFFFFFFFFFFFFFu>>(d, n, pair);
      return;
    }
  }
#endif
  (void)lo;
  (void)hi;
  if constexpr (S::W > 1) {
    if (pair) {
      pair_sort<S>(a, n);
      return;
    }
  }
  small_sort<S>(a, n);
}

template <class S, class Fin, int Kind = kIntKeys>
inline void quicksort(typename S::Key* a, size_t n, typename S::Key lo, typename S::Key hi,
                      int depth, const Fin& fin) {
  using T = typename S::Key;
  constexpr size_t kLeaf = S::W * S::kMaxVecs;
  static_assert(kLeaf >= 2 * S::kUnroll * S::W + S::W, "partition needs 2U+1 vectors");
  for (;;) {
    if (n <= kLeaf) {
      leaf_sort<S, Kind>(a, n, lo, hi, false);
      fin(a, n);
      return;
    }
    if constexpr (S::W > 1) {
      if (n <= 2 * kLeaf && pair_leaf<S>(n)) {
        leaf_sort<S, Kind>(a, n, lo, hi, true);
        fin(a, n);
        return;
      }
    }
    if (lo == hi) {  // every key equals lo
      fin(a, n);
      return;
    }
    if (depth-- <= 0) {
      heap_sort(a, n);
      fin(a, n);
      return;
    }
    const T p = choose_pivot<S>(a, n);
    if (p == hi) {
      // The pivot is the largest possible key (lo < hi, so p - 1 cannot overflow):
      // split off the keys equal to it, which are then done.
      size_t m = partition<S>(a, n, T(p - 1));
      fin(a + m, n - m);
      n = m;
      hi = T(p - 1);
      continue;
    }
    const size_t m = partition<S>(a, n, p);
    if (m == n) {  // nothing above the pivot: it is the maximum; next round splits it off
      hi = p;
      continue;
    }
    // m >= 1 because the pivot itself is <= pivot. Recurse on the smaller side.
    if (m < n - m) {
      quicksort<S, Fin, Kind>(a, m, lo, p, depth, fin);
      a += m;
      n -= m;
      lo = T(p + 1);
    } else {
      quicksort<S, Fin, Kind>(a + m, n - m, T(p + 1), hi, depth, fin);
      n = m;
      hi = p;
    }
  }
}

template <class S, class Fin = NoFinalize, int Kind = kIntKeys>
inline void sort(typename S::Key* a, size_t n, const Fin& fin = Fin()) {
  using T = typename S::Key;
  if (n < 2) {
    fin(a, n);
    return;
  }
  quicksort<S, Fin, Kind>(a, n, Limits<T>::kMin, Limits<T>::kMax, 2 * floor_log2(n) + 4, fin);
}

// After a whole-range first partition of a[0..n) at pivot p (split m): both sides sorted, with
// the bounds that partition proved.
template <class S, class Fin, int Kind>
inline void sort_sides(typename S::Key* a, size_t n, size_t m, typename S::Key p, const Fin& fin) {
  using T = typename S::Key;
  const int depth = 2 * floor_log2(n) + 3;
  if (m > 0) quicksort<S, Fin, Kind>(a, m, Limits<T>::kMin, p, depth, fin);
  if (m < n) quicksort<S, Fin, Kind>(a + m, n - m, T(p + 1), Limits<T>::kMax, depth, fin);
}

// Sorts a[0..n) unless some key k has (k & mask) > lim, and returns whether it did. The test
// rides on the first partition, the one pass that reads every key before moving it: the
// in-place float sort (driver-inl.h) finds NaNs this way instead of in a counting pass of its
// own (float32 [0, 1) at 1e7 on one thread, native benchmark: 4.55 -> 4.13 ns/el; vqsort
// 4.02). When it returns false, only keys without the property have moved, so every key with
// it is still at its input position.
template <class S, int Kind = kIntKeys, class Fin = NoFinalize>
inline bool sort_unless_above(typename S::Key* a, size_t n, typename S::Key mask,
                              typename S::Key lim, const Fin& fin = Fin()) {
  using T = typename S::Key;
  constexpr size_t kLeaf = S::W * S::kMaxVecs;
  const AboveGuard<S> guard(mask, lim);
  if (n <= 2 * kLeaf) {
    if (guard.hit_keys(a, n)) return false;
    sort<S, Fin, Kind>(a, n, fin);
    return true;
  }
  T p = choose_pivot<S>(a, n);
  if (p == Limits<T>::kMax) p = T(p - 1);  // so that p + 1 below cannot overflow
  const size_t m = partition<S>(a, n, p, guard);
  if (m == kStopped) return false;
  sort_sides<S, Fin, Kind>(a, n, m, p, fin);
  return true;
}

// dst = sorted src (no overlap), the first partition being partition_copy, so the copy costs no
// pass of its own. With a guard (AboveGuard): false when some key hits it, with src untouched
// and dst garbage.
template <class S, int Kind = kIntKeys, class Guard = NoGuard, class Fin = NoFinalize>
inline bool sort_copy(const typename S::Key* src, typename S::Key* dst, size_t n,
                      const Guard& guard = Guard(), const Fin& fin = Fin()) {
  using T = typename S::Key;
  constexpr size_t kLeaf = S::W * S::kMaxVecs;
  if (n <= 2 * kLeaf) {
    if constexpr (Guard::kOn)
      if (guard.hit_keys(src, n)) return false;
    memcpy(dst, src, n * sizeof(T));
    sort<S, Fin, Kind>(dst, n, fin);
    return true;
  }
  T p = choose_pivot<S>(src, n);
  if (p == Limits<T>::kMax) p = T(p - 1);  // so that p + 1 below cannot overflow
  const size_t m = partition_copy<S>(src, dst, n, p, guard);
  if (m == kStopped) return false;
  sort_sides<S, Fin, Kind>(dst, n, m, p, fin);
  return true;
}

}  // namespace vq

// Whether this thread's float compares see denormals as they are (MXCSR's DAZ bit clear), on an
// engine whose 64-bit leaves compare doubles (vq::KeyKind): DAZ reads every denormal as zero.
inline bool leaves_compare_doubles() {
#if defined(__AVX2__) && !defined(__AVX512F__)
  return (_mm_getcsr() & 0x40u) == 0;
#else
  return false;
#endif
}

inline void sort_keys(int32_t* a, size_t n) { vq::sort<vq::Ops<int32_t>>(a, n); }

// Whether n 16-bit keys sort on compressed 16-bit lanes (core/sort16_compress.h): the avx512
// engine on a CPU with AVX512-VBMI2, from the sort16_compress_min knob on.
inline bool compress16(size_t n) {
#if defined(KWKER_SORT16_COMPRESS)
  const int64_t m = tuned(tune::kSort16CompressMin);
  return m > 0 && n >= size_t(m) && sort16_compress_runs();
#else
  (void)n;
  return false;
#endif
}

// Otherwise int16 keys use the scalar lanes (no compress for 16-bit lanes below AVX512-VBMI2);
// still the same branchless partition and networks.
inline void sort_keys(int16_t* a, size_t n) {
#if defined(KWKER_SORT16_COMPRESS)
  if (compress16(n)) {
    sort16_compress(a, n);
    return;
  }
#endif
  vq::sort<vq::ScalarOps<int16_t>>(a, n);
}

// The same sorts, calling fin(ptr, len) once on every finished range (see NoFinalize).
template <class Fin> inline void sort_keys(int32_t* a, size_t n, const Fin& fin) {
  vq::sort<vq::Ops<int32_t>>(a, n, fin);
}
template <class Fin> inline void sort_keys(int64_t* a, size_t n, const Fin& fin) {
  if (leaves_compare_doubles()) vq::sort<vq::Ops<int64_t>, Fin, vq::kInt64AsDouble>(a, n, fin);
  else vq::sort<vq::Ops<int64_t>>(a, n, fin);
}
template <class Fin> inline void sort_keys(int16_t* a, size_t n, const Fin& fin) {
#if defined(KWKER_SORT16_COMPRESS)
  if (compress16(n)) {  // compiled elsewhere, so fin runs once, on the whole sorted range
    sort16_compress(a, n);
    fin(a, n);
    return;
  }
#endif
  vq::sort<vq::ScalarOps<int16_t>>(a, n, fin);
}
inline void sort_keys(int64_t* a, size_t n) { sort_keys(a, n, vq::NoFinalize()); }

// Sorted unless some key k has (k & mask) > lim (vq::sort_unless_above).
inline bool sort_keys_unless_above(int32_t* a, size_t n, int32_t mask, int32_t lim) {
  return vq::sort_unless_above<vq::Ops<int32_t>>(a, n, mask, lim);
}
inline bool sort_keys_unless_above(int64_t* a, size_t n, int64_t mask, int64_t lim) {
  if (leaves_compare_doubles())
    return vq::sort_unless_above<vq::Ops<int64_t>, vq::kInt64AsDouble>(a, n, mask, lim);
  return vq::sort_unless_above<vq::Ops<int64_t>>(a, n, mask, lim);
}

// The same for the bit patterns of floats (the in-place float sort, which rules out NaN with
// mask / lim): float64's leaves then compare the values themselves (vq::kFloatBits).
inline bool sort_float_bits_unless_above(int32_t* a, size_t n, int32_t mask, int32_t lim) {
  return sort_keys_unless_above(a, n, mask, lim);
}
inline bool sort_float_bits_unless_above(int64_t* a, size_t n, int64_t mask, int64_t lim) {
  if (leaves_compare_doubles())
    return vq::sort_unless_above<vq::Ops<int64_t>, vq::kFloatBits>(a, n, mask, lim);
  return vq::sort_unless_above<vq::Ops<int64_t>>(a, n, mask, lim);
}
// The same from src into dst (no overlap): the copy rides on the first partition.
inline bool sort_float_bits_copy_unless_above(const int32_t* src, int32_t* dst, size_t n,
                                              int32_t mask, int32_t lim) {
  using S = vq::Ops<int32_t>;
  return vq::sort_copy<S>(src, dst, n, vq::AboveGuard<S>(mask, lim));
}
inline bool sort_float_bits_copy_unless_above(const int64_t* src, int64_t* dst, size_t n,
                                              int64_t mask, int64_t lim) {
  using S = vq::Ops<int64_t>;
  if (leaves_compare_doubles())
    return vq::sort_copy<S, vq::kFloatBits>(src, dst, n, vq::AboveGuard<S>(mask, lim));
  return vq::sort_copy<S>(src, dst, n, vq::AboveGuard<S>(mask, lim));
}

// dst = sorted src (no overlap) for signed integer keys, the copy riding on the first partition.
inline void sort_keys_copy(const int32_t* src, int32_t* dst, size_t n) {
  vq::sort_copy<vq::Ops<int32_t>>(src, dst, n);
}
inline void sort_keys_copy(const int64_t* src, int64_t* dst, size_t n) {
  if (leaves_compare_doubles()) vq::sort_copy<vq::Ops<int64_t>, vq::kInt64AsDouble>(src, dst, n);
  else vq::sort_copy<vq::Ops<int64_t>>(src, dst, n);
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker

#endif  // KWKER_CORE_VQSORT_INL_H_
