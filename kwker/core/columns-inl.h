// Top-k down the columns of (outer, rows, cols) matrices, without transposing them:
// torch.topk(x, k, dim=0), kwker.topk(a, k, axis=0).
//
// Small k (up to kColsDirectMaxK, and small beside the column's length: cols_direct) is
// selected where the keys lie. A chunk of up to kColsChunk
// neighbouring columns keeps, per column, its k best keys and their rows, sorted, in L1; each
// row of the chunk is then one load, one encode and one compare against the columns' k-th best
// key (loops that vectorise on every engine), and only the rare columns whose key beats it
// are inserted (by a blend down the k levels when many are, as on rising data, one column at
// a time otherwise). Every input line is read once, in order. Before, the columns were
// gathered into rows and selected there: torch.topk(x, 5, dim=0) of (1000, 1000) int64 took
// 1.35x torch's time on the Zen 3 (benchmarks.md, 2026-12-06); of (100000, 64) 10 ms where
// in place takes 2.9.
//
// Rows are taken in order and a key only enters past the keys it does not beat, so ties go to
// the lowest row: the same k as the first k of the column's stable argsort (topk_rows on the
// transposed matrix). Larger k gathers blocks of columns into rows and selects each there.
//
// Included by driver-inl.h after select-inl.h (topk_row_select).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <cstring>
#include <limits>

#include "core/engine_ns-inl.h"
#include "core/memory-inl.h"
#include "core/parallel-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

constexpr size_t kColsDirectMaxK = 16;
// 64 columns: a row of a chunk is 1-8 registers, and 16 levels of 64 keys and rows take 16 KiB.
constexpr size_t kColsChunk = 64;
// Gathered blocks: about this many bytes of keys, at least kColsGatherMin columns.
constexpr size_t kColsGatherBytes = size_t(32) << 10;
constexpr size_t kColsGatherMin = 8;

// The k best keys of each column of a chunk and the rows they came from, level q sorted
// before level q + 1 (key, then row). W: the key widened to 32 or 64 bits, rows in the same
// width so the blends of keys and rows run in the same lanes.
template <class W> struct ColsBest {
  alignas(64) W key[kColsDirectMaxK][kColsChunk];
  alignas(64) W row[kColsDirectMaxK][kColsChunk];
};

// Top-k of the n columns at src (row r of column j at src[r * ld + j]), written to vals / idx
// at level q, column j: [q * out_ld + j].
template <class W, class Codec>
void topk_cols_direct(const Codec c, const typename Codec::T *src, size_t rows, size_t ld,
                      size_t n, size_t k, bool sorted, typename Codec::T *vals, int64_t *idx,
                      size_t out_ld) {
  using T = typename Codec::T;
  ColsBest<W> b;
  alignas(64) W x[kColsChunk], carry[kColsChunk], carry_row[kColsChunk];
  // The first k rows by insertion: a later row goes after the keys it ties with.
  for (size_t r = 0; r < k; ++r) {
    const T *line = src + r * ld;
    for (size_t j = 0; j < n; ++j) {
      const W v = W(c.enc(line[j]));
      size_t p = r;
      for (; p > 0 && v < b.key[p - 1][j]; --p) {
        b.key[p][j] = b.key[p - 1][j];
        b.row[p][j] = b.row[p - 1][j];
      }
      b.key[p][j] = v;
      b.row[p][j] = W(r);
    }
  }
  const W *kth = b.key[k - 1];
  alignas(64) uint8_t in[kColsChunk];  // 1 where row r's key beats its column's k-th best
  // Row r, its keys encoded in xr[0..n), into the columns' k best.
  auto enter = [&](size_t r, const W *xr) {
    size_t count = 0;
    for (size_t j = 0; j < n; ++j) in[j] = uint8_t(xr[j] < kth[j]);
    for (size_t j = 0; j < n; ++j) count += in[j];
    if (count == 0) return;
    if (count * 4 >= n) {
      // Many columns at once: each level takes the row's key where it beats the level's
      // (compared with the row's own key: the levels are sorted, so once it beats one it
      // beats all below) and hands the displaced key one level down.
      for (size_t j = 0; j < n; ++j) {
        carry[j] = xr[j];
        carry_row[j] = W(r);
      }
      for (size_t q = 0; q < k; ++q) {
        W *kq = b.key[q], *rq = b.row[q];
        for (size_t j = 0; j < n; ++j) {
          const bool m = xr[j] < kq[j];
          const W ok = kq[j], orow = rq[j];
          kq[j] = m ? carry[j] : ok;
          rq[j] = m ? carry_row[j] : orow;
          carry[j] = m ? ok : carry[j];
          carry_row[j] = m ? orow : carry_row[j];
        }
      }
      return;
    }
    // A few: found eight flags at a time (no branch per column), each inserted alone.
    for (size_t u = 0; u < n; u += 8) {
      uint64_t word = 0;
      memcpy(&word, in + u, 8);  // in[] is kColsChunk long; bytes past n are stale
      if (n - u < 8) word &= (uint64_t(1) << (8 * (n - u))) - 1;
      for (; word; word &= word - 1) {
        const size_t j = u + size_t(__builtin_ctzll(word)) / 8;
        const W v = xr[j];
        size_t p = k - 1;
        for (; p > 0 && v < b.key[p - 1][j]; --p) {
          b.key[p][j] = b.key[p - 1][j];
          b.row[p][j] = b.row[p - 1][j];
        }
        b.key[p][j] = v;
        b.row[p][j] = W(r);
      }
    }
  };
  size_t r = k;
  if (n == ld && n * 2 <= kColsChunk) {
    // Narrow matrices (whole rows in one chunk, under 32 columns): m rows at once are one
    // contiguous block, checked in one fixed loop against the k-th best tiled m times (the
    // columns past the block's m rows against the lowest key, which nothing beats); only a
    // block with a candidate goes row by row. Row by row, a row of 10 keys ran scalar.
    const size_t m = kColsChunk / n, P = m * n;
    alignas(64) W tile[kColsChunk];
    auto retile = [&] {
      for (size_t i = 0; i < P; ++i) tile[i] = kth[i % n];
      for (size_t i = P; i < kColsChunk; ++i) tile[i] = std::numeric_limits<W>::min();
    };
    retile();
    // The fixed loop reads kColsChunk keys from row r: only while they lie inside the matrix.
    for (; (r * n + kColsChunk) <= rows * n; r += m) {
      const T *block = src + r * n;
      W hit = 0;
      for (size_t i = 0; i < kColsChunk; ++i) {
        x[i] = W(c.enc(block[i]));
        hit |= W(x[i] < tile[i]);
      }
      if (!hit) continue;
      for (size_t i = 0; i < m; ++i) enter(r + i, x + i * n);
      retile();
    }
  }
  for (; r < rows; ++r) {
    const T *line = src + r * ld;
    for (size_t j = 0; j < n; ++j) x[j] = W(c.enc(line[j]));
    enter(r, x);
  }
  if (!sorted) {
    // The same k in row order: the rows of a column are distinct, so a plain insertion sort.
    for (size_t j = 0; j < n; ++j)
      for (size_t q = 1; q < k; ++q) {
        const W v = b.row[q][j];
        size_t p = q;
        for (; p > 0 && v < b.row[p - 1][j]; --p) b.row[p][j] = b.row[p - 1][j];
        b.row[p][j] = v;
      }
  }
  for (size_t q = 0; q < k; ++q)
    for (size_t j = 0; j < n; ++j) {
      const size_t r = size_t(b.row[q][j]);
      idx[q * out_ld + j] = int64_t(r);
      vals[q * out_ld + j] = src[r * ld + j];  // the input's bits: NaN payloads, -0.0
    }
}

// Larger k: the n columns copied into rows of `rows` keys (buf, n * rows), each selected as a
// row (topk_row_select), its k results written down the column.
template <class Codec>
void topk_cols_gathered(CallCtx &one, const Codec c, const typename Codec::T *src, size_t rows,
                        size_t ld, size_t n, size_t k, bool sorted, typename Codec::T *vals,
                        int64_t *idx, size_t out_ld, typename Codec::T *buf,
                        typename Codec::T *vbuf, int64_t *ibuf, int64_t *work) {
  for (size_t r = 0; r < rows; ++r) {
    const typename Codec::T *line = src + r * ld;
    for (size_t j = 0; j < n; ++j) buf[j * rows + r] = line[j];
  }
  for (size_t j = 0; j < n; ++j) {
    topk_row_select(one, 1, c, buf + j * rows, rows, k, sorted, vbuf, ibuf, work);
    for (size_t q = 0; q < k; ++q) {
      vals[q * out_ld + j] = vbuf[q];
      idx[q * out_ld + j] = ibuf[q];
    }
  }
}

// Without scratch (the gathered path's buffers refused): each column's k best rows kept as a
// bounded max-heap in its own output slots (level q at idx[q * out_ld]), then sorted there.
template <class Codec>
void topk_col_heap(const Codec c, const typename Codec::T *src, size_t rows, size_t ld, size_t k,
                   bool sorted, typename Codec::T *vals, int64_t *idx, size_t out_ld) {
  using K = typename Codec::K;
  auto less = [&](int64_t a, int64_t b) {
    const K ka = c.enc(src[size_t(a) * ld]), kb = c.enc(src[size_t(b) * ld]);
    return ka < kb || (ka == kb && a < b);
  };
  auto at = [&](size_t q) -> int64_t & { return idx[q * out_ld]; };
  auto sift = [&](size_t s, size_t n, auto before) {
    for (;;) {
      size_t ch = 2 * s + 1;
      if (ch >= n) return;
      if (ch + 1 < n && before(at(ch), at(ch + 1))) ++ch;
      if (!before(at(s), at(ch))) return;
      const int64_t t = at(s);
      at(s) = at(ch);
      at(ch) = t;
      s = ch;
    }
  };
  auto heap_sorted = [&](auto before) {
    for (size_t s = k / 2; s-- > 0;) sift(s, k, before);
    for (size_t end = k - 1; end > 0; --end) {
      const int64_t t = at(0);
      at(0) = at(end);
      at(end) = t;
      sift(0, end, before);
    }
  };
  for (size_t q = 0; q < k; ++q) at(q) = int64_t(q);
  for (size_t s = k / 2; s-- > 0;) sift(s, k, less);
  for (size_t r = k; r < rows; ++r)
    if (less(int64_t(r), at(0))) {
      at(0) = int64_t(r);
      sift(0, k, less);
    }
  if (sorted) heap_sorted(less);
  else heap_sorted([](int64_t a, int64_t b) { return a < b; });
  for (size_t q = 0; q < k; ++q) vals[q * out_ld] = src[size_t(at(q)) * ld];
}

// Whether k of a column of `rows` keys are selected in place. A random column's key beats its
// k-th best about k (1 + ln(rows / k)) times, each insertion costing about k steps; beyond a
// quarter of a step per key, gathering the columns into rows costs less (1,000 rows: in place
// 0.35 ms at k = 4, 0.52 at k = 8, gathered 0.45-0.48 at any k; 200 rows: level at k = 4;
// torch.topk along dim 0 of 1,000 columns, two threads, Zen 5). Data whose every key enters
// (a rising column) takes the blend, about k / 8 operations per key: bounded either way.
inline bool cols_direct(size_t k, size_t rows) {
  return k <= kColsDirectMaxK &&
         double(k * k) * (1.0 + std::log(double(rows) / double(k))) <= double(rows) / 4;
}

inline int e_topk_cols(CallCtx &ctx, int dtype, const void *data, int64_t outer, int64_t rows,
                       int64_t cols, int64_t k, unsigned flags, bool sorted, void *out_values,
                       int64_t *out_indices) {
  return with_codec(dtype, flags, false, [&](auto c) {
    using Codec = decltype(c);
    using T = typename Codec::T;
    using K = typename Codec::K;
    if (k == 0 || outer == 0 || cols == 0) return;
    const T *d = static_cast<const T *>(data);
    T *v = static_cast<T *>(out_values);
    const size_t R = size_t(rows), C = size_t(cols), kk = size_t(k);
    const bool direct = cols_direct(kk, R);
    size_t chunk;
    if (direct) {
      chunk = kColsChunk;
    } else {
      chunk = kColsGatherBytes / (R * sizeof(T));
      chunk = chunk < kColsGatherMin ? kColsGatherMin : chunk;
    }
    const bool big = on(ctx, KWKER_ALGO_PARALLEL) && ctx.threads > 1 &&
                     size_t(outer) * R * C >= kParallelMin;
    // Enough chunks for every thread (in whole 64-byte lines where the columns allow); not
    // narrow matrices, whose whole rows in one chunk take topk_cols_direct's blocks of rows.
    if (big && !(direct && C * 2 <= kColsChunk) &&
        size_t(outer) * ((C + chunk - 1) / chunk) < size_t(ctx.threads) * 2) {
      const size_t line = 64 / sizeof(T) > 0 ? 64 / sizeof(T) : 1;
      size_t want = (C + size_t(ctx.threads) * 2 - 1) / (size_t(ctx.threads) * 2);
      want = (want + line - 1) / line * line;
      chunk = want < chunk ? want : chunk;
    }
    chunk = chunk < C ? chunk : C;
    const size_t per = (C + chunk - 1) / chunk, tasks = size_t(outer) * per;
    auto run_task = [&](CallCtx &one, size_t t, T *buf, T *vbuf, int64_t *ibuf, int64_t *work) {
      const size_t a = t / per, j0 = (t % per) * chunk;
      const size_t n = C - j0 < chunk ? C - j0 : chunk;
      const T *s = d + a * R * C + j0;
      T *vo = v + a * kk * C + j0;
      int64_t *io = out_indices + a * kk * C + j0;
      if (direct) {
        if constexpr (sizeof(K) <= 4) {
          if (R <= size_t(INT32_MAX)) {
            topk_cols_direct<int32_t>(c, s, R, C, n, kk, sorted, vo, io, C);
            return;
          }
        }
        topk_cols_direct<int64_t>(c, s, R, C, n, kk, sorted, vo, io, C);
      } else if (buf && vbuf && ibuf) {
        topk_cols_gathered(one, c, s, R, C, n, kk, sorted, vo, io, C, buf, vbuf, ibuf, work);
      } else {
        for (size_t j = 0; j < n; ++j) topk_col_heap(c, s + j, R, C, kk, sorted, vo + j, io + j, C);
      }
    };
    int T_ = big ? ctx.threads : 1;
    if (size_t(T_) > tasks) T_ = int(tasks);
    size_t next = 0;
    auto task = [&](int) {
      CallCtx one{1, ctx.algos, 1};
      auto take = [&](T *buf, T *vbuf, int64_t *ibuf, int64_t *work) {
        for (;;) {
          const size_t t = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
          if (t >= tasks) return;
          run_task(one, t, buf, vbuf, ibuf, work);
        }
      };
      if (direct) {
        take(nullptr, nullptr, nullptr, nullptr);
        return;
      }
      // The gathered path's buffers (a block of columns as rows, one column's results, the
      // selection's words); refused, the columns take the heap (topk_col_heap).
      Scratch<T> buf{chunk * R}, vbuf{kk};
      Scratch<int64_t> ibuf{kk}, work{R};
      take(buf.ptr, vbuf.ptr, ibuf.ptr, work.ptr);
    };
    if (T_ <= 1) task(0);
    else parallel_tasks(ctx, T_, task);
  });
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
