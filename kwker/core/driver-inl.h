// The engine entry points: dtype dispatch, then the algorithm choice for each call
// (presorted detection, counting/radix, sample-partition parallel sort, SIMD quicksort).
// Included once by each engines/<name>/engine.cc; everything is per engine.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/engine.h"
#include "core/engine_ns-inl.h"
#include "core/few-inl.h"
#include "core/keys-inl.h"
#include "core/parallel-inl.h"
#include "core/radix-inl.h"
#include "core/scalar-inl.h"
#include "core/short-inl.h"
#include "core/tuning-inl.h"
#include "core/vqsort-inl.h"
#include "kwker/kwker.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

// This engine's tuned knobs (core/tuning-inl.h, measured by kwker/bench/thresholds.py); the
// thread thresholds (want_parallel, pass_parts) are in core/parallel-inl.h.
inline size_t knob(tune::Knob k) { return size_t(tuned(k)); }

// The sample-partition sort: on several threads, or on one when it writes a separate output
// anyway (its split pass then stands in for the copy and the first partition pass).
inline bool want_partition_sort(const CallCtx &ctx, size_t n, bool separate_output) {
  return want_parallel(ctx, n) || (separate_output && n >= kParallelMin);
}

// Two threads for a sort of keys K. 4-byte keys sort in about half the time of 8-byte ones, so
// a second thread's wake-up and split pass pay only from twice as many: on the Xeon VM
// (2026-12-03) in-place float32 at 1e5 took 234 us on two threads against 204 on one, and in
// the native benchmark 0.73-0.96x of one thread at 1e5 (float32, int32 10% duplicates), while
// at 2e5 two threads were 1.17x (int32) and 1.24x (float32) faster. 8-byte keys keep 1e5.
template <class K> bool want_parallel_keys(const CallCtx &ctx, size_t n) {
  return want_parallel(ctx, n) && (sizeof(K) > 4 || n >= 2 * kParallelMin);
}

// Sequential sort of keys: the SIMD quicksort for 16/32/64-bit keys. fin(ptr, len) runs once
// on every finished range, while it is still in cache (decoding, unpacking).
template <class Fin> void seq_sort_keys(int8_t *k, size_t n, const Fin &fin) {
  intro_sort(k, n, LessNatural());
  fin(k, n);
}
template <class K, class Fin> void seq_sort_keys(K *k, size_t n, const Fin &fin) {
  sort_keys(k, n, fin);
}
template <class K> void seq_sort_keys(K *k, size_t n) { seq_sort_keys(k, n, vq::NoFinalize()); }

struct KeySorter {
  template <class K> void operator()(K *k, size_t n) const { seq_sort_keys(k, n); }
};

// Decodes finished keys in place into values.
template <class Codec> struct DecodeInPlace {
  Codec c;
  void operator()(typename Codec::K *p, size_t len) const {
    auto *t = reinterpret_cast<typename Codec::T *>(p);
    for (size_t j = 0; j < len; ++j) t[j] = c.dec(p[j]);
  }
};

// Packed argsort keys (key << B | index) -> the index.
struct UnpackIndex {
  int64_t mask = int64_t(0xFFFFFFFF);
  void operator()(int64_t *p, size_t len) const {
    for (size_t j = 0; j < len; ++j) p[j] &= mask;
  }
};

// Whether n values take the register paths of short-inl.h, which skip all per-call setup: up
// to the network knob (never more than one network call holds), or within the two-network
// merge's window, which float values compared as floats enter from a lower size of their own.
// The knobs are measured per engine (core/tuning-inl.h).
template <class Codec> bool use_short_sort(size_t n) {
  constexpr size_t w = sizeof(typename NetKeyOf<typename Codec::K>::type);
  constexpr int i = w == 2 ? 0 : w == 4 ? 1 : 2;  // knob triples are ordered 16, 32, 64
  constexpr size_t cap = short_network_capacity<Codec>();
  const size_t t = knob(tune::Knob(tune::kSortNetwork16 + i));
  if (n <= (t < cap ? t : cap)) return true;
  if constexpr (coded_ok<Codec>()) {
    if (n <= cap || n > 2 * cap) return false;
    if (floats_as_floats<Codec>(n)) {  // the pair compares floats: its own lower bound
      const size_t f = knob(w == 4 ? tune::kSortFloatPairMin32 : tune::kSortFloatPairMin64);
      if (f != 0) return n >= f && n <= knob(tune::Knob(tune::kSortPairMax16 + 2 * i));
    }
    return vq::pair_leaf<vq::Ops<typename Codec::K>>(n);
  }
  return false;
}

template <class Codec> size_t short_argsort_limit() {
  constexpr size_t w = sizeof(typename Codec::K);
  constexpr size_t cap = short_argsort_capacity<Codec>();
  const size_t t = knob(w <= 2 ? tune::kArgsortNetwork16
                               : w == 4 ? tune::kArgsortNetwork32 : tune::kArgsortNetwork64);
  return t < cap ? t : cap;
}

// Whether the values themselves compare in key order (signed and unsigned integers
// ascending), so that the presorted check reads them without encoding: unsigned keys went
// through a buffer of encoded keys (uint16, 300,000 equal keys: 30 us, int16 13).
template <class Codec> bool values_in_key_order(const Codec &c) { return c.identity(); }
template <class TT, bool kU> bool values_in_key_order(const IntCodec<TT, kU> &c) {
  return c.flip == 0;
}

// Flags of a vectorised check OR-ed together, of the keys' width: 64-bit compares OR-ed into a
// 32-bit integer made GCC narrow every mask with three shuffles (reversed float64 argsort on
// avx2, where there are no mask registers).
template <class K>
using FlagAcc = typename std::conditional<sizeof(K) == 8, uint64_t, unsigned>::type;

// Presorted detection. Returns 1 when the keys are non-decreasing, -1 when non-increasing,
// 0 otherwise. A cheap probe rejects random input within a few elements; the full check runs
// in blocks whose comparisons vectorise (no early exit inside a block), split over the
// threads for large inputs. With copy_to (not src), blocks are copied there as they pass,
// while still in cache: ascending in order, descending reversed into their mirrored place, so
// either way copy_to ends up sorted (on 0 its content is unspecified). With ties (on -1 only),
// whether two neighbours hold equal keys, found by the same pass: a strictly decreasing input
// then needs no tie search after its reversal (argsort_impl).
template <class Codec>
int presorted(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
              typename Codec::T *copy_to = nullptr, bool *ties = nullptr) {
  if (ties) *ties = true;
  if (n < 2) {
    if (n == 1 && copy_to) copy_to[0] = src[0];
    return 1;
  }
  const bool asc = c.enc(src[0]) <= c.enc(src[n - 1]);
  const size_t probe = n < 17 ? n : 17;
  for (size_t i = 1; i < probe; ++i)
    if (asc ? c.enc(src[i - 1]) > c.enc(src[i]) : c.enc(src[i - 1]) < c.enc(src[i])) return 0;
  if (copy_to == src) copy_to = nullptr;
  // Integers whose first and last values are equal are in order only if every value equals
  // the first: one compare with it per value (no unsigned 64-bit compare on AVX2, and one load
  // where the neighbour compare took two), and the output a fill, not a copy (all-equal
  // uint64 at 30,000 keys on avx2: 0.85x NumPy).
  const bool equal_ends = values_in_key_order(c) && src[0] == src[n - 1];
  const auto first = src[0];
  // Split over the threads from the linear passes' threshold, descending input too (its check
  // and reversal were kept on one thread while a woken worker could land on the caller's CPU,
  // which made two threads 1.5x slower; with the workers placed off that CPU, runtime/threads.cc,
  // two threads check and reverse 1e7 keys 1.6-1.9x faster than one: design.md).
  const int T = pass_parts(ctx, n);
  bool ok_part[kMaxBuckets], tie_part[kMaxBuckets];
  const bool count_ties = ties && !asc;
  auto check = [&](int t) {
    // Each block's keys are encoded once into a buffer (the comparisons would otherwise encode
    // every key twice, which made sorted float input 4x slower than sorted integers).
    using K = typename Codec::K;
    using Acc = FlagAcc<K>;
    constexpr size_t kBlock = 2048;
    K keys[kBlock + 1];
    size_t lo = chunk_begin(n - 1, T, t) + 1, hi = chunk_begin(n - 1, T, t + 1) + 1;
    bool ok = true;
    Acc eq = 0;
    if (copy_to && t == 0) copy_to[asc ? 0 : n - 1] = src[0];
    keys[kBlock] = c.enc(src[lo - 1]);  // the key before the first block
    for (size_t b = lo; b < hi && ok; b += kBlock) {
      const size_t e = b + kBlock < hi ? b + kBlock : hi, m = e - b;
      // The violations are OR-ed into an integer: GCC vectorises that reduction, while an
      // `ok &= a <= b` loop over bools stayed scalar (sorted int32 at 1e7: 0.29 -> 0.14 ns/el; all-equal rows of 1,000 int32 2.4x faster).
      Acc bad = 0;
      // The equal-ends fill is written with the check, one pass over the block instead of a
      // second after it (all-equal uint32 / uint64 at 30,000 on avx2: 3.2 / 4.9 -> 2.2 / 3.1
      // us); a block that fails leaves copy_to unspecified, as a 0 allows. The ascending copy
      // fused the same way ran slower from 1e6 keys (uint32 82 -> 101 us), so it stays a
      // memcpy of the block the check left in L1.
      if (equal_ends) {
        const auto *k = src + b;
        if (copy_to) {
          auto *d = copy_to + b;
          for (size_t i = 0; i < m; ++i) {
            bad |= Acc(k[i] != first);
            d[i] = first;
          }
        } else {
          for (size_t i = 0; i < m; ++i) bad |= Acc(k[i] != first);
        }
      } else if (values_in_key_order(c)) {  // the values compare as the keys do: no buffer
        const auto *k = src + b;
        if (asc) {
          for (size_t i = 0; i < m; ++i) bad |= Acc(k[i - 1] > k[i]);
        } else if (count_ties) {
          for (size_t i = 0; i < m; ++i) {
            bad |= Acc(k[i - 1] < k[i]);
            eq |= Acc(k[i - 1] == k[i]);
          }
        } else {
          for (size_t i = 0; i < m; ++i) bad |= Acc(k[i - 1] < k[i]);
        }
      } else {
        keys[0] = keys[kBlock];
        for (size_t i = 0; i < m; ++i) keys[i + 1] = c.enc(src[b + i]);
        if (asc) {
          for (size_t i = 0; i < m; ++i) bad |= Acc(keys[i] > keys[i + 1]);
        } else if (count_ties) {
          for (size_t i = 0; i < m; ++i) {
            bad |= Acc(keys[i] < keys[i + 1]);
            eq |= Acc(keys[i] == keys[i + 1]);
          }
        } else {
          for (size_t i = 0; i < m; ++i) bad |= Acc(keys[i] < keys[i + 1]);
        }
        keys[kBlock] = keys[m];
      }
      ok = bad == 0;
      if (ok && copy_to && !equal_ends) {  // (the equal-ends fill is written)
        if (asc) {
          memcpy(copy_to + b, src + b, m * sizeof(src[0]));
        } else {
          auto *d = copy_to + (n - 1 - b);
          for (size_t i = 0; i < m; ++i) d[-ptrdiff_t(i)] = src[b + i];
        }
      }
    }
    ok_part[t] = ok;
    tie_part[t] = eq != 0;
  };
  parallel_tasks(ctx, T, check);
  bool any_tie = false;
  for (int t = 0; t < T; ++t) {
    if (!ok_part[t]) return 0;
    any_tie |= tie_part[t];
  }
  if (count_ties) *ties = any_tie;
  return asc ? 1 : -1;
}

// dst = src reversed (dst may equal src), split over the threads for large inputs: each thread
// takes a range of pairs, a block from both ends.
template <class T> void reverse_copy(CallCtx &ctx, const T *src, T *dst, size_t n) {
  const int parts = pass_parts(ctx, n);
  const size_t half = n / 2;
  auto task = [&](int t) {
    for (size_t i = chunk_begin(half, parts, t), e = chunk_begin(half, parts, t + 1); i < e; ++i) {
      T a = src[i], b = src[n - 1 - i];
      dst[i] = b;
      dst[n - 1 - i] = a;
    }
  };
  parallel_tasks(ctx, parts, task);
  if (n % 2) dst[half] = src[half];
}

// dst = sorted src through scratch (dst may equal src): the parallel sample sort sorts there
// and decodes each finished range straight to its place in dst. False, with dst untouched,
// when no scratch is available or check (sample_partition_sort's) stopped the split. W: the
// keys as sorted there (16-bit keys widened to 32 bits, whose quicksort has vector lanes).
template <class Codec, class Check = NoCheck, class W = typename Codec::K>
bool sort_via_scratch(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                      typename Codec::T *dst, size_t n, Check check = Check()) {
  using T = typename Codec::T;
  using K = typename Codec::K;
  Scratch<W> tmp(n);
  if (!tmp) return false;
  auto get = [c, src](size_t i) { return W(c.enc(src[i])); };
  const W *base = tmp.ptr;
  auto bucket = [&](W *p, size_t, size_t len) {
    seq_sort_keys(p, len, [&](W *q, size_t m) {
      T *d = dst + (q - base);
      for (size_t j = 0; j < m; ++j) d[j] = c.dec(K(q[j]));
    });
  };
  return sample_partition_sort<W>(ctx, n, get, tmp.ptr, KeySorter(), bucket, W(0), check);
}

// A float copy's split check (sort_copy_impl): stops at a NaN whose bits differ from the
// canonical quiet NaN's (np.nan has them), which the sorted keys cannot give back. A split that
// passes it leaves nothing for restore_nans to do, so its pass over the input is skipped: that
// pass was a tenth of a two-thread float32 sort of 1e7 keys with 10% NaN (avx2, Intel Xeon).
// The block was just read into cache by the split.
template <class Codec> struct OddNanCheck {
  static constexpr bool kOn = true;
  Codec c;
  const typename Codec::T *src;
  template <class K> bool operator()(const K *, size_t m, size_t i0) const {
    unsigned hit = 0;
    for (size_t i = i0; i < i0 + m; ++i)  // vectorised
      hit |= unsigned(c.is_nan(src[i]) & (src[i] != c.quiet_nan));
    return hit != 0;
  }
};

// sort_values with a check (OddNanCheck) on the parallel copy's split: *checked is set when
// that split ran and passed it; any other path leaves it as it was.
template <class Codec, class Check = NoCheck>
void sort_values(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                 typename Codec::T *dst, size_t n, Check check = Check(),
                 bool *checked = nullptr) {
  using T = typename Codec::T;
  using K = typename Codec::K;
  static_assert(sizeof(T) == sizeof(K), "keys are the width of the values");
  if (n == 0) return;
  // Presorted detection first, also for the 8- and 16-bit keys the counting sort takes: its probe
  // rejects a random input within a few keys, and an input already in order (or all equal) is
  // then one copy, where the counting sort's increments would all wait on one counter (int16,
  // 300,000 equal keys: 97 us, NumPy's sort 14 us).
  if (on(ctx, KWKER_ALGO_PRESORTED) && n >= knob(tune::kPresortedMin)) {
    int s = presorted(ctx, c, src, n, dst);
    if (s == 1) return;  // already copied block by block
    if (s == -1) {  // non-increasing keys: the reversal is sorted (equal keys are equal values)
      if (dst == src) reverse_copy(ctx, src, dst, n);  // else copied reversed block by block
      return;
    }
  }
  // Keys of at most 16 distinct values: the dictionary count, for 16-bit keys before the
  // counting sort, whose 65,536 counters cost the same whatever the keys (int16 of 4 values at
  // 3e5: 107 us, NumPy's quicksort 59; now 17), and before the quicksort below the counting
  // sort's size (at 3,000: 1.7 us, NumPy 1.4; now 0.7). A NaN turns 16-bit floats away (they
  // keep their NaN pass); 4- and 8-byte floats arrive here as integer bit patterns, or with
  // their NaNs restored after (sort_copy_impl), so a NaN run may form.
  if constexpr (sizeof(K) >= 2)
    if (n >= kFewDistinctMin &&
        sort_few_distinct(ctx, c, src, dst, n, /*nan_ok=*/sizeof(K) >= 4))
      return;
  if constexpr (sizeof(K) <= 2) {
    if (on(ctx, KWKER_ALGO_RADIX) && (sizeof(K) == 1 || n >= knob(tune::kCount16SortMin)))
      if (counting_sort(ctx, src, dst, n, c)) return;
  }
  // A copy of signed integers on one thread: the copy is the quicksort's first partition
  // (vq::partition_copy), as for floats (sort_float_copy_unless_nan).
  if constexpr (sizeof(K) >= 4) {
    if (dst != src && c.identity() && n >= kParallelMin && !want_parallel_keys<K>(ctx, n)) {
      sort_keys_copy(reinterpret_cast<const K *>(src), reinterpret_cast<K *>(dst), n);
      return;
    }
  }
  // Below want_parallel_keys's size the sort runs on this thread (a copy still takes the
  // partition sort's split pass, on one thread).
  CallCtx kctx = ctx;
  if (!want_parallel_keys<K>(ctx, n)) kctx.threads = 1;
  if (sizeof(K) >= 4 && want_partition_sort(kctx, n, dst != src)) {
    auto get = [c, src](size_t i) { return c.enc(src[i]); };
    bool done = true;
    if (dst != src) {
      auto bucket = [&](K *p, size_t, size_t len) {
        if (c.identity()) seq_sort_keys(p, len);
        else seq_sort_keys(p, len, DecodeInPlace<Codec>{c});
      };
      K *out = reinterpret_cast<K *>(dst);
      bool ran = false;
      if constexpr (Check::kOn) {
        // A stopped split wrote keys only (no bucket finished): the plain split starts over.
        ran = sample_partition_sort<K>(kctx, n, get, out, KeySorter(), bucket, K(0), check);
        if (ran && checked) *checked = true;
      }
      if (!ran) sample_partition_sort<K>(kctx, n, get, out, KeySorter(), bucket);
    } else {
      done = sort_via_scratch(kctx, c, src, dst, n);
    }
    ctx.used_threads = kctx.used_threads;  // kctx began as a copy: its count only grew
    if (done) return;
  }
  if constexpr (sizeof(K) == 2) {
    // From the 32-bit keys' two-thread size on, the widened keys through the parallel sample
    // sort (one thread below it: NumPy's AVX-512 16-bit sort, which compresses 16-bit lanes,
    // ran 1.25-1.4x faster than this path's one thread at 3e3-6e5 keys on a Zen 5).
    if (want_parallel_keys<int32_t>(ctx, n)) {
      if (compress16(n) ? sort_via_scratch<Codec, NoCheck, int16_t>(ctx, c, src, dst, n)
                        : sort_via_scratch<Codec, NoCheck, int32_t>(ctx, c, src, dst, n))
        return;
    }
  }
  if constexpr (sizeof(K) <= 2) {
    // 8- and 16-bit keys widen to 32 bits for the vector quicksort (its narrow lanes are
    // scalar); this runs below the counting-sort threshold or with radix off. 16-bit keys that
    // sort on compressed 16-bit lanes (vqsort-inl.h's compress16) go in place below instead.
    const bool narrow_lanes = sizeof(K) == 2 && compress16(n);
    SmallBuffer<int32_t, 4096> wide(narrow_lanes ? 0 : n);
    if (!narrow_lanes && wide) {
      for (size_t i = 0; i < n; ++i) wide.ptr[i] = c.enc(src[i]);
      const int32_t *base = wide.ptr;
      seq_sort_keys(wide.ptr, n, [&](int32_t *q, size_t m) {
        T *d = dst + (q - base);
        for (size_t j = 0; j < m; ++j) d[j] = c.dec(K(q[j]));
      });
      return;
    }
  }
  K *k = reinterpret_cast<K *>(dst);
  if (c.identity()) {
    if (dst != src) memcpy(dst, src, n * sizeof(T));
    seq_sort_keys(k, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) k[i] = c.enc(src[i]);
  seq_sort_keys(k, n, DecodeInPlace<Codec>{c});
}

// Every NaN maps to one key, so the sorts above write a canonical NaN. gather_nans (short-inl.h)
// and restore_nans put the input's own NaN bit patterns into the NaN block, in input order, so
// a sort is always a permutation of its input (as np.sort is). They cost nothing when the
// input has no NaN.

// Out of place: the sorted dst has a canonical NaN block; copy the real ones from src. When
// every NaN of src already has the canonical bits (np.nan does) there is nothing to copy, so
// the common case costs one vectorised read pass, split over the threads.
template <class Codec>
void restore_nans(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                  typename Codec::T *dst, size_t n) {
  using T = typename Codec::T;
  if (n == 0 || !c.is_nan(c.nans_first() ? dst[0] : dst[n - 1])) return;  // no NaN at all
  const int T_ = pass_parts(ctx, n);
  size_t nans[kMaxBuckets] = {}, odd[kMaxBuckets] = {};
  auto count = [&](int t) {
    size_t lo = chunk_begin(n, T_, t), hi = chunk_begin(n, T_, t + 1), m = 0, o = 0;
    for (size_t i = lo; i < hi; ++i) {
      T x = src[i];
      bool nan = c.is_nan(x);
      m += nan;
      o += nan & (x != c.quiet_nan);
    }
    nans[t] = m;
    odd[t] = o;
  };
  parallel_tasks(ctx, T_, count);
  size_t any_odd = 0, k = 0, start[kMaxBuckets];
  for (int t = 0; t < T_; ++t) {
    any_odd += odd[t];
    k += nans[t];
  }
  if (any_odd == 0) return;
  size_t pos = c.nans_first() ? 0 : n - k;  // the NaN block
  for (int t = 0; t < T_; pos += nans[t], ++t) start[t] = pos;
  // Branch-free (NaNs may be frequent and random): every value is stored at the next NaN slot,
  // which advances only past a NaN; a chunk stops once its last slot is filled.
  auto fill = [&](int t) {
    size_t lo = chunk_begin(n, T_, t), hi = chunk_begin(n, T_, t + 1);
    size_t j = start[t];
    const size_t end = j + nans[t];
    for (size_t i = lo; i < hi && j < end; ++i) {
      T x = src[i];
      dst[j] = x;
      j += c.is_nan(x);
    }
  };
  parallel_tasks(ctx, T_, fill);
}

// Whether one of 64 evenly spaced keys of src is a NaN: a hint that NaNs are common, for the
// canonical-NaN check, which costs a NaN-free input a read of every block in cache.
template <class Codec> bool probe_nans(const Codec c, const typename Codec::T *src, size_t n) {
  constexpr size_t kProbes = 64;
  if (n < kProbes) return false;
  unsigned hit = 0;
  for (size_t j = 0; j < kProbes; ++j) hit |= unsigned(c.is_nan(src[(n / kProbes) * j]));
  return hit != 0;
}

// The NaNs of a[0..n), counted on the call's threads for large inputs: on two threads a serial
// count was a tenth of a float64 sort at 1e7 (the sort itself splits over both).
template <class Codec>
size_t count_nans(CallCtx &ctx, const Codec c, const typename Codec::T *a, size_t n) {
  const int T_ = pass_parts(ctx, n);
  size_t part[kMaxBuckets] = {};
  auto count = [&](int t) {
    size_t m = 0;
    for (size_t i = chunk_begin(n, T_, t), e = chunk_begin(n, T_, t + 1); i < e; ++i)
      m += c.is_nan(a[i]);  // vectorised; the common answer is 0
    part[t] = m;
  };
  if (T_ == 1) count(0);
  else parallel_tasks(ctx, T_, count);
  size_t total = 0;
  for (int t = 0; t < T_; ++t) total += part[t];
  return total;
}

// The same, NaN-free: the negative block reversed gives the float order.
template <class K> void reverse_negatives(CallCtx &ctx, K *k, size_t n, bool desc) {
  const size_t neg = negative_count(k, n, desc);
  if (neg > 1) {
    K *b = desc ? k + (n - neg) : k;
    reverse_copy(ctx, b, b, neg);
  }
}

// In place, NaN-free IEEE floats sort as the signed integers of their bit patterns, except that
// the negative ones come out reversed (a larger magnitude is a larger integer): one integer
// sort, then one reversal of the negative block, with no encoding or decoding pass. -0.0 is the
// smallest integer, so the reversal puts it right next to 0.0, where the total order wants it.
template <class Codec>
void sort_floats_as_ints(CallCtx &ctx, const Codec c, typename Codec::T *a, size_t n) {
  using K = typename Codec::K;
  const bool desc = c.flip != 0;
  IntCodec<K, false> ic(desc ? KWKER_DESCENDING : 0u);
  K *k = reinterpret_cast<K *>(a);
  sort_values(ctx, ic, k, k, n);
  reverse_negatives(ctx, k, n, desc);
}

// sample_partition_sort's check for float bit patterns: a block holding a NaN stops the sort.
template <class Codec> struct NanCheck {
  static constexpr bool kOn = true;
  Codec c;
  bool operator()(const typename Codec::K *keys, size_t m, size_t) const {
    unsigned hit = 0;
    for (size_t i = 0; i < m; ++i) hit |= unsigned(c.is_nan(typename Codec::T(keys[i])));  // vectorised
    return hit != 0;
  }
};

// In place, ascending, NaNs last: the same integer sort without a NaN-counting pass before
// it (float32 at 1e7: the count was 8% of the sort; float64 3%). Presorted input is checked as
// integers on the call's threads, and a NaN then can only sit at the end or at the end of the
// negative block: two reads instead of the count. On one thread the NaN check rides on the
// quicksort's first partition (vq::sort_unless_above). Returns false, with the input's NaNs
// where they were (only non-NaN values moved), when the input has a NaN: the caller then
// counts and gathers the NaNs first, as it does for descending and NaNs-first orders, and
// loses at most one partition pass to the attempt. The parallel sort checks the keys its
// split reads (sample_partition_sort's check) instead.
template <class Codec>
bool sort_floats_unless_nan(CallCtx &ctx, const Codec c, typename Codec::T *a, size_t n) {
  using K = typename Codec::K;
  if (c.flip != 0 || c.nans_first() || n == 0) return false;
  K *k = reinterpret_cast<K *>(a);
  if (on(ctx, KWKER_ALGO_PRESORTED) && n >= knob(tune::kPresortedMin)) {
    const int s = presorted(ctx, IntCodec<K, false>(0u), k, n, k);
    if (s != 0) {
      if (s == -1) reverse_copy(ctx, k, k, n);  // now ascending as integers
      const size_t neg = negative_count(k, n, false);
      if (!c.is_nan(a[n - 1]) && !(neg > 0 && c.is_nan(a[neg - 1]))) {
        if (neg > 1) reverse_copy(ctx, k, k, neg);
        return true;
      }
      if (s == -1) reverse_copy(ctx, k, k, n);  // back to the input order for the NaN gathering
      return false;
    }
  }
  if (want_parallel_keys<K>(ctx, n)) {
    // The parallel sort splits into scratch, so a NaN seen by the split (each block checked
    // in cache) stops it before anything is written back.
    if (!sort_via_scratch(ctx, IntCodec<K, false>(0u), k, k, n, NanCheck<Codec>{c})) return false;
  } else {
    constexpr K kMagnitude = K(~(K(1) << (8 * sizeof(K) - 1)));
    if (!sort_float_bits_unless_above(k, n, kMagnitude, K(c.inf_bits))) return false;
  }
  reverse_negatives(ctx, k, n, false);
  return true;
}

// dst = sorted src, ascending with NaNs last, on this thread, unless src holds a NaN (then
// false: the caller gathers them). Presorted input is copied as it is checked; otherwise the
// copy is the quicksort's first partition (vq::partition_copy), not a pass of its own.
template <class Codec>
bool sort_float_copy_unless_nan(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                                typename Codec::T *dst, size_t n) {
  using K = typename Codec::K;
  if constexpr (sizeof(K) < 4) {  // 16-bit floats sort through counting and widened keys
    (void)ctx, (void)c, (void)src, (void)dst, (void)n;
    return false;
  } else {
    if (c.flip != 0 || c.nans_first() || n < kParallelMin) return false;
    if (on(ctx, KWKER_ALGO_PRESORTED) && n >= knob(tune::kPresortedMin)) {
      const int s = presorted(ctx, c, src, n, dst);
      if (s != 0) {  // copied, in order or reversed, block by block; NaNs in input order
        restore_nans(ctx, c, src, dst, n);
        return true;
      }
    }
    constexpr K kMagnitude = K(~(K(1) << (8 * sizeof(K) - 1)));
    K *k = reinterpret_cast<K *>(dst);
    if (!sort_float_bits_copy_unless_above(reinterpret_cast<const K *>(src), k, n, kMagnitude,
                                           K(c.inf_bits)))
      return false;
    reverse_negatives(ctx, k, n, false);
    return true;
  }
}

template <class Codec>
void sort_copy_impl(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                    typename Codec::T *dst, size_t n) {
  if (use_short_sort<Codec>(n)) {
    sort_short(c, src, dst, n);
    return;
  }
  if constexpr (Codec::kNanPayload) {
    if (dst == src) {
      // Few distinct values first: its counting pass then also proves there is no NaN, so the
      // NaN-gathering pass is skipped (16 distinct float32, 1e7: 0.69 -> 0.60 ns/el).
      if constexpr (sizeof(typename Codec::K) >= 4)
        if (n >= kFewDistinctMin && sort_few_distinct(ctx, c, src, dst, n, /*nan_ok=*/false))
          return;
      if constexpr (sizeof(typename Codec::K) >= 4)
        if (sort_floats_unless_nan(ctx, c, dst, n)) return;
      size_t nans = move_nans(c, dst, n, count_nans(ctx, c, dst, n));
      auto *rest = c.nans_first() ? dst + nans : dst;
      if constexpr (sizeof(typename Codec::K) >= 4) {
        sort_floats_as_ints(ctx, c, rest, n - nans);
        return;
      }
      if (nans) {
        sort_values(ctx, c, rest, rest, n - nans);
        return;
      }
    } else if (sizeof(typename Codec::K) >= 4 &&
               (n < kParallelMin || !want_parallel_keys<typename Codec::K>(ctx, n))) {
      // A sequential copy: copying first and sorting the bit patterns in place skips the
      // encoding and decoding passes (1,000 float32: 1.73 -> 1.50 us per call from Python).
      // Above kParallelMin too, where the sort runs on one thread: there it also beats the
      // sample-partition sort's split pass standing in for the copy (AMD Zen 4, one thread,
      // 2e5-1e7: avx2 float32 1.07-1.11x, float64 1.06-1.10x; avx512 float32 1.03-1.17x).
      // Few distinct values first where sort_float_copy_unless_nan sorts (below kParallelMin
      // the bit patterns' integer sort, sort_values, tries them itself).
      if constexpr (sizeof(typename Codec::K) >= 4)
        if (n >= kParallelMin && sort_few_distinct(ctx, c, src, dst, n, /*nan_ok=*/false))
          return;
      if (sort_float_copy_unless_nan(ctx, c, src, dst, n)) return;
      size_t nans = copy_gather_nans(c, src, dst, n);
      sort_floats_as_ints(ctx, c, c.nans_first() ? dst + nans : dst, n - nans);
      return;
    } else {
      // Several threads (or 16-bit floats). Where a probe of the input meets a NaN, the split
      // checks that every NaN has the canonical bits, and then the NaN block needs no restoring.
      bool canonical = false;
      if (sizeof(typename Codec::K) >= 4 && probe_nans(c, src, n))
        sort_values(ctx, c, src, dst, n, OddNanCheck<Codec>{c, src}, &canonical);
      else
        sort_values(ctx, c, src, dst, n);
      if (!canonical) restore_nans(ctx, c, src, dst, n);
      return;
    }
  }
  sort_values(ctx, c, src, dst, n);
}

// Stable argsort of 64-bit keys through packed words (core/pack-inl.h): one pass for the key
// range, then the SIMD quicksort or the parallel sample sort of the packed words, unpacked in
// cache. Where the key range spans few bits, LSD radix (one or two passes) may win instead:
// the radix64_argsort_max_bits knob says up to how many bits.
// Smallest and largest key of src[0..n) as order-preserving unsigned integers, the pass split
// over the threads for large inputs.
template <class Codec>
void key_range64_all(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
                     uint64_t &mn, uint64_t &mx) {
  const int parts = pass_parts(ctx, n);
  uint64_t lo[kMaxBuckets], hi[kMaxBuckets];
  auto range = [&](int t) {
    key_range64(c, src, chunk_begin(n, parts, t), chunk_begin(n, parts, t + 1), lo[t], hi[t]);
  };
  parallel_tasks(ctx, parts, range);
  for (int t = 1; t < parts; ++t) {
    lo[0] = lo[t] < lo[0] ? lo[t] : lo[0];
    hi[0] = hi[t] > hi[0] ? hi[t] : hi[0];
  }
  mn = lo[0];
  mx = hi[0];
}

// Whether a stable argsort or pair sort of n 32-bit integer keys takes radix_pairs32: from the
// radix32_pairs_min knob's keys (0: never) up to kRadix32PairsMax, above which its scatters
// leave the caches (avx2 engine, two threads, Zen 5: 4e6 keys 17.3 ms against the packed
// words' quicksort's 15.3; 2e6 7.0 against 9.0).
constexpr size_t kRadix32PairsMax = size_t(1) << 21;
inline bool radix32_pairs_wanted(const CallCtx &ctx, size_t n) {
  const size_t m = knob(tune::kRadix32PairsMin);
  return on(ctx, KWKER_ALGO_RADIX) && m > 0 && n >= m && n <= kRadix32PairsMax;
}

// Whether a stable argsort of n 64-bit keys spanning `span` (largest - smallest) takes the LSD
// radix: a range of at most radix64_argsort_max_bits bits, from radix64_argsort_min keys (its
// counters' clearing and prefix are a fixed cost: 300 int64 keys of 8 bits took 5.9 us by radix
// against 0.8 us packed on AVX-512, where the knob had no lower bound).
inline bool radix64_argsort_wanted(const CallCtx &ctx, size_t n, uint64_t span) {
  return on(ctx, KWKER_ALGO_RADIX) && n >= size_t(knob(tune::kRadix64ArgsortMin)) &&
         size_t(bit_length(span)) <= knob(tune::kRadix64MaxBits);
}

template <class Codec>
void argsort_packed64(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
                      int64_t *out) {
  uint64_t lo, hi;
  key_range64_all(ctx, c, src, n, lo, hi);
  const Pack64 p = make_pack64(lo, hi, n);
  if (radix64_argsort_wanted(ctx, n, hi - lo) &&
      radix_argsort64(ctx, src, n, out, c, lo, bit_length(hi - lo)))
    return;
  const UnpackIndex unpack{p.index_mask()};
  auto pack = [c, src, p](size_t i) { return p.pack(c.enc(src[i]), i); };
  // With dropped key bits, runs of equal prefixes are re-sorted before unpacking; splitters are
  // then rounded to the end of their prefix so that no run straddles two buckets.
  auto finish = [&](int64_t *q, size_t len) {
    fix_dropped_bits(c, src, p, q, len);
    unpack(q, len);
  };
  if (want_partition_sort(ctx, n, true)) {
    if (!p.drop) {
      auto bucket = [&](int64_t *q, size_t, size_t len) { seq_sort_keys(q, len, unpack); };
      sample_partition_sort<int64_t>(ctx, n, pack, out, KeySorter(), bucket);
    } else {
      auto bucket = [&](int64_t *q, size_t, size_t len) {
        seq_sort_keys(q, len);
        finish(q, len);
      };
      sample_partition_sort<int64_t>(ctx, n, pack, out, KeySorter(), bucket, unpack.mask);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = pack(i);
  if (!p.drop) {
    seq_sort_keys(out, n, unpack);
    return;
  }
  seq_sort_keys(out, n);
  finish(out, n);
}

// 32-bit keys of inputs up to kWords32Max keys on one thread sort as Pack32 words (pack-inl.h),
// the index in the low bits, the key's top bits above it: the 32-bit sorts have twice the
// lanes of the exact 64-bit packing. Above that size more key bits are dropped and the tied runs
// grow; the partition sort's buckets keep the 64-bit words. See design.md for the measurements.
constexpr size_t kWords32Max = 2048;
inline bool argsort_words32_fits(const CallCtx &ctx, size_t n) {
  return n <= kWords32Max && !want_partition_sort(ctx, n, true);
}

// out = the stable argsort of src[0..n) through Pack32 words, and, when vals is given, vals[j] =
// src[out[j]] (gathered in cache). False when the words gave up (argsort_words32). Kept out of
// line: inlined, it slowed the short rows that argsort_impl handles first (int32 rows of 16,
// 0.97x).
template <class Codec>
__attribute__((noinline)) bool argsort_via_words32(const Codec c, const typename Codec::T *src,
                                                   size_t n, int64_t *out,
                                                   typename Codec::T *vals = nullptr) {
  SmallBuffer<int32_t, kWords32Max> packed(n);
  Pack32 p;
  if (!packed || !argsort_words32(c, src, n, packed.ptr, p, KeySorter())) return false;
  const int32_t mask = p.index_mask();
  if (!vals) {
    for (size_t j = 0; j < n; ++j) out[j] = int64_t(packed.ptr[j] & mask);  // vectorised
    return true;
  }
  size_t j = 0;
  // The gather in hardware: the scalar loads were a sixth of a 1,000-key pair sort on AVX2 (AMD
  // Zen 4). Not on Intel cores, whose microcode mitigation of gather data sampling (Downfall)
  // made vpgatherdd several times slower than the loads it replaces.
  if (sizeof(typename Codec::T) == 4 && !tune::g_intel_cpu) {
    const int *base = reinterpret_cast<const int *>(src);
#if defined(__AVX512F__)
    const __m512i m = _mm512_set1_epi32(mask);
    for (; j + 16 <= n; j += 16) {
      const __m512i i = _mm512_and_si512(_mm512_loadu_si512(packed.ptr + j), m);
      _mm512_storeu_si512(vals + j, _mm512_i32gather_epi32(i, base, 4));
      _mm512_storeu_si512(out + j, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(i)));
      _mm512_storeu_si512(out + j + 8, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(i, 1)));
    }
#elif defined(__AVX2__)
    const __m256i m = _mm256_set1_epi32(mask);
    for (; j + 8 <= n; j += 8) {
      const __m256i i =
          _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(packed.ptr + j)), m);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(vals + j), _mm256_i32gather_epi32(base, i, 4));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + j),
                          _mm256_cvtepi32_epi64(_mm256_castsi256_si128(i)));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + j + 4),
                          _mm256_cvtepi32_epi64(_mm256_extracti128_si256(i, 1)));
    }
#endif
  }
  for (; j < n; ++j) {
    const int32_t i = packed.ptr[j] & mask;
    out[j] = int64_t(i);
    vals[j] = src[i];
  }
  return true;
}

// Whether a and b may be equal keys (c.enc(a) == c.enc(b)), for a filter that reads many pairs:
// exact for integer keys; for floats true for every pair enc() ties (equal bits, both zeros,
// both NaN) and for no other, without enc's sign flip, which AVX2 has no 64-bit arithmetic shift
// for (the tie scan of a reversed float64 input ran at 0.5 ns per key on AVX2 with enc, and
// made its argsort slower than NumPy's).
template <class Codec>
inline bool may_tie(const Codec &c, typename Codec::T a, typename Codec::T b) {
  if constexpr (Codec::kNanPayload) {
    using U = typename Codec::T;
    using K = typename Codec::K;
    const U ma = U(a & U(~Codec::kSign)), mb = U(b & U(~Codec::kSign));
    const bool special_a = (ma == 0) | (K(ma) > K(c.inf_bits));
    const bool special_b = (mb == 0) | (K(mb) > K(c.inf_bits));
    return (a == b) | (special_a & special_b);
  } else {
    return c.enc(a) == c.enc(b);
  }
}

// Stable argsort of src[0..n) into out.
template <class Codec>
void argsort_impl(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
                  int64_t *out) {
  using K = typename Codec::K;
  if (n <= short_argsort_limit<Codec>()) {
    argsort_short(c, src, n, out);
    return;
  }
  if (on(ctx, KWKER_ALGO_PRESORTED) && n >= knob(tune::kPresortedMin)) {
    bool has_ties;
    int s = presorted(ctx, c, src, n, nullptr, &has_ties);
    if (s == 1) {
      for (size_t i = 0; i < n; ++i) out[i] = int64_t(i);
      return;
    }
    if (s == -1) {
      // Non-increasing: the reversal, then each run of equal keys put back in index order. The
      // reversal is one vectorised store and the search for ties reads the keys in blocks
      // without branching, so a strictly decreasing input costs two streaming passes (it had
      // cost a key comparison and a branch per slot: float64 3e5 keys 0.98 ms, NumPy 0.19).
      for (size_t i = 0; i < n; ++i) out[i] = int64_t(n - 1 - i);
      if (!has_ties) return;  // strictly decreasing, as the check found
      constexpr size_t kBlock = 256;
      for (size_t k = 0; k + 1 < n;) {
        const size_t e = k + kBlock < n - 1 ? k + kBlock : n - 1;  // pairs (q, q + 1), q in [k, e)
        FlagAcc<K> ties = 0;
        for (size_t q = k; q < e; ++q) ties |= FlagAcc<K>(may_tie(c, src[q], src[q + 1]));
        size_t next = e;
        for (size_t q = k; ties && q < e; ++q) {
          if (!(c.enc(src[q]) == c.enc(src[q + 1]))) continue;
          size_t last = q + 1;  // input positions q..last hold one key
          while (last + 1 < n && c.enc(src[last + 1]) == c.enc(src[q])) ++last;
          // Their output slots n-1-last .. n-1-q hold last .. q: put them in index order.
          for (size_t t = 0; t <= last - q; ++t) out[n - 1 - last + t] = int64_t(q + t);
          q = last;  // (last, last + 1) is no tie; a run may end past the block
          if (last > next) next = last;
        }
        k = next;
      }
      return;
    }
  }
  if constexpr (sizeof(K) == 1)
    if (on(ctx, KWKER_ALGO_RADIX) && counting_scatter_parallel(ctx, c, src, n, nullptr, out))
      return;
  if constexpr (sizeof(K) <= 2) {
    if (on(ctx, KWKER_ALGO_RADIX)) {
      if constexpr (sizeof(K) == 1) {
        if (counting_argsort(src, n, out, c)) return;
      } else if (n >= knob(tune::kCount16ArgsortMin)) {
        if (radix16_argsort(ctx, c, src, n, nullptr, out)) return;
      }
    }
    if (n <= (size_t(1) << 16)) {
      // (key << 16 | index) in 32 bits: the 32-bit quicksort has twice the lanes of the 64-bit.
      SmallBuffer<int32_t, 4096> packed(n);
      if (packed) {
        int32_t *w = packed.ptr;
        pack16_words(c, src, n, w);
        seq_sort_keys(w, n, [&](int32_t *q, size_t m) {
          int64_t *o = out + (q - w);
          for (size_t j = 0; j < m; ++j) o[j] = int64_t(q[j] & 0xFFFF);
        });
        return;
      }
    }
  }
  if constexpr (sizeof(K) == 4 && !Codec::kNanPayload)
    if (radix32_pairs_wanted(ctx, n) && radix_pairs32(ctx, c, src, n, nullptr, out)) return;
  if constexpr (sizeof(K) == 4)
    if (argsort_words32_fits(ctx, n) && argsort_via_words32(c, src, n, out)) return;
  if (sizeof(K) <= 4 && n < (size_t(1) << 32)) {
    // Packed (key << 32 | index): one 64-bit sort gives the stable order, since the index
    // breaks every tie; the output buffer doubles as the sort buffer.
    auto pack = [c, src](size_t i) {
      return int64_t((uint64_t(int64_t(c.enc(src[i]))) << 32) | uint64_t(i));
    };
    if (want_partition_sort(ctx, n, true)) {
      auto bucket = [](int64_t *p, size_t, size_t len) { seq_sort_keys(p, len, UnpackIndex()); };
      sample_partition_sort<int64_t>(ctx, n, pack, out, KeySorter(), bucket);
      return;
    }
    for (size_t i = 0; i < n; ++i) out[i] = pack(i);
    seq_sort_keys(out, n, UnpackIndex());
    return;
  }
  if constexpr (sizeof(K) == 8) {
    if (n < (size_t(1) << 32)) {
      argsort_packed64(ctx, c, src, n, out);
      return;
    }
  }
  struct Pair {
    K key;
    int64_t idx;
  };
  auto pair_less = [](const Pair &a, const Pair &b) {
    return a.key < b.key || (a.key == b.key && a.idx < b.idx);
  };
  Scratch<Pair> pairs(n);
  if (pairs) {
    for (size_t i = 0; i < n; ++i) pairs.ptr[i] = Pair{c.enc(src[i]), int64_t(i)};
    intro_sort(pairs.ptr, n, pair_less);
    for (size_t i = 0; i < n; ++i) out[i] = pairs.ptr[i].idx;
    return;
  }
  // No scratch allowed: sort the index array in place, reading keys through it.
  for (size_t i = 0; i < n; ++i) out[i] = int64_t(i);
  auto idx_less = [&](int64_t a, int64_t b) {
    K ka = c.enc(src[a]), kb = c.enc(src[b]);
    return ka < kb || (ka == kb && a < b);
  };
  intro_sort(out, n, idx_less);
}

// Runs body(i) for every segment; big segments first with the whole thread budget, then the
// rest spread over tasks that claim blocks of segments dynamically (ragged sizes balance).
template <class Body>
void for_segments(CallCtx &ctx, const Segments &segs, Body body) {
  if (segs.count <= 0) return;
  int64_t total = segs.end(segs.count - 1) - segs.begin(0);
  if (total <= 0) return;
  int T = ctx.threads;
  bool par = on(ctx, KWKER_ALGO_PARALLEL) && T > 1 && segs.count > 1 &&
             total >= (segs.offsets ? kBlocksParallelMinKeys : rows_parallel_min(segs.row_len));
  if (!par) {
    // One segment (torch.sort of a 1-D tensor, a single row) gets the call's threads: its own
    // algorithm decides from its size whether a second thread pays.
    if (segs.count == 1) {
      body(ctx, 0);
      if (ctx.used_threads < 1) ctx.used_threads = 1;
      return;
    }
    CallCtx one{1, ctx.algos, 1};
    for (int64_t i = 0; i < segs.count; ++i) body(one, i);
    if (ctx.used_threads < 1) ctx.used_threads = 1;
    return;
  }
  int64_t big = total / (2 * int64_t(T));
  for (int64_t i = 0; i < segs.count; ++i)
    if (segs.end(i) - segs.begin(i) > big) body(ctx, i);
  // Segments are claimed in runs worth at least kClaimKeys elements (engine.h) and at most a
  // 1 / (4 T) share of what is left (guided: large runs first, small ones at the end, so the
  // threads finish together; fixed runs of 16K elements left one thread waiting up to a run at
  // the end).
  const int64_t run = rows_per_claim(total / segs.count);
  int64_t next = 0;
  auto task = [&](int) {
    CallCtx one{1, ctx.algos, 1};
    for (;;) {
      int64_t first = __atomic_load_n(&next, __ATOMIC_RELAXED), take;
      do {
        if (first >= segs.count) return;
        take = (segs.count - first) / (4 * int64_t(T));
        if (take < run) take = run;
      } while (!__atomic_compare_exchange_n(&next, &first, first + take, true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED));
      int64_t last = first + take < segs.count ? first + take : segs.count;
      for (int64_t i = first; i < last; ++i)
        if (segs.end(i) - segs.begin(i) <= big) body(one, i);
    }
  };
  parallel_tasks(ctx, T, task);
}

// The range [lo, hi) of the distinct words a[0..n) (reordered) that holds position r of their
// sorted order, every word of [0, lo) below it and every word of [hi, n) above: the quicksort's
// vector partition around sampled pivots, until the range is a leaf's size (or its pivot was
// its largest word). Replaced a scalar quickselect (select_k), whose compares mispredict half
// the time: rows of 1,000 keys took 2-3.5x NumPy's argpartition (design.md).
template <class W> void narrow_to(W *a, size_t n, size_t r, size_t &lo, size_t &hi) {
  using S = vq::Ops<W>;
  constexpr size_t kLeaf = S::W * S::kMaxVecs;
  lo = 0;
  hi = n;
  while (hi - lo > 2 * kLeaf) {
    const W p = vq::choose_pivot<S>(a + lo, hi - lo);
    const size_t m = lo + vq::partition<S>(a + lo, hi - lo, p);  // a[lo, m) <= p < a[m, hi)
    if (m == hi) break;
    if (m > r) hi = m;
    else lo = m;
  }
}

// The k smallest of the distinct words a[0..n) into a[0..k), sorted (the rest in any order).
template <class W> void smallest_sorted(W *a, size_t n, size_t k) {
  if (k == 0) return;
  size_t lo, hi;
  narrow_to(a, n, k - 1, lo, hi);
  seq_sort_keys(a, lo);
  seq_sort_keys(a + lo, hi - lo);
}

// Position r of the sorted order of the distinct words a[0..n) (a reordered).
template <class W> W word_at(W *a, size_t n, size_t r) {
  size_t lo, hi;
  narrow_to(a, n, r, lo, hi);
  seq_sort_keys(a + lo, hi - lo);
  return a[r];
}

// work[0..n) = the Pack64 words of row[0..n) (64-bit keys), and their plan. The keys are
// encoded once, into work, by the pass that finds their range: the float64 encoding (NaN,
// -0.0, direction) was a third of a top-k of 1,000 keys when both passes ran it.
template <class Codec>
Pack64 pack64_words(const Codec c, const typename Codec::T *row, size_t n, int64_t *work) {
  uint64_t lo = ~uint64_t(0), hi = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t key = int64_t(c.enc(row[i]));
    work[i] = key;
    const uint64_t u = uint64_t(key) ^ kSign64;
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
  }
  const Pack64 p = make_pack64(lo, hi, n);
  for (size_t i = 0; i < n; ++i) work[i] = p.pack(work[i], i);
  return p;
}

// After smallest_sorted on Pack64 words with dropped key bits: the first k words in the stable
// order of the full keys. Words whose prefixes tie are ordered by index only, so the run of
// ties that ends at position k - 1 may continue among the words left behind, which then
// compete for its places by full key; every other run lies inside [0, k) and is re-sorted.
template <class Codec>
void settle_dropped_words(const Codec c, const typename Codec::T *row, const Pack64 &p,
                          int64_t *w, size_t n, size_t k) {
  const uint64_t tie = uint64_t(1) << p.B;  // words tie on their prefix when their xor is below
  const int64_t last = w[k - 1];
  size_t j0 = k - 1;
  while (j0 > 0 && uint64_t(w[j0 - 1] ^ last) < tie) --j0;
  size_t behind = 0;  // a counting pass first (it vectorises): most rows have none
  for (size_t i = k; i < n; ++i) behind += uint64_t(w[i] ^ last) < tie;
  size_t e = k;  // the tied words left behind, gathered into [k, e)
  for (size_t i = k; i < n && behind; ++i) {
    if (uint64_t(w[i] ^ last) < tie) {
      const int64_t t = w[i];
      w[i] = w[e];
      w[e++] = t;
      --behind;
    }
  }
  if (e > k) {
    intro_sort(w + k, e - k, LessNatural());  // index order, as sort_dropped_run expects
    sort_dropped_run(c, row, w + j0, e - j0, p.index_mask());
  }
  fix_dropped_runs(c, row, p.B, w, e > k ? j0 : k, ~size_t(0));
}

template <class Codec>
void topk_row(const Codec c, const typename Codec::T *row, size_t cols, size_t k, bool sorted,
              typename Codec::T *vals, int64_t *idx, int64_t *work) {
  using K = typename Codec::K;
  auto less_idx = [&](int64_t a, int64_t b) {
    K ka = c.enc(row[a]), kb = c.enc(row[b]);
    return ka < kb || (ka == kb && a < b);
  };
  // A row that fits the register network: its whole stable argsort there, then the first k.
  // Up to the network's capacity, not the argsort knob: that knob weighs the network against
  // the Pack32 argsort, while the alternative here is select_k (rows of 33-64 float32 / int32
  // 2.3-3.7x slower than the network on the avx2 engine, Zen 3, whose knob is 32). The limit
  // (never above the capacity) is still tested first only for code placement: without that
  // read, other rows' sorts in this translation unit ran 5-17% slower on that CPU (design.md).
  if (cols <= short_argsort_limit<Codec>() || cols <= short_argsort_capacity<Codec>()) {
    int64_t order[short_argsort_capacity<Codec>()];
    argsort_short(c, row, cols, order);
    for (size_t j = 0; j < k; ++j) idx[j] = order[j];
  } else if (work && sizeof(K) <= 4) {
    for (size_t i = 0; i < cols; ++i) work[i] = pack32(c.enc(row[i]), i);
    smallest_sorted(work, cols, k);
    for (size_t j = 0; j < k; ++j) idx[j] = work[j] & int64_t(0xFFFFFFFF);
  } else if (work) {
    // 64-bit keys as Pack64 words (the argsort's): the key's offset from the row's smallest
    // above the index, its lowest bits dropped where both do not fit.
    const Pack64 p = pack64_words(c, row, cols, work);
    smallest_sorted(work, cols, k);
    if (p.drop && k) settle_dropped_words(c, row, p, work, cols, k);
    const int64_t mask = p.index_mask();
    for (size_t j = 0; j < k; ++j) idx[j] = work[j] & mask;
  } else {
    // No scratch: a bounded max-heap of the k best, kept in the output itself.
    size_t m = 0;
    for (size_t i = 0; i < cols; ++i) {
      if (m < k) {
        idx[m++] = int64_t(i);
        if (m == k)
          for (size_t s = k / 2; s-- > 0;) sift_down(idx, s, k, less_idx);
      } else if (less_idx(int64_t(i), idx[0])) {
        idx[0] = int64_t(i);
        sift_down(idx, 0, k, less_idx);
      }
    }
    heap_sort(idx, k, less_idx);
  }
  if (!sorted) seq_sort_keys(idx, k);  // distinct indices: the vector sort
  for (size_t j = 0; j < k; ++j) vals[j] = row[idx[j]];
}

template <class Fn> int with_codec(int dtype, unsigned flags, bool for_sort, Fn &&fn) {
  flags = resolve_order_flags(flags);
  switch (dtype) {
    case KWKER_BOOL: fn(BoolCodec(flags)); break;
    case KWKER_INT8: fn(IntCodec<int8_t, false>(flags)); break;
    case KWKER_INT16: fn(IntCodec<int16_t, false>(flags)); break;
    case KWKER_INT32: fn(IntCodec<int32_t, false>(flags)); break;
    case KWKER_INT64: fn(IntCodec<int64_t, false>(flags)); break;
    case KWKER_UINT8: fn(IntCodec<uint8_t, true>(flags)); break;
    case KWKER_UINT16: fn(IntCodec<uint16_t, true>(flags)); break;
    case KWKER_UINT32: fn(IntCodec<uint32_t, true>(flags)); break;
    case KWKER_UINT64: fn(IntCodec<uint64_t, true>(flags)); break;
    case KWKER_FLOAT16: fn(FloatCodec<uint16_t>(0x7C00u, 0x7E00u, flags, for_sort)); break;
    case KWKER_BFLOAT16: fn(FloatCodec<uint16_t>(0x7F80u, 0x7FC0u, flags, for_sort)); break;
    case KWKER_FLOAT32:
      fn(FloatCodec<uint32_t>(0x7F800000u, 0x7FC00000u, flags, for_sort));
      break;
    case KWKER_FLOAT64:
      fn(FloatCodec<uint64_t>(0x7FF0000000000000ull, 0x7FF8000000000000ull, flags, for_sort));
      break;
    case KWKER_DATETIME: fn(DatetimeCodec(flags)); break;
    default: return KWKER_E_DTYPE;
  }
  return KWKER_OK;
}

// ---- table entries ----
inline int e_sort_copy(CallCtx &ctx, int dtype, const void *src, void *dst, int64_t n,
                       unsigned flags) {
  return with_codec(dtype, flags, true, [&](auto c) {
    using T = typename decltype(c)::T;
    sort_copy_impl(ctx, c, static_cast<const T *>(src), static_cast<T *>(dst), size_t(n));
  });
}

inline int e_argsort(CallCtx &ctx, int dtype, const void *data, int64_t n, int64_t *out,
                     unsigned flags) {
  return with_codec(dtype, flags, false, [&](auto c) {
    using T = typename decltype(c)::T;
    argsort_impl(ctx, c, static_cast<const T *>(data), size_t(n), out);
  });
}

// Rows of G keys, G a power of two up to four registers' width: W / G rows per register, or a
// row in G / W registers (coded-inl.h), split over the threads in contiguous chunks. Registers
// holding a NaN, and the tail, take the short path row by row.
template <class Codec, size_t G>
void sort_rows_lanes(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                     typename Codec::T *dst, size_t rows) {
  const int parts = row_parts(ctx, rows, G);
  auto task = [&](int t) {
    size_t r = chunk_begin(rows, parts, t);
    const size_t end = chunk_begin(rows, parts, t + 1);
    constexpr size_t W = vq::Ops<typename Codec::K>::W, R = G <= W ? W / G : 1;
    while (r < end) {
      r += sort_rows_in_lanes<Codec, G>(c, src + r * G, dst + r * G, end - r);
      const size_t stop = r + R < end ? r + R : end;  // rows of a register left at a NaN
      for (; r < stop; ++r) sort_short(c, src + r * G, dst + r * G, G);
    }
  };
  parallel_tasks(ctx, parts, task);
}

// Rows of N keys, N not a power of two, padded to G lanes in registers (coded-inl.h), split over
// the threads like sort_rows_lanes.
template <class Codec, size_t N>
void sort_rows_padded(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                      typename Codec::T *dst, size_t rows) {
  const int parts = row_parts(ctx, rows, N);
  auto task = [&](int t) {
    size_t r = chunk_begin(rows, parts, t);
    const size_t end = chunk_begin(rows, parts, t + 1);
    constexpr size_t W = vq::Ops<typename Codec::K>::W, G = padded_group<N>();
    constexpr size_t R = G <= W ? W / G : 1;
    while (r < end) {
      if constexpr (G <= W)
        r += sort_rows_padded_in_lanes<Codec, N>(c, src + r * N, dst + r * N, end - r);
      else
        r += sort_rows_two_in_lanes<Codec, N>(c, src + r * N, dst + r * N, end - r);
      const size_t stop = r + R < end ? r + R : end;  // a register left at a NaN, or the tail
      for (; r < stop; ++r) sort_short(c, src + r * N, dst + r * N, N);
    }
  };
  parallel_tasks(ctx, parts, task);
}

// The same for the stable argsort.
template <class Codec, size_t N>
void argsort_rows_padded(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t rows,
                         int64_t *out) {
  const int parts = row_parts(ctx, rows, N);
  auto task = [&](int t) {
    size_t r = chunk_begin(rows, parts, t);
    const size_t end = chunk_begin(rows, parts, t + 1);
    if constexpr (N <= vq::Ops<int64_t>::W)
      r += argsort_rows_padded_in_lanes<Codec, N>(c, src + r * N, end - r, out + r * N);
    else
      r += argsort_rows_two_in_lanes<Codec, N>(c, src + r * N, end - r, out + r * N);
    for (; r < end; ++r) argsort_short(c, src + r * N, N, out + r * N);
  };
  parallel_tasks(ctx, parts, task);
}

// Rows of 3-15 keys that are not a power of two go padded wherever a register holds a padded
// row of them (W lanes of keys for the sort, W 64-bit lanes for the argsort), or as a row in two
// registers from W + 1 keys on (the sort up to 2 W - 1: rows of 2 W are sort_rows_lanes').
constexpr size_t kPaddedMax = 7;     // the argsort's padded rows
constexpr size_t kPaddedSortMax = 15;

template <class Codec, size_t N = 3>
bool try_sort_rows_padded(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                          typename Codec::T *dst, size_t row_len, size_t rows) {
  constexpr size_t W = vq::Ops<typename Codec::K>::W;
  if constexpr (N <= kPaddedSortMax) {
    if constexpr (padded_group<N>() != N && (padded_group<N>() <= W || N < 2 * W)) {
      if (row_len == N) {
        sort_rows_padded<Codec, N>(ctx, c, src, dst, rows);
        return true;
      }
    }
    return try_sort_rows_padded<Codec, N + 1>(ctx, c, src, dst, row_len, rows);
  }
  return false;
}

// The argsort also takes rows of W + 1 to 2 W keys (W the 64-bit lanes), a row in two registers
// (64-bit keys only where W < 8).
template <class Codec, size_t N = 3>
bool try_argsort_rows_padded(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                             size_t row_len, size_t rows, int64_t *out) {
  constexpr size_t W = vq::Ops<int64_t>::W;
  if constexpr (N <= kPaddedMax || N <= 2 * W) {
    // 64-bit keys in two registers only below 8 lanes: with AVX-512's 8 the network's
    // argsort of the whole row measured faster (rows of 9-16 float64 / int64: the two
    // registers took 0.81-0.97x its speed, Zen 5), while 4 lanes gain 1.5-1.9x (Zen 3).
    if constexpr ((padded_group<N>() != N && padded_group<N>() <= W) ||
                  (W < N && N <= 2 * W && (sizeof(typename Codec::K) < 8 || W < 8))) {
      if (row_len == N) {
        argsort_rows_padded<Codec, N>(ctx, c, src, rows, out);
        return true;
      }
    }
    return try_argsort_rows_padded<Codec, N + 1>(ctx, c, src, row_len, rows, out);
  }
  return false;
}

// Whether rows of row_len keys went through sort_rows_lanes or sort_rows_padded.
template <class Codec>
bool try_sort_rows_lanes(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                         typename Codec::T *dst, const Segments &segs) {
  if constexpr (coded_ok<Codec>()) {
    constexpr size_t W = vq::Ops<typename Codec::K>::W;
    if (segs.offsets) return false;
    const size_t rows = size_t(segs.count);
    if (segs.row_len == 2) {
      sort_rows_lanes<Codec, 2>(ctx, c, src, dst, rows);
      return true;
    }
    if constexpr (W >= 4) {  // rows of up to four registers (2-lane registers: rows of 2 only)
      switch (segs.row_len) {
        case 4: sort_rows_lanes<Codec, 4>(ctx, c, src, dst, rows); return true;
        case 8: sort_rows_lanes<Codec, 8>(ctx, c, src, dst, rows); return true;
        case 16: sort_rows_lanes<Codec, 16>(ctx, c, src, dst, rows); return true;
        default: return try_sort_rows_padded(ctx, c, src, dst, size_t(segs.row_len), rows);
      }
    }
    return false;
  }
  return false;
}

inline int e_sort_segments(CallCtx &ctx, int dtype, const void *src, void *dst,
                           const Segments &segs, unsigned flags) {
  return with_codec(dtype, flags, true, [&](auto c) {
    using T = typename decltype(c)::T;
    const T *s = static_cast<const T *>(src);
    T *d = static_cast<T *>(dst);
    if (try_sort_rows_lanes(ctx, c, s, d, segs)) return;
    for_segments(ctx, segs, [&](CallCtx &sub, int64_t i) {
      int64_t b = segs.begin(i);
      const size_t len = size_t(segs.end(i) - b);
      // Short segments of 8-byte values are sorted faster than the hardware prefetcher brings
      // the next ones in: fetch the input 2 KiB ahead of this one, as many lines as this one
      // spans (int64 / float64 rows of 32-256, one thread: 1.06-1.16x on a quiet host, 1.3-1.6x
      // while another tenant loaded the memory). 4-byte rows measured 0.95-1.0x on AVX2 and for
      // up to 128 keys on AVX-512, but AVX-512 rows of 129-512 gain: float32 rows of 200 / 256
      // 2.0x / 1.38x, int32 rows of 256 1.03x (2-vCPU Zen 5, two threads).
      if ((sizeof(T) == 8 || (sizeof(T) == 4 && vq::Ops<int32_t>::W >= 16 && len > 128)) &&
          len * sizeof(T) <= 2048)
        prefetch_ahead<2048>(s + b + len, int64_t(len * sizeof(T)));
      sort_copy_impl(sub, c, s + b, d + b, len);
    });
  });
}

// Stable argsort of rows of G keys (G = 2, 4, 8), several rows per register (coded-inl.h: 64-bit
// keys beside a register of indices, narrower keys packed with their index), split over the
// threads; the tail takes the short path row by row.
template <class Codec, size_t G>
void argsort_rows_lanes(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t rows,
                        int64_t *out) {
  const int parts = row_parts(ctx, rows, G);
  auto task = [&](int t) {
    size_t r = chunk_begin(rows, parts, t);
    const size_t end = chunk_begin(rows, parts, t + 1);
    if constexpr (sizeof(typename Codec::K) == 8)
      r += argsort_rows_in_lanes<Codec, G>(c, src + r * G, end - r, out + r * G);
    else
      r += argsort_rows_packed_in_lanes<Codec, G>(c, src + r * G, end - r, out + r * G);
    for (; r < end; ++r) argsort_short(c, src + r * G, G, out + r * G);
  };
  parallel_tasks(ctx, parts, task);
}

template <class Codec>
bool try_argsort_rows_lanes(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                            const Segments &segs, int64_t *out, bool relative) {
  if constexpr (coded_ok<Codec>() && vq::Ops<int64_t>::W > 1) {
    constexpr size_t W = vq::Ops<int64_t>::W;  // both layouts sort in 64-bit lanes
    if (segs.offsets || !relative) return false;
    if (segs.row_len == 2) {
      argsort_rows_lanes<Codec, 2>(ctx, c, src, size_t(segs.count), out);
      return true;
    }
    if constexpr (W >= 4) {
      if (segs.row_len == 4) {
        argsort_rows_lanes<Codec, 4>(ctx, c, src, size_t(segs.count), out);
        return true;
      }
    }
    if constexpr (W >= 8) {
      if (segs.row_len == 8) {
        argsort_rows_lanes<Codec, 8>(ctx, c, src, size_t(segs.count), out);
        return true;
      }
    }
    return try_argsort_rows_padded(ctx, c, src, size_t(segs.row_len), size_t(segs.count), out);
  }
  return false;
}

inline int e_argsort_segments(CallCtx &ctx, int dtype, const void *data, const Segments &segs,
                              int64_t *out, unsigned flags, bool relative) {
  return with_codec(dtype, flags, false, [&](auto c) {
    using T = typename decltype(c)::T;
    const T *d = static_cast<const T *>(data);
    if (try_argsort_rows_lanes(ctx, c, d, segs, out, relative)) return;
    for_segments(ctx, segs, [&](CallCtx &sub, int64_t i) {
      int64_t b = segs.begin(i), len = segs.end(i) - b;
      argsort_impl(sub, c, d + b, size_t(len), out + b);
      if (!relative)
        for (int64_t j = 0; j < len; ++j) out[b + j] += b;
    });
  });
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker

// The fused (key, index) pair sort and the selection top-k / k-th value, built on the entry
// points above.
#include "core/pairs-inl.h"
#include "core/select-inl.h"
#include "core/columns-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

inline const EngineTable &make_table(const char *name) {
  static const EngineTable table = {name,           &e_sort_copy,         &e_argsort,
                                    &e_sort_segments, &e_argsort_segments, &e_topk_rows,
                                    &tuning_default, &e_sort_pairs_segments, &e_kth_rows,
                                    &e_topk_cols,    &e_sort_cols,         &e_kth_cols};
  return table;
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
