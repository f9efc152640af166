// The engine entry points: dtype dispatch, then the algorithm choice for each call
// (presorted detection, counting/radix, sample-partition parallel sort, SIMD quicksort).
// Included once by each engines/<name>/engine.cc; everything is per engine.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/engine.h"
#include "core/engine_ns-inl.h"
#include "core/keys-inl.h"
#include "core/parallel-inl.h"
#include "core/radix-inl.h"
#include "core/scalar-inl.h"
#include "core/vqsort-inl.h"
#include "kwker/kwker.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

// Thresholds, chosen by measurement with kwker/bench (see docs/design.md).
constexpr size_t kParallelMin = size_t(kParallelMinElements);
constexpr size_t kCount16SortMin = 20000; // 16-bit counting sort beats the quicksort above this
constexpr size_t kCount16ArgMin = 60000;  // ... and the stable counting argsort above this

inline bool on(const CallCtx &ctx, unsigned algo) { return (ctx.algos & algo) != 0; }
inline bool want_parallel(const CallCtx &ctx, size_t n) {
  return on(ctx, KWKER_ALGO_PARALLEL) && ctx.threads > 1 && n >= kParallelMin;
}

// Sequential sort of keys: the SIMD quicksort for 16/32/64-bit keys.
inline void seq_sort_keys(int8_t *k, size_t n) { intro_sort(k, n, LessNatural()); }
inline void seq_sort_keys(int16_t *k, size_t n) { sort_keys(k, n); }
inline void seq_sort_keys(int32_t *k, size_t n) { sort_keys(k, n); }
inline void seq_sort_keys(int64_t *k, size_t n) { sort_keys(k, n); }

struct KeySorter {
  template <class K> void operator()(K *k, size_t n) const { seq_sort_keys(k, n); }
};

// 1: keys non-decreasing; -1: strictly decreasing; 0: neither. One read pass at most, and
// random input is rejected within a few elements.
template <class Codec>
int presorted(const Codec c, const typename Codec::T *src, size_t n) {
  if (n < 2) return 1;
  using K = typename Codec::K;
  K prev = c.enc(src[0]);
  size_t i = 1;
  K first_next = c.enc(src[1]);
  if (first_next >= prev) {
    for (; i < n; ++i) {
      K k = c.enc(src[i]);
      if (k < prev) return 0;
      prev = k;
    }
    return 1;
  }
  for (; i < n; ++i) {
    K k = c.enc(src[i]);
    if (k >= prev) return 0;
    prev = k;
  }
  return -1;
}

template <class Codec>
void sort_values(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                 typename Codec::T *dst, size_t n) {
  using T = typename Codec::T;
  using K = typename Codec::K;
  static_assert(sizeof(T) == sizeof(K), "keys are the width of the values");
  if (n == 0) return;
  if constexpr (sizeof(K) <= 2) {
    if (on(ctx, KWKER_ALGO_RADIX) && (sizeof(K) == 1 || n >= kCount16SortMin))
      if (counting_sort(src, dst, n, c)) return;
  }
  if (on(ctx, KWKER_ALGO_PRESORTED)) {
    int s = presorted(c, src, n);
    if (s == 1) {
      if (dst != src) memcpy(dst, src, n * sizeof(T));
      return;
    }
    if (s == -1) {  // strictly decreasing keys: the reversal is the sorted order
      for (size_t i = 0, j = n - 1; i < j; ++i, --j) {
        T a = src[i], b = src[j];
        dst[i] = b;
        dst[j] = a;
      }
      if (n % 2) dst[n / 2] = src[n / 2];
      return;
    }
  }
  if (want_parallel(ctx, n)) {
    auto get = [&](size_t i) { return c.enc(src[i]); };
    if (dst != src) {
      auto post = [&](K *p, size_t, size_t len) {
        if (!c.identity())
          for (size_t j = 0; j < len; ++j) reinterpret_cast<T *>(p)[j] = c.dec(p[j]);
      };
      sample_partition_sort<K>(ctx, n, get, reinterpret_cast<K *>(dst), KeySorter(), post);
      return;
    }
    Scratch<K> tmp(n);
    if (tmp) {
      auto post = [&](K *p, size_t start, size_t len) {
        for (size_t j = 0; j < len; ++j) dst[start + j] = c.dec(p[j]);
      };
      sample_partition_sort<K>(ctx, n, get, tmp.ptr, KeySorter(), post);
      return;
    }
  }
  K *k = reinterpret_cast<K *>(dst);
  if (c.identity()) {
    if (dst != src) memcpy(dst, src, n * sizeof(T));
  } else {
    for (size_t i = 0; i < n; ++i) k[i] = c.enc(src[i]);
  }
  seq_sort_keys(k, n);
  if (!c.identity())
    for (size_t i = 0; i < n; ++i) dst[i] = c.dec(k[i]);
}

// Every NaN maps to one key, so the sorts above write a canonical NaN. These two helpers put
// the input's own NaN bit patterns into the NaN block, in input order, so a sort is always a
// permutation of its input (as np.sort is). They cost nothing when the input has no NaN.

// In place: moves the NaNs to their final block, keeping their order; returns their count.
template <class Codec> size_t gather_nans(const Codec c, typename Codec::T *a, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) count += c.is_nan(a[i]);  // vectorised; the common answer is 0
  if (count == 0) return 0;
  count = 0;
  if (c.nans_first()) {
    for (size_t i = 0; i < n; ++i)
      if (c.is_nan(a[i])) swap_vals(a[i], a[count++]);
  } else {
    size_t j = n;
    for (size_t i = n; i-- > 0;)
      if (c.is_nan(a[i])) swap_vals(a[i], a[--j]);
    count = n - j;
  }
  return count;
}

// Out of place: the sorted dst has a canonical NaN block; copy the real ones from src.
template <class Codec>
void restore_nans(const Codec c, const typename Codec::T *src, typename Codec::T *dst, size_t n) {
  if (n == 0) return;
  size_t j = 0, k = 0;
  if (c.nans_first()) {
    while (k < n && c.is_nan(dst[k])) ++k;
  } else {
    while (k < n && c.is_nan(dst[n - 1 - k])) ++k;
    j = n - k;
  }
  if (k == 0) return;
  for (size_t i = 0; i < n; ++i)
    if (c.is_nan(src[i])) dst[j++] = src[i];
}

template <class Codec>
void sort_copy_impl(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                    typename Codec::T *dst, size_t n) {
  if constexpr (Codec::kNanPayload) {
    if (dst == src) {
      size_t nans = gather_nans(c, dst, n);
      if (nans) {
        auto *rest = c.nans_first() ? dst + nans : dst;
        sort_values(ctx, c, rest, rest, n - nans);
        return;
      }
    } else {
      sort_values(ctx, c, src, dst, n);
      restore_nans(c, src, dst, n);
      return;
    }
  }
  sort_values(ctx, c, src, dst, n);
}

// Stable argsort of src[0..n) into out; indices are offset by base.
template <class Codec>
void argsort_impl(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
                  int64_t *out) {
  using K = typename Codec::K;
  if (n == 0) return;
  if (on(ctx, KWKER_ALGO_PRESORTED)) {
    int s = presorted(c, src, n);
    if (s == 1) {
      for (size_t i = 0; i < n; ++i) out[i] = int64_t(i);
      return;
    }
    if (s == -1) {  // strictly decreasing: no ties, so the reversal is the stable order
      for (size_t i = 0; i < n; ++i) out[i] = int64_t(n - 1 - i);
      return;
    }
  }
  if constexpr (sizeof(K) <= 2) {
    if (on(ctx, KWKER_ALGO_RADIX) && (sizeof(K) == 1 || n >= kCount16ArgMin))
      if (counting_argsort(src, n, out, 0, c)) return;
  }
  if (sizeof(K) <= 4 && n < (size_t(1) << 32)) {
    // Packed (key << 32 | index): one 64-bit sort gives the stable order, since the index
    // breaks every tie; the output buffer doubles as the sort buffer.
    auto pack = [&](size_t i) {
      return int64_t((uint64_t(int64_t(c.enc(src[i]))) << 32) | uint64_t(i));
    };
    auto unpack = [](int64_t *p, size_t, size_t len) {
      for (size_t j = 0; j < len; ++j) p[j] &= int64_t(0xFFFFFFFF);
    };
    if (want_parallel(ctx, n)) {
      sample_partition_sort<int64_t>(ctx, n, pack, out, KeySorter(), unpack);
      return;
    }
    for (size_t i = 0; i < n; ++i) out[i] = pack(i);
    seq_sort_keys(out, n);
    unpack(out, 0, n);
    return;
  }
  if constexpr (sizeof(K) == 8) {
    if (on(ctx, KWKER_ALGO_RADIX) && n < (size_t(1) << 32) &&
        radix_argsort64(ctx, src, n, out, c))
      return;
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
  bool par = on(ctx, KWKER_ALGO_PARALLEL) && T > 1 && size_t(total) >= kParallelMin &&
             segs.count > 1;
  if (!par) {
    CallCtx one{1, ctx.algos, 1};
    for (int64_t i = 0; i < segs.count; ++i) body(one, i);
    if (ctx.used_threads < 1) ctx.used_threads = 1;
    return;
  }
  int64_t big = total / (2 * int64_t(T));
  for (int64_t i = 0; i < segs.count; ++i)
    if (segs.end(i) - segs.begin(i) > big) body(ctx, i);
  int64_t next = 0;
  auto task = [&](int) {
    CallCtx one{1, ctx.algos, 1};
    for (;;) {
      int64_t i = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
      if (i >= segs.count) return;
      if (segs.end(i) - segs.begin(i) <= big) body(one, i);
    }
  };
  parallel_tasks(ctx, T, task);
}

template <class Codec>
void topk_row(const Codec c, const typename Codec::T *row, size_t cols, size_t k, bool sorted,
              typename Codec::T *vals, int64_t *idx, int64_t *work) {
  using K = typename Codec::K;
  auto less_idx = [&](int64_t a, int64_t b) {
    K ka = c.enc(row[a]), kb = c.enc(row[b]);
    return ka < kb || (ka == kb && a < b);
  };
  if (work && sizeof(K) <= 4) {
    for (size_t i = 0; i < cols; ++i)
      work[i] = int64_t((uint64_t(int64_t(c.enc(row[i]))) << 32) | uint64_t(i));
    select_k(work, cols, k, LessNatural());
    seq_sort_keys(work, k);
    for (size_t j = 0; j < k; ++j) idx[j] = work[j] & int64_t(0xFFFFFFFF);
  } else if (work) {
    for (size_t i = 0; i < cols; ++i) work[i] = int64_t(i);
    select_k(work, cols, k, less_idx);
    intro_sort(work, k, less_idx);
    for (size_t j = 0; j < k; ++j) idx[j] = work[j];
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
  if (!sorted) intro_sort(idx, k, LessNatural());
  for (size_t j = 0; j < k; ++j) vals[j] = row[idx[j]];
}

template <class Fn> int with_codec(int dtype, unsigned flags, bool for_sort, Fn &&fn) {
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

inline int e_sort_segments(CallCtx &ctx, int dtype, const void *src, void *dst,
                           const Segments &segs, unsigned flags) {
  return with_codec(dtype, flags, true, [&](auto c) {
    using T = typename decltype(c)::T;
    const T *s = static_cast<const T *>(src);
    T *d = static_cast<T *>(dst);
    for_segments(ctx, segs, [&](CallCtx &sub, int64_t i) {
      int64_t b = segs.begin(i);
      sort_copy_impl(sub, c, s + b, d + b, size_t(segs.end(i) - b));
    });
  });
}

inline int e_argsort_segments(CallCtx &ctx, int dtype, const void *data, const Segments &segs,
                              int64_t *out, unsigned flags, bool relative) {
  return with_codec(dtype, flags, false, [&](auto c) {
    using T = typename decltype(c)::T;
    const T *d = static_cast<const T *>(data);
    for_segments(ctx, segs, [&](CallCtx &sub, int64_t i) {
      int64_t b = segs.begin(i), len = segs.end(i) - b;
      argsort_impl(sub, c, d + b, size_t(len), out + b);
      if (!relative)
        for (int64_t j = 0; j < len; ++j) out[b + j] += b;
    });
  });
}

inline int e_topk_rows(CallCtx &ctx, int dtype, const void *data, int64_t rows, int64_t cols,
                       int64_t k, unsigned flags, bool sorted, void *out_values,
                       int64_t *out_indices) {
  return with_codec(dtype, flags, false, [&](auto c) {
    using T = typename decltype(c)::T;
    const T *d = static_cast<const T *>(data);
    T *v = static_cast<T *>(out_values);
    if (k == 0 || rows == 0) return;
    int T_ = (on(ctx, KWKER_ALGO_PARALLEL) && size_t(rows * cols) >= kParallelMin && rows > 1)
                 ? ctx.threads : 1;
    if (T_ > rows) T_ = int(rows);
    int64_t next = 0;
    auto task = [&](int) {
      Scratch<int64_t> work{size_t(cols)};
      for (;;) {
        int64_t r = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
        if (r >= rows) return;
        topk_row(c, d + r * cols, size_t(cols), size_t(k), sorted, v + r * k,
                 out_indices + r * k, work.ptr);
      }
    };
    parallel_tasks(ctx, T_, task);
  });
}

inline const EngineTable &make_table(const char *name) {
  static const EngineTable table = {name,           &e_sort_copy,         &e_argsort,
                                    &e_sort_segments, &e_argsort_segments, &e_topk_rows};
  return table;
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
