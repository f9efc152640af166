// Top-k and k-th value of long rows by a sampled threshold: a strided sample of the row's keys
// gives a key t that at least k keys are expected not to exceed; one pass then
// collects the (key, index) words of the keys <= t (blocks without a candidate cost one
// vectorised compare), and the selection runs on those few candidates only. When the sample
// was wrong (fewer than k candidates) the row takes the full path: every key packed, then the
// selection. The k-th value uses a band [t_lo, t_hi] around the expected rank instead, and
// counts the keys below it.
//
// Results are the same as the full path's: the first k words of the stable order, so ties go
// to the lowest index. A single long row (torch.topk of a 1-D tensor) splits its pass over the
// threads.
//
// Included by driver-inl.h after topk_row, which serves the short rows and the full path.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/engine_ns-inl.h"
#include "core/pack-inl.h"
#include "core/parallel-inl.h"
#include "core/scalar-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

// Rows shorter than this, or k above cols / kSelectRatio, take the full path: the sample and
// the extra pass would cost more than they save.
constexpr size_t kSelectMinCols = 2048;
constexpr size_t kSelectRatio = 8;
constexpr size_t kSelectSamples = 4096;
constexpr size_t kSelectBlock = 64;

template <class Codec> struct CandLess {
  Codec c;
  const typename Codec::T *row;
  bool operator()(int64_t a, int64_t b) const {
    if constexpr (sizeof(typename Codec::K) <= 4) {
      return a < b;
    } else {
      const auto ka = c.enc(row[a]), kb = c.enc(row[b]);
      return ka < kb || (ka == kb && a < b);
    }
  }
};
template <class Codec> inline int64_t cand_index(int64_t w) {
  return sizeof(typename Codec::K) <= 4 ? (w & int64_t(0xFFFFFFFF)) : w;
}

// Keys of a strided sample of row[0..n): about n / 64 of them, at least 256 and at most
// kSelectSamples. Returns how many.
template <class Codec>
size_t sample_keys(const Codec c, const typename Codec::T *row, size_t n, typename Codec::K *out) {
  size_t S = n / 64;
  S = S < 256 ? 256 : S > kSelectSamples ? kSelectSamples : S;
  if (S > n / 8) S = n / 8;
  const size_t step = n / S;
  for (size_t s = 0; s < S; ++s) out[s] = c.enc(row[step * s + step / 2]);
  return S;
}

// The r-th smallest of a[0..S) (0-based), by a selection (cheaper than sorting the sample,
// which cost more than the whole candidate pass on rows of 50,000 keys). Reorders a.
template <class K> K sample_at(K *a, size_t S, size_t r) {
  select_k(a, S, r + 1, LessNatural());
  K best = a[0];
  for (size_t j = 1; j <= r; ++j) best = a[j] > best ? a[j] : best;
  return best;
}

// Sample rank whose key about `rank` keys of the row do not exceed, with a margin of a few
// standard deviations on the side given by dir (+1 above, -1 below).
inline long sample_rank(size_t rank, size_t n, size_t S, int dir) {
  const double r = double(rank) * double(S) / double(n);
  return long(r + dir * (3.0 * std::sqrt(r) + 3.0));
}

// Appends to out the words of row[lo..hi) whose key lies in [t_lo, t_hi]; returns how many,
// and adds to *below the count of keys < t_lo.
template <bool kBand, class Codec>
size_t collect_band(const Codec c, const typename Codec::T *row, size_t lo, size_t hi,
                    typename Codec::K t_lo, typename Codec::K t_hi, int64_t *out,
                    size_t *below) {
  using K = typename Codec::K;
  alignas(64) K key[kSelectBlock];
  alignas(64) uint8_t in[kSelectBlock];  // 1 where the key is a candidate
  size_t m = 0, b = 0;
  for (size_t s = lo; s < hi; s += kSelectBlock) {
    const size_t len = s + kSelectBlock < hi ? kSelectBlock : hi - s;
    // Separate simple loops, byte flags and a lane-wide counter: each of them vectorises.
    for (size_t j = 0; j < len; ++j) key[j] = c.enc(row[s + j]);
    for (size_t j = 0; j < len; ++j)
      in[j] = kBand ? uint8_t((key[j] >= t_lo) & (key[j] <= t_hi)) : uint8_t(key[j] <= t_hi);
    for (size_t j = len; j < kSelectBlock; ++j) in[j] = 0;
    if constexpr (kBand) {
      K under = 0;
      for (size_t j = 0; j < len; ++j) under = K(under + K(key[j] < t_lo));
      b += size_t(typename std::make_unsigned<K>::type(under));
    }
    // Eight flags at a time: most words are zero; the others are compacted without branches.
    for (size_t u = 0; u < kSelectBlock; u += 8) {
      uint64_t word;
      memcpy(&word, in + u, 8);
      if (!word) continue;
      for (size_t j = u; j < u + 8; ++j) {
        if constexpr (sizeof(K) <= 4) out[m] = pack32(key[j], s + j);
        else out[m] = int64_t(s + j);
        m += in[j];
      }
    }
  }
  *below += b;
  return m;
}

template <class Codec> constexpr typename Codec::K lowest_key() {
  using K = typename Codec::K;
  return K(K(1) << (8 * sizeof(K) - 1));
}

// Candidate words of the band of row[0..n) in work[0..m), collected by `parts` tasks (each
// writes into its own chunk of work, then the chunks are closed up). Returns m.
template <class Codec>
size_t collect_parallel(CallCtx &ctx, int parts, const Codec c, const typename Codec::T *row,
                        size_t n, typename Codec::K t_lo, typename Codec::K t_hi,
                        int64_t *work, size_t *below) {
  size_t got[kMaxBuckets], under[kMaxBuckets];
  auto task = [&](int t) {
    const size_t lo = chunk_begin(n, parts, t), hi = chunk_begin(n, parts, t + 1);
    under[t] = 0;
    got[t] = lowest_key<Codec>() == t_lo
                 ? collect_band<false>(c, row, lo, hi, t_lo, t_hi, work + lo, &under[t])
                 : collect_band<true>(c, row, lo, hi, t_lo, t_hi, work + lo, &under[t]);
  };
  if (parts > 1) parallel_tasks(ctx, parts, task);
  else task(0);
  size_t m = 0;
  *below = 0;
  for (int t = 0; t < parts; ++t) {
    const size_t lo = chunk_begin(n, parts, t);
    if (m != lo) memmove(work + m, work + lo, got[t] * sizeof(int64_t));
    m += got[t];
    *below += under[t];
  }
  return m;
}

// The first k words of the stable order of a long row, sorted, into idx (indices); true when the
// sampled threshold held, false when the caller must take the full path.
template <class Codec>
bool topk_by_threshold(CallCtx &ctx, int parts, const Codec c, const typename Codec::T *row,
                       size_t cols, size_t k, int64_t *idx, int64_t *work) {
  using K = typename Codec::K;
  K sample[kSelectSamples];
  const size_t S = sample_keys(c, row, cols, sample);
  const long r = sample_rank(k, cols, S, +1);
  if (r >= long(S)) return false;
  const K lowest = lowest_key<Codec>();
  size_t below = 0;
  const size_t m = collect_parallel(ctx, parts, c, row, cols, lowest,
                                    sample_at(sample, S, size_t(r)), work, &below);
  if (m < k) return false;
  // The candidates through the vector selection and sort (smallest_sorted), as the full path's
  // words: a scalar select_k and introsort of them ran at 0.36-0.9x NumPy's argpartition and
  // torch.topk once k reached n / 16 (float64 rows of 1e6 with k = 125,000: 25 ms).
  if constexpr (sizeof(K) <= 4) {
    smallest_sorted(work, m, k);  // exact (key << 32 | index) words
    for (size_t j = 0; j < k; ++j) idx[j] = work[j] & int64_t(0xFFFFFFFF);
  } else {
    // The candidates' indices become Pack64 words over the candidates' own key range, which
    // the threshold narrows (fewer key bits dropped than over the whole row).
    uint64_t lo = ~uint64_t(0), hi = 0;
    for (size_t j = 0; j < m; ++j) {
      const uint64_t u = uint64_t(c.enc(row[work[j]])) ^ kSign64;
      lo = u < lo ? u : lo;
      hi = u > hi ? u : hi;
    }
    const Pack64 p = make_pack64(lo, hi, cols);
    for (size_t j = 0; j < m; ++j) work[j] = p.pack(int64_t(c.enc(row[work[j]])), size_t(work[j]));
    smallest_sorted(work, m, k);
    if (p.drop) settle_dropped_words(c, row, p, work, m, k);
    const int64_t mask = p.index_mask();
    for (size_t j = 0; j < k; ++j) idx[j] = work[j] & mask;
  }
  return true;
}

// Top-k of one row (the first k of its stable order; sorted == false: the same set in index
// order), through the threshold where it pays, else topk_row.
template <class Codec>
void topk_row_select(CallCtx &ctx, int parts, const Codec c, const typename Codec::T *row,
                     size_t cols, size_t k, bool sorted, typename Codec::T *vals, int64_t *idx,
                     int64_t *work) {
  if (work && cols >= kSelectMinCols && k * kSelectRatio <= cols &&
      topk_by_threshold(ctx, parts, c, row, cols, k, idx, work)) {
    if (!sorted) seq_sort_keys(idx, k);  // distinct indices: the vector sort
    for (size_t j = 0; j < k; ++j) vals[j] = row[idx[j]];
    return;
  }
  topk_row(c, row, cols, k, sorted, vals, idx, work);
}

// Position `rank` of the stable order of row[0..n), through packed words in work[0..n) and the
// vector selection (word_at): its index. 64-bit keys take the argsort's Pack64 words; with key
// bits dropped, the words tying on the prefix of the one found are then ordered by full key.
template <class Codec>
int64_t kth_by_words(const Codec c, const typename Codec::T *row, size_t n, size_t rank,
                     int64_t *work) {
  if constexpr (sizeof(typename Codec::K) <= 4) {
    for (size_t i = 0; i < n; ++i) work[i] = pack32(c.enc(row[i]), i);
    return word_at(work, n, rank) & int64_t(0xFFFFFFFF);
  } else {
    const Pack64 p = pack64_words(c, row, n, work);
    const int64_t w = word_at(work, n, rank);
    const int64_t mask = p.index_mask();
    if (!p.drop) return w & mask;
    // Ties on the prefix to the front; the others below w come before the whole group. A
    // counting pass first (it vectorises): w is most often alone in its group.
    const uint64_t tie = uint64_t(1) << p.B;
    size_t ties = 0;
    for (size_t i = 0; i < n; ++i) ties += uint64_t(work[i] ^ w) < tie;
    if (ties == 1) return w & mask;
    size_t below = 0, e = 0;
    for (size_t i = 0; i < n; ++i) {
      const int64_t x = work[i];
      if (uint64_t(x ^ w) < tie) {
        work[i] = work[e];
        work[e++] = x;
      } else {
        below += x < w;
      }
    }
    intro_sort(work, e, LessNatural());  // index order, as sort_dropped_run expects
    sort_dropped_run(c, row, work, e, mask);
    return work[rank - below] & mask;
  }
}

// Position `rank` of the stable order of one row: its index (the value is row[index]).
template <class Codec>
int64_t kth_row(CallCtx &ctx, int parts, const Codec c, const typename Codec::T *row,
                size_t cols, size_t rank, int64_t *work) {
  using K = typename Codec::K;
  const CandLess<Codec> less{c, row};
  if (cols >= kSelectMinCols) {
    K sample[kSelectSamples];
    const size_t S = sample_keys(c, row, cols, sample);
    const long rlo = sample_rank(rank, cols, S, -1), rhi = sample_rank(rank + 1, cols, S, +1);
    // The upper rank first: its selection leaves the smaller keys in front for the lower one.
    const K t_hi = rhi >= long(S) ? K(~(K(1) << (8 * sizeof(K) - 1)))
                                  : sample_at(sample, S, size_t(rhi));
    const K t_lo = rlo <= 0 ? lowest_key<Codec>()
                            : sample_at(sample, rhi >= long(S) ? S : size_t(rhi) + 1, size_t(rlo));
    size_t below = 0;
    const size_t m = collect_parallel(ctx, parts, c, row, cols, t_lo, t_hi, work, &below);
    if (below <= rank && rank < below + m) {
      const size_t want = rank - below;
      select_k(work, m, want + 1, less);
      int64_t best = work[0];
      for (size_t j = 1; j <= want; ++j) best = less(best, work[j]) ? work[j] : best;
      return cand_index<Codec>(best);
    }
  }
  return kth_by_words(c, row, cols, rank, work);
}

// Without scratch: a binary search over the key space for the smallest key t with more than
// rank keys <= t (one counting pass per key bit), then the matching tie in index order.
template <class Codec>
int64_t kth_row_no_scratch(const Codec c, const typename Codec::T *row, size_t cols,
                           size_t rank, size_t stride = 1) {
  using K = typename Codec::K;
  using U = typename std::make_unsigned<K>::type;
  constexpr U kFlip = U(U(1) << (8 * sizeof(K) - 1));
  auto count_le = [&](U t) {  // t: the key as an order-preserving unsigned integer
    size_t m = 0;
    for (size_t i = 0; i < cols; ++i) m += U(U(c.enc(row[i * stride])) ^ kFlip) <= t;
    return m;
  };
  U lo = 0, hi = U(~U(0));
  while (lo < hi) {
    const U mid = U(lo + U(hi - lo) / 2);
    if (count_le(mid) > rank) hi = mid;
    else lo = U(mid + 1);
  }
  const K t = K(U(lo ^ kFlip));
  size_t below = 0;
  for (size_t i = 0; i < cols; ++i) below += c.enc(row[i * stride]) < t;
  for (size_t i = 0, seen = below; i < cols; ++i)
    if (c.enc(row[i * stride]) == t && seen++ == rank) return int64_t(i);
  return 0;  // unreachable: some key ties with t at position rank
}

// Rows in parallel; a single long row splits its candidate pass over the threads instead.
template <class RowFn>
void select_rows(CallCtx &ctx, int64_t rows, int64_t cols, RowFn row_fn) {
  const bool big = on(ctx, KWKER_ALGO_PARALLEL) && rows * cols >= select_parallel_min(rows);
  int T = big && rows > 1 ? ctx.threads : 1;
  if (T > rows) T = int(rows);
  const int inner = big && rows < ctx.threads && size_t(rows * cols) >= kParallelMin
                        ? (ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets) : 1;
  if (T <= 1) {
    Scratch<int64_t> work{size_t(cols)};
    for (int64_t r = 0; r < rows; ++r) row_fn(ctx, inner, r, work.ptr);
    return;
  }
  // Rows claimed in runs (engine.h's kClaimKeys), as for_segments does: one claim a row of 100
  // keys bounced the counter's line between the cores once per 0.2 us of work (top-k of 400 rows
  // of 100 float32 on two threads ran 0.92x one thread).
  const int64_t run = rows_per_claim(cols);
  int64_t next = 0;
  auto task = [&](int) {
    CallCtx one{1, ctx.algos, 1};
    Scratch<int64_t> work{size_t(cols)};
    for (;;) {
      const int64_t r0 = __atomic_fetch_add(&next, run, __ATOMIC_RELAXED);
      if (r0 >= rows) return;
      const int64_t r1 = r0 + run < rows ? r0 + run : rows;
      for (int64_t r = r0; r < r1; ++r) row_fn(one, 1, r, work.ptr);
    }
  };
  parallel_tasks(ctx, T, task);
}

inline int e_topk_rows(CallCtx &ctx, int dtype, const void *data, int64_t rows, int64_t cols,
                       int64_t k, unsigned flags, bool sorted, void *out_values,
                       int64_t *out_indices) {
  return with_codec(dtype, flags, false, [&](auto c) {
    using T = typename decltype(c)::T;
    const T *d = static_cast<const T *>(data);
    T *v = static_cast<T *>(out_values);
    if (k == 0 || rows == 0) return;
    select_rows(ctx, rows, cols, [&](CallCtx &sub, int parts, int64_t r, int64_t *work) {
      topk_row_select(sub, parts, c, d + r * cols, size_t(cols), size_t(k), sorted, v + r * k,
                      out_indices + r * k, work);
    });
  });
}

inline int e_kth_rows(CallCtx &ctx, int dtype, const void *data, int64_t rows, int64_t cols,
                      int64_t rank, unsigned flags, void *out_values, int64_t *out_indices) {
  return with_codec(dtype, flags, false, [&](auto c) {
    using T = typename decltype(c)::T;
    const T *d = static_cast<const T *>(data);
    T *v = static_cast<T *>(out_values);
    if (rows == 0) return;
    select_rows(ctx, rows, cols, [&](CallCtx &sub, int parts, int64_t r, int64_t *work) {
      const T *row = d + r * cols;
      const int64_t i = work ? kth_row(sub, parts, c, row, size_t(cols), size_t(rank), work)
                             : kth_row_no_scratch(c, row, size_t(cols), size_t(rank));
      out_indices[r] = i;
      v[r] = row[i];
    });
  });
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
