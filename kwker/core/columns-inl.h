// Down the columns of (outer, rows, cols) matrices, without transposing them: top-k
// (torch.topk(x, k, dim=0), kwker.topk(a, k, axis=0)), and the sort, stable argsort and k-th
// value (kwker.sort / argsort along an axis before the last, torch.sort / kthvalue along such a
// dim; at the end of this file).
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
// vals may be null (the rows alone).
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
  if (vals)
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

// ---- sort, stable argsort and k-th value down the columns ----
//
// A block of neighbouring columns is gathered into rows in a per-thread buffer (tiles of
// kColsTile rows, so the reads stay on the lines of the tile and the writes run along each row),
// run there by this engine's row kernels on one thread, and its results written back down the
// columns the same way. Every input and output line is touched once, the blocks are claimed as
// threads come free, and no temporary as large as the matrix is made: before, kwker.sort(a,
// axis=0) made two transposed copies through NumPy (one thread) around the row sort, 0.62-1.2x
// np.sort(a, axis=0) (1,000 x 1,000 float32 1.18x, 64 x 16,000 int64 0.62x; Zen 5, two threads),
// and torch.sort along dim 0 gathered its own blocks in the operator library.

constexpr size_t kColsTile = 16;

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols. 2-, 4- and 8-byte keys go through
// register transposes (W x W tiles of the engine's registers, then 256-bit tiles for what is
// left, e.g. a block of 10 columns on AVX-512; 16-bit keys in 16 x 16 tiles of 256 bits: one
// load and one store per register of keys where the scalar loop spent one of each per key; the
// last tile of a ragged side overlaps its neighbour), sides shorter than a tile and 1-byte keys
// through scalar tiles.
// The outer loop runs along the longer side, so that the short side's lines (a block's columns,
// or the rows it writes back) are finished while they are in L1.
template <class T> struct ColTiles {
  template <class S, class Transpose>
  static void cover(const T *src, size_t lds, T *dst, size_t ldd, size_t r0, size_t r1,
                    size_t c0, size_t c1, Transpose transpose, size_t *rf, size_t *cf) {
    using V = typename S::V;
    using I = typename S::T;
    constexpr size_t W = S::W;
    if (r1 - r0 < W || c1 - c0 < W) {  // no whole tile: all of it to the next tier
      *rf = r0;
      *cf = c0;
      return;
    }
    // Every row and column covered: where a side is not a multiple of W its last tile starts W
    // before its end and overlaps the one before it, writing some keys twice with the same
    // values (inside [r0, r1) x [c0, c1), which this call owns) instead of leaving a strip to
    // the scalar loop: a 100 x 10 float32 matrix's two edge columns and four edge rows, one key
    // at a time, were over half of its transposes' time on AVX2.
    *rf = r1;
    *cf = c1;
    auto tile = [&](size_t r, size_t c) {
      V v[W];
      for (size_t i = 0; i < W; ++i)
        v[i] = S::load(reinterpret_cast<const I *>(src + (r + i) * lds + c));
      transpose(v);
      for (size_t i = 0; i < W; ++i)
        S::store(reinterpret_cast<I *>(dst + (c + i) * ldd + r), v[i]);
    };
    // The tile starts along a side: lo, lo + W, ..., then hi - W where the side is ragged.
    auto next_start = [](size_t at, size_t hi) { return at + 2 * W <= hi ? at + W : hi - W; };
    if (r1 - r0 >= c1 - c0) {
      for (size_t r = r0;; r = next_start(r, r1)) {
        for (size_t c = c0;; c = next_start(c, c1)) {
          tile(r, c);
          if (c + W == c1) break;
        }
        if (r + W == r1) break;
      }
    } else {
      for (size_t c = c0;; c = next_start(c, c1)) {
        for (size_t r = r0;; r = next_start(r, r1)) {
          tile(r, c);
          if (r + W == r1) break;
        }
        if (c + W == c1) break;
      }
    }
  }
};

#if defined(__AVX2__)
// 256-bit loads and stores of 32- or 64-bit lanes, for the tiles of ColTiles on both engines.
template <class I> struct Lanes256 {
  using T = I;
  using V = __m256i;
  static constexpr size_t W = 32 / sizeof(I);
  static KWKER_VQ_INLINE V load(const I *p) { return _mm256_loadu_si256((const __m256i *)p); }
  static KWKER_VQ_INLINE void store(I *p, V v) { _mm256_storeu_si256((__m256i *)p, v); }
};
#endif

#if defined(__SSE4_2__) || defined(__AVX2__)
// 128-bit loads and stores of 16-bit lanes, and their 8 x 8 transpose (three rounds of unpacks):
// 16-bit blocks narrower than a 256-bit register's 16 lanes (a matrix of 10 columns).
struct Lanes128x16 {
  using T = int16_t;
  using V = __m128i;
  static constexpr size_t W = 8;
  static KWKER_VQ_INLINE V load(const T *p) { return _mm_loadu_si128((const __m128i *)p); }
  static KWKER_VQ_INLINE void store(T *p, V v) { _mm_storeu_si128((__m128i *)p, v); }
};
KWKER_VQ_INLINE void transpose_8x8_epi16(__m128i *r) {
  __m128i a[8], b[8];
  for (int i = 0; i < 4; ++i) {  // a[2i]: columns 0-3 of rows 2i, 2i + 1, interleaved; a[2i+1]: 4-7
    a[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h)  // b[4h + q]: columns 2q, 2q + 1 of rows 4h..4h+3
    for (int q = 0; q < 2; ++q) {
      b[4 * h + 2 * q] = _mm_unpacklo_epi32(a[4 * h + q], a[4 * h + 2 + q]);
      b[4 * h + 2 * q + 1] = _mm_unpackhi_epi32(a[4 * h + q], a[4 * h + 2 + q]);
    }
  for (int q = 0; q < 4; ++q) {  // column 2q, then 2q + 1, of all eight rows
    r[2 * q] = _mm_unpacklo_epi64(b[q], b[4 + q]);
    r[2 * q + 1] = _mm_unpackhi_epi64(b[q], b[4 + q]);
  }
}
#endif

template <class T>
void transpose_block(const T *src, size_t lds, T *dst, size_t ldd, size_t rows, size_t cols) {
  auto scalar = [&](size_t r0, size_t r1, size_t c0, size_t c1) {
    for (size_t rt = r0; rt < r1; rt += kColsTile) {
      const size_t re = rt + kColsTile < r1 ? rt + kColsTile : r1;
      for (size_t c = c0; c < c1; ++c)
        for (size_t r = rt; r < re; ++r) dst[c * ldd + r] = src[r * lds + c];
    }
  };
  // [0, rows) x [0, cols) minus what the register tiles covered: [0, rf) x [cf, cols) and
  // [rf, rows) x [0, cols), each through the next tier.
  auto rest = [&](size_t rf, size_t cf, auto next) {
    next(0, rf, cf, cols);
    next(rf, rows, 0, cols);
  };
#if defined(__SSE4_2__) || defined(__AVX2__)
  if constexpr (sizeof(T) == 2) {
    auto tiles128 = [&](size_t r0, size_t r1, size_t c0, size_t c1) {
      size_t rf, cf;
      ColTiles<T>::template cover<Lanes128x16>(src, lds, dst, ldd, r0, r1, c0, c1,
                                               transpose_8x8_epi16, &rf, &cf);
      scalar(r0, rf, cf, c1);
      scalar(rf, r1, c0, c1);
    };
#if defined(__AVX2__)
    size_t rf, cf;  // 16 x 16 tiles of 256-bit registers, then 8 x 8 of 128 bits
    ColTiles<T>::template cover<Lanes256<int16_t>>(
        src, lds, dst, ldd, 0, rows, 0, cols, [](__m256i *v) { vq::transpose_16x16_epi16(v); },
        &rf, &cf);
    rest(rf, cf, tiles128);
#else
    tiles128(0, rows, 0, cols);
#endif
    return;
  }
#endif
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    using I = typename std::conditional<sizeof(T) == 4, int32_t, int64_t>::type;
    using S = vq::Ops<I>;
    if constexpr (vq::TransposedNetwork<S>::value) {
#if defined(__AVX2__)
      auto tiles256 = [&](size_t r0, size_t r1, size_t c0, size_t c1) {
        size_t rf, cf;
        auto tr = [](__m256i *v) {
          if constexpr (sizeof(T) == 4) vq::transpose_8x8_epi32(v);
          else vq::transpose_4x4_epi64(v);
        };
        ColTiles<T>::template cover<Lanes256<I>>(src, lds, dst, ldd, r0, r1, c0, c1, tr, &rf,
                                                 &cf);
        scalar(r0, rf, cf, c1);
        scalar(rf, r1, c0, c1);
      };
#endif
      size_t rf, cf;
      ColTiles<T>::template cover<S>(src, lds, dst, ldd, 0, rows, 0, cols,
                                     [](typename S::V *v) { S::transpose_square(v); }, &rf, &cf);
#if defined(__AVX2__)
      if constexpr (S::W * sizeof(I) > 32) {  // wider registers: 256-bit tiles for the rest
        rest(rf, cf, tiles256);
        return;
      }
#endif
      rest(rf, cf, scalar);
      return;
    }
  }
  scalar(0, rows, 0, cols);
}

// The same split along the longer side over the context's threads (a block that has the call's
// threads to itself: narrow matrices are one block).
template <class T>
void transpose_split(CallCtx &ctx, const T *src, size_t lds, T *dst, size_t ldd, size_t rows,
                     size_t cols) {
  const int parts = want_parallel(ctx, rows * cols)
                        ? (ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets) : 1;
  if (parts <= 1) {
    transpose_block(src, lds, dst, ldd, rows, cols);
    return;
  }
  const bool by_rows = rows >= cols;
  const size_t units = ((by_rows ? rows : cols) + kColsTile - 1) / kColsTile;
  auto task = [&](int t) {
    const size_t a = chunk_begin(units, parts, t) * kColsTile;
    size_t b = chunk_begin(units, parts, t + 1) * kColsTile;
    const size_t end = by_rows ? rows : cols;
    b = b < end ? b : end;
    if (a >= b) return;
    if (by_rows) transpose_block(src + a * lds, lds, dst + a, ldd, b - a, cols);
    else transpose_block(src + a, lds, dst + a * ldd, ldd, rows, b - a);
  };
  parallel_tasks(ctx, parts, task);
}

// dst row j (R keys) = column j of src (R rows, ld apart), for the n columns of a block.
template <class T>
void gather_col_block(CallCtx &ctx, const T *src, size_t R, size_t ld, size_t n, T *dst) {
  transpose_split(ctx, src, ld, dst, R, R, n);
}

// The inverse: column j of dst (R rows, ld apart) = row j of src.
template <class T>
void scatter_col_block(CallCtx &ctx, const T *src, size_t R, size_t n, T *dst, size_t ld) {
  transpose_split(ctx, src, R, dst, ld, n, R);
}

// How the columns split into blocks: `chunk` columns each (about kColsGatherBytes of keys, whole
// cache lines of each row where the columns allow), `per` blocks per matrix. Large calls get at
// least two blocks per thread, so that a thread descheduled part-way leaves little behind.
struct ColBlocks {
  size_t chunk, per, tasks;
  int threads;  // threads that claim blocks
  int inner;    // threads each block's row kernel may use (fewer blocks than threads)
};

inline ColBlocks col_blocks(const CallCtx &ctx, size_t outer, size_t R, size_t C, size_t width) {
  const size_t line = 64 / width;
  size_t chunk = kColsGatherBytes / (R * width);
  chunk = (chunk + line - 1) / line * line;
  chunk = chunk < line ? line : chunk;
  const bool big = on(ctx, KWKER_ALGO_PARALLEL) && ctx.threads > 1 && outer * R * C >= kParallelMin;
  const size_t want_tasks = big ? size_t(ctx.threads) * 2 : 1;
  if (big && outer * ((C + chunk - 1) / chunk) < want_tasks) {
    size_t want = (C + want_tasks - 1) / want_tasks;
    want = (want + line - 1) / line * line;
    chunk = want < chunk ? want : chunk;
  }
  chunk = chunk < C ? chunk : C;
  ColBlocks b;
  b.chunk = chunk;
  b.per = (C + chunk - 1) / chunk;
  b.tasks = outer * b.per;
  b.threads = big ? ctx.threads : 1;
  if (size_t(b.threads) > b.tasks) b.threads = int(b.tasks);
  b.inner = big && b.threads > 0 ? ctx.threads / b.threads : 1;
  return b;
}

// Runs block(sub, bufs, a, j0, n) on every block (matrix a, columns j0..j0+n), claimed in order
// by the threads; sub is a one-thread context (or `inner` threads when the blocks are fewer than
// the threads), bufs each thread's Bufs(args...).
template <class Bufs, class Block, class... Args>
void over_col_blocks(CallCtx &ctx, const ColBlocks &b, size_t C, Block block, Args... args) {
  size_t next = 0;
  int inner_used = 1;  // written by the one thread of a call whose block got `inner` threads
  auto task = [&](int) {
    CallCtx sub{b.inner, ctx.algos, 1};
    Bufs bufs(args...);
    for (;;) {
      const size_t t = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
      if (t >= b.tasks) break;
      const size_t a = t / b.per, j0 = (t % b.per) * b.chunk;
      block(sub, bufs, a, j0, C - j0 < b.chunk ? C - j0 : b.chunk);
    }
    if (b.threads <= 1) inner_used = sub.used_threads;
  };
  if (b.threads <= 1) {
    task(0);
    if (inner_used > ctx.used_threads) ctx.used_threads = inner_used;
  } else {
    parallel_tasks(ctx, b.threads, task);
  }
}

// A block's buffers: on the stack for small calls (no scratch cache lock: a 10 x 10 matrix sorts
// in about a microsecond), else from scratch (null when refused).
constexpr size_t kColsStackBytes = 4096;

// Stable partition of col[0..n) (stride ld): the keys for which keep() holds first, each side in
// its input order. In place by rotations (no scratch), O(n log n) moves.
template <class T, class Pred>
size_t stable_partition_col(T *col, size_t n, size_t ld, Pred keep) {
  if (n <= 1) return n == 1 && keep(col[0]) ? 1 : 0;
  const size_t h = n / 2;
  const size_t a = stable_partition_col(col, h, ld, keep);
  const size_t b = stable_partition_col(col + h * ld, n - h, ld, keep);
  auto reverse = [&](size_t i, size_t j) {  // [i, j)
    for (; i + 1 < j; ++i, --j) {
      const T t = col[i * ld];
      col[i * ld] = col[(j - 1) * ld];
      col[(j - 1) * ld] = t;
    }
  };
  // [a kept][h - a not][b kept][rest not]: the middle two swap places by three reversals.
  reverse(a, h);
  reverse(h, h + b);
  reverse(a, h + b);
  return a + b;
}

// Without scratch: one column's values sorted where they lie (col[r * ld]): NaNs (whose payloads
// the sort keeps in input order) set apart by a stable partition, the rest by a heap sort on the
// encoded keys, which are distinct values wherever they differ in bits.
template <class Codec>
void sort_col_heap(const Codec c, typename Codec::T *col, size_t R, size_t ld) {
  using T = typename Codec::T;
  if constexpr (Codec::kNanPayload) {
    const bool first = c.nans_first();
    const size_t kept = stable_partition_col(col, R, ld, [&](T x) { return c.is_nan(x) == first; });
    if (first) col += kept * ld;
    R = first ? R - kept : kept;
  }
  auto less = [&](T x, T y) { return c.enc(x) < c.enc(y); };
  auto sift = [&](size_t s, size_t n) {
    for (;;) {
      size_t ch = 2 * s + 1;
      if (ch >= n) return;
      if (ch + 1 < n && less(col[ch * ld], col[(ch + 1) * ld])) ++ch;
      if (!less(col[s * ld], col[ch * ld])) return;
      const T t = col[s * ld];
      col[s * ld] = col[ch * ld];
      col[ch * ld] = t;
      s = ch;
    }
  };
  for (size_t s = R / 2; s-- > 0;) sift(s, R);
  for (size_t end = R; end-- > 1;) {
    const T t = col[0];
    col[0] = col[end * ld];
    col[end * ld] = t;
    sift(0, end);
  }
}

// Every column of `outer` (R x C) matrices sorted: vals (null: indices only) the sorted values,
// idx (null: values only) the rows of the stable order, both laid out like src. vals may be src
// when idx is null (each block is gathered before its results are written).
inline int e_sort_cols(CallCtx &ctx, int dtype, const void *src, void *vals, int64_t *idx,
                       int64_t outer, int64_t rows, int64_t cols, unsigned flags) {
  const bool values_only = idx == nullptr;
  return with_codec(dtype, flags, values_only, [&](auto c) {
    using Codec = decltype(c);
    using T = typename Codec::T;
    if (outer == 0 || rows == 0 || cols == 0) return;
    const T *s = static_cast<const T *>(src);
    T *v = static_cast<T *>(vals);
    const size_t R = size_t(rows), C = size_t(cols);
    const ColBlocks b = col_blocks(ctx, size_t(outer), R, C, sizeof(T));
    struct Bufs {
      SmallBuffer<T, kColsStackBytes / 8> keys, sorted;
      SmallBuffer<int64_t, kColsStackBytes / 8> order;
      Bufs(size_t nk, size_t nv, size_t ni) : keys(nk), sorted(nv), order(ni) {}
    };
    const size_t nb = b.chunk * R;
    over_col_blocks<Bufs>(
        ctx, b, C,
        [&](CallCtx &sub, Bufs &bufs, size_t a, size_t j0, size_t n) {
          const T *in = s + a * R * C + j0;
          T *vo = v ? v + a * R * C + j0 : nullptr;
          int64_t *io = idx ? idx + a * R * C + j0 : nullptr;
          T *keys = bufs.keys.ptr;
          const Segments segs{nullptr, int64_t(n), int64_t(R)};
          if (keys && bufs.sorted.ptr && bufs.order.ptr) {
            gather_col_block(sub, in, R, C, n, keys);
            if (!io) {
              e_sort_segments(sub, dtype, keys, keys, segs, flags);
              scatter_col_block(sub, keys, R, n, vo, C);
              return;
            }
            if (vo) {
              e_sort_pairs_segments(sub, dtype, keys, bufs.sorted.ptr, bufs.order.ptr, segs,
                                    flags);
              scatter_col_block(sub, bufs.sorted.ptr, R, n, vo, C);
            } else {
              e_argsort_segments(sub, dtype, keys, segs, bufs.order.ptr, flags, true);
            }
            scatter_col_block(sub, bufs.order.ptr, R, n, io, C);
            return;
          }
          // The scratch limit refused the buffers: each column where it lies.
          for (size_t j = 0; j < n; ++j) {
            if (io) {
              topk_col_heap(c, in + j, R, C, R, true, vo ? vo + j : nullptr, io + j, C);
            } else {
              if (vo != in)
                for (size_t r = 0; r < R; ++r) vo[r * C + j] = in[r * C + j];
              sort_col_heap(c, vo + j, R, C);
            }
          }
        },
        nb, v && idx ? nb : 0, idx ? nb : 0);
  });
}

// Position `rank` of every column's stable order: one value and one row per column, laid out
// (outer, cols).
inline int e_kth_cols(CallCtx &ctx, int dtype, const void *data, int64_t outer, int64_t rows,
                      int64_t cols, int64_t rank, unsigned flags, void *out_values,
                      int64_t *out_indices) {
  return with_codec(dtype, flags, false, [&](auto c) {
    using Codec = decltype(c);
    using T = typename Codec::T;
    if (outer == 0 || rows == 0 || cols == 0) return;
    const T *s = static_cast<const T *>(data);
    T *v = static_cast<T *>(out_values);
    const size_t R = size_t(rows), C = size_t(cols);
    const ColBlocks b = col_blocks(ctx, size_t(outer), R, C, sizeof(T));
    struct Bufs {
      SmallBuffer<T, kColsStackBytes / 8> keys, val;
      SmallBuffer<int64_t, 64> row;
      Bufs(size_t nk, size_t n) : keys(nk), val(n), row(n) {}
    };
    over_col_blocks<Bufs>(
        ctx, b, C,
        [&](CallCtx &sub, Bufs &bufs, size_t a, size_t j0, size_t n) {
          const T *in = s + a * R * C + j0;
          T *vo = v + a * C + j0;
          int64_t *io = out_indices + a * C + j0;
          if (bufs.keys.ptr && bufs.val.ptr && bufs.row.ptr) {
            gather_col_block(sub, in, R, C, n, bufs.keys.ptr);
            e_kth_rows(sub, dtype, bufs.keys.ptr, int64_t(n), rows, rank, flags, bufs.val.ptr,
                       bufs.row.ptr);
            for (size_t j = 0; j < n; ++j) {
              vo[j] = bufs.val.ptr[j];
              io[j] = bufs.row.ptr[j];
            }
            return;
          }
          for (size_t j = 0; j < n; ++j) {
            const int64_t r = kth_row_no_scratch(c, in + j, R, size_t(rank), C);
            io[j] = r;
            vo[j] = in[size_t(r) * C + j];
          }
        },
        b.chunk * R, b.chunk);
  });
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
