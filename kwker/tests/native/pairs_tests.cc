// torch's sort family in the core, against the scalar reference on every engine this CPU runs:
// the fused pair sort (kwker_sort_pairs_rows: values bit for bit equal to src[idx], indices of
// the stable order), the selection top-k and the k-th value (kwker_kth_rows), under every order
// mode including KWKER_NAN_LARGEST (torch's: NaN largest, -0.0 tying with 0.0). Sizes cross every
// threshold of these paths: register networks, the 16-bit packing limit, counting sorts, the
// exact and the dropped-bit 64-bit packing, the LSD radix, the sampled selection (2048 columns,
// k up to cols / 8) and the thread threshold; also with radix and parallel off and without
// scratch (every fallback). The same down the columns of matrices (kwker_topk_cols,
// kwker_sort_cols, kwker_kth_cols).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "dispatch/reference.h"
#include "kwker/kwker.h"
#include "tests/native/harness.h"

using namespace harness;

namespace {

using kwker::ref::dtype_size;

const unsigned kModes[] = {0u,
                           KWKER_DESCENDING,
                           KWKER_NANS_FIRST,
                           KWKER_DESCENDING | KWKER_NANS_FIRST,
                           KWKER_NAN_LARGEST,
                           KWKER_NAN_LARGEST | KWKER_DESCENDING,
                           KWKER_NAN_LARGEST | KWKER_DESCENDING | KWKER_NANS_FIRST};

std::string mode_label(unsigned flags) {
  std::string s;
  if (flags & KWKER_DESCENDING) s += " desc";
  if (flags & KWKER_NANS_FIRST) s += " nans_first";
  if (flags & KWKER_NAN_LARGEST) s += " nan_largest";
  return s;
}

// Per-row reference: the stable argsort and the values it picks (bit for bit from src).
struct PairRef {
  std::vector<int64_t> idx;
  std::vector<uint8_t> vals;
  PairRef(int dtype, const std::vector<uint8_t> &data, int64_t rows, int64_t cols, unsigned flags)
      : idx(size_t(rows * cols)), vals(data.size()) {
    const int w = dtype_size(dtype);
    for (int64_t r = 0; r < rows; ++r) {
      kwker::ref::argsort(dtype, data.data() + r * cols * w, cols, idx.data() + r * cols, flags);
      for (int64_t j = 0; j < cols; ++j)
        std::memcpy(vals.data() + (r * cols + j) * w,
                    data.data() + (r * cols + idx[size_t(r * cols + j)]) * w, size_t(w));
    }
  }
};

void check_pairs_now(int dtype, const std::vector<uint8_t> &data, int64_t rows, int64_t cols,
                     unsigned flags, const PairRef &want, int threads) {
  const int w = dtype_size(dtype);
  const int64_t n = rows * cols;
  Guarded v(size_t(n * w)), i(size_t(n * 8));
  int rc = kwker_sort_pairs_rows(dtype, data.data(), v.data(), reinterpret_cast<int64_t *>(i.data()),
                                 rows, cols, flags, threads);
  check(rc == KWKER_OK && v.intact() && i.intact() &&
            (n == 0 || (std::memcmp(i.data(), want.idx.data(), size_t(n * 8)) == 0 &&
                        std::memcmp(v.data(), want.vals.data(), size_t(n * w)) == 0)),
        "sort_pairs_rows");
  Guarded only(size_t(n * 8));
  rc = kwker_sort_pairs_rows(dtype, data.data(), nullptr, reinterpret_cast<int64_t *>(only.data()),
                             rows, cols, flags, threads);
  check(rc == KWKER_OK && only.intact() &&
            (n == 0 || std::memcmp(only.data(), want.idx.data(), size_t(n * 8)) == 0),
        "sort_pairs_rows indices only");
}

void check_pairs_all(int dtype, const std::vector<uint8_t> &data, int64_t rows, int64_t cols,
                     unsigned flags, const std::string &tag, int threads = 0) {
  PairRef want(dtype, data, rows, cols, flags);
  for (const char *e : g_engines) {
    kwker_set_isa(e);
    g_where = std::string(e) + " " + kwker::ref::dtype_name(dtype) + " rows=" +
              std::to_string(rows) + " cols=" + std::to_string(cols) + mode_label(flags) + " " +
              tag + " threads=" + std::to_string(threads);
    check_pairs_now(dtype, data, rows, cols, flags, want, threads);
  }
}

// 64-bit keys spread over the whole range, with many sharing their high bits: the packing drops
// low key bits and the fix-up must re-sort the prefix ties.
std::vector<uint8_t> prefix_tie_keys(int dtype, int64_t n, uint64_t seed) {
  std::vector<uint8_t> raw = kwker::ref::generate(dtype, kwker::ref::kUniform, n, seed);
  std::vector<uint64_t> v(static_cast<size_t>(n));
  std::memcpy(v.data(), raw.data(), raw.size());
  for (int64_t j = 0; j < n; j += 3) v[size_t(j)] = (v[size_t(j)] & ~uint64_t(0xFFFFF)) | 0x0F0F0;
  if (n > 1) v[0] = 0, v[1] = ~uint64_t(0) >> (dtype == KWKER_FLOAT64 ? 12 : 0);
  std::memcpy(raw.data(), v.data(), raw.size());
  return raw;
}

void test_pairs_1d() {
  for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype) {
    for (int64_t n = 0; n <= 300; n += (n < 40 ? 1 : 29))
      for (int dist = 0; dist < kwker::ref::kNumDists; ++dist)
        for (unsigned flags : kModes)
          if (n <= 40 || flags == 0 || flags == (KWKER_NAN_LARGEST | KWKER_DESCENDING))
            check_pairs_all(dtype, kwker::ref::generate(dtype, dist, n, 3), 1, n, flags, "1-d");
    for (int64_t n : {1000, 4099, 60001, 65537, 130000})
      for (int dist : {int(kwker::ref::kUniform), int(kwker::ref::kNanHeavy),
                       int(kwker::ref::kSpecials), int(kwker::ref::kFewDistinct),
                       int(kwker::ref::kSorted), int(kwker::ref::kReversed)})
        for (unsigned flags : {0u, unsigned(KWKER_NAN_LARGEST | KWKER_DESCENDING)})
          check_pairs_all(dtype, kwker::ref::generate(dtype, dist, n, 4), 1, n, flags, "1-d",
                          n == 130000 ? 2 : 0);
  }
  for (int dtype : {KWKER_INT64, KWKER_UINT64, KWKER_FLOAT64, KWKER_DATETIME})
    for (int64_t n : {100, 5000, 150000})
      for (unsigned flags : {0u, unsigned(KWKER_NAN_LARGEST | KWKER_DESCENDING)}) {
        std::vector<uint8_t> data = prefix_tie_keys(dtype, n, 7);
        check_pairs_all(dtype, data, 1, n, flags, "prefix ties", 2);
        kwker_set_tuning("radix64_argsort_max_bits", 64);
        kwker_set_tuning("radix64_argsort_min", 0);
        check_pairs_all(dtype, data, 1, n, flags, "prefix ties, radix", 2);
        kwker_set_tuning("radix64_argsort_max_bits", -1);
        kwker_set_tuning("radix64_argsort_min", -1);
      }
  // The 32-bit integers' LSD radix (radix_pairs32) from one key on: ranges of one to four
  // digits (narrow uniform, few distinct values, specials), all keys equal (no pass), sorted
  // and reversed input, both orders, one and two threads (the split passes from 1e5 keys), and
  // the knob's upper bound (2^21) met from both sides. The presorted check is off so that
  // sorted, reversed and all-equal input reach it too.
  kwker_set_tuning("radix32_pairs_min", 1);
  kwker_set_tuning("presorted_min", int64_t(1) << 40);
  for (int dtype : {KWKER_INT32, KWKER_UINT32})
    for (int64_t n : {int64_t(2), int64_t(37), int64_t(1000), int64_t(5003), int64_t(130001)})
      for (int dist : {int(kwker::ref::kUniform), int(kwker::ref::kFewDistinct),
                       int(kwker::ref::kSpecials), int(kwker::ref::kAllEqual),
                       int(kwker::ref::kSorted), int(kwker::ref::kReversed)})
        for (unsigned flags : {0u, unsigned(KWKER_DESCENDING)})
          check_pairs_all(dtype, kwker::ref::generate(dtype, dist, n, 5), 1, n, flags,
                          "radix32", n > 100000 ? 2 : 0);
  for (int64_t n : {(int64_t(1) << 21) - 1, (int64_t(1) << 21) + 1})
    check_pairs_all(KWKER_INT32, kwker::ref::generate(KWKER_INT32, kwker::ref::kUniform, n, 6), 1,
                    n, 0, "radix32 at its bound", 2);
  kwker_set_tuning("radix32_pairs_min", -1);
  // The 16-bit radix argsort (core/radix-inl.h, radix16_argsort): forced down to a few keys,
  // where most of its 256 buckets are empty or hold one key, and on both sides of 2^24 keys,
  // where its words widen from 32 to 64 bits (int16's values decoded from the key, float16's
  // read from the input: -0.0 and NaN payloads), on three threads.
  kwker_set_tuning("count16_argsort_min", 1);
  for (int dtype : {KWKER_INT16, KWKER_UINT16, KWKER_FLOAT16})
    for (int64_t n : {int64_t(1), int64_t(2), int64_t(37), int64_t(1000), int64_t(5003)})
      for (int dist : {int(kwker::ref::kUniform), int(kwker::ref::kFewDistinct),
                       int(kwker::ref::kSpecials), int(kwker::ref::kNanHeavy),
                       int(kwker::ref::kAllEqual)})
        for (unsigned flags : {0u, unsigned(KWKER_DESCENDING | KWKER_NANS_FIRST)})
          check_pairs_all(dtype, kwker::ref::generate(dtype, dist, n, 8), 1, n, flags, "radix16");
  kwker_set_tuning("count16_argsort_min", -1);
  check_pairs_all(KWKER_INT16, kwker::ref::generate(KWKER_INT16, kwker::ref::kUniform,
                                                    (int64_t(1) << 24) - 1, 9),
                  1, (int64_t(1) << 24) - 1, KWKER_DESCENDING, "radix16 32-bit words", 3);
  check_pairs_all(KWKER_FLOAT16, kwker::ref::generate(KWKER_FLOAT16, kwker::ref::kNanHeavy,
                                                      (int64_t(1) << 24) + 1, 10),
                  1, (int64_t(1) << 24) + 1, 0, "radix16 64-bit words", 3);
  kwker_set_tuning("presorted_min", -1);
}

void test_pairs_rows() {
  for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype)
    for (int64_t cols : {1, 2, 3, 4, 8, 17, 130, 1000})
      for (unsigned flags : {0u, unsigned(KWKER_NAN_LARGEST), unsigned(KWKER_NAN_LARGEST | KWKER_DESCENDING)}) {
        const int64_t rows = cols < 100 ? 37 : 5;
        check_pairs_all(dtype, kwker::ref::generate(dtype, kwker::ref::kSpecials, rows * cols, 9),
                        rows, cols, flags, "rows");
      }
}

// Every fallback: radix and parallel off, then no scratch at all.
void test_pairs_modes() {
  for (int dtype : {KWKER_FLOAT32, KWKER_INT64, KWKER_UINT16, KWKER_FLOAT64, KWKER_INT8,
                    KWKER_BOOL, KWKER_BFLOAT16}) {
    std::vector<uint8_t> data = kwker::ref::generate(dtype, kwker::ref::kNanHeavy, 70000, 11);
    kwker_set_algorithms(0);
    check_pairs_all(dtype, data, 1, 70000, KWKER_NAN_LARGEST, "adaptive only", 2);
    kwker_set_algorithms(KWKER_ALGO_ALL);
    kwker_set_scratch_limit(0);
    check_pairs_all(dtype, data, 1, 70000, KWKER_NAN_LARGEST | KWKER_DESCENDING, "no scratch", 2);
    check_pairs_all(dtype, data, 7, 10000, KWKER_NAN_LARGEST, "no scratch rows", 2);
    kwker_set_scratch_limit(-1);
  }
}

// Top-k (the selection path from 2048 columns) and the k-th value, against the reference
// argsort of every row.
void check_select(int dtype, const std::vector<uint8_t> &data, int64_t rows, int64_t cols,
                  unsigned flags, const std::string &tag, int threads) {
  const int w = dtype_size(dtype);
  std::vector<int64_t> order(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    kwker::ref::argsort(dtype, data.data() + r * cols * w, cols, order.data() + r * cols, flags);
  std::vector<int64_t> ks = {1, 2, 10, cols / 8, cols / 8 + 1, cols / 2, cols};
  for (const char *e : g_engines) {
    kwker_set_isa(e);
    g_where = std::string(e) + " " + kwker::ref::dtype_name(dtype) + " rows=" +
              std::to_string(rows) + " cols=" + std::to_string(cols) + mode_label(flags) + " " +
              tag + " threads=" + std::to_string(threads);
    for (int64_t k : ks) {
      if (k < 1 || k > cols) continue;
      Guarded tv(size_t(rows * k * w)), ti(size_t(rows * k * 8));
      int rc = kwker_topk_rows(dtype, data.data(), rows, cols, k, flags, 1, tv.data(),
                               reinterpret_cast<int64_t *>(ti.data()), threads);
      bool ok = rc == KWKER_OK && tv.intact() && ti.intact();
      const int64_t *got = reinterpret_cast<const int64_t *>(ti.data());
      for (int64_t r = 0; r < rows && ok; ++r)
        for (int64_t j = 0; j < k && ok; ++j)
          ok = got[r * k + j] == order[size_t(r * cols + j)] &&
               std::memcmp(tv.data() + (r * k + j) * w,
                           data.data() + (r * cols + got[r * k + j]) * w, size_t(w)) == 0;
      check(ok, "topk k=" + std::to_string(k));
      // sorted = 0: the same k, in index order.
      Guarded uv(size_t(rows * k * w)), ui(size_t(rows * k * 8));
      rc = kwker_topk_rows(dtype, data.data(), rows, cols, k, flags, 0, uv.data(),
                           reinterpret_cast<int64_t *>(ui.data()), threads);
      ok = rc == KWKER_OK && uv.intact() && ui.intact();
      const int64_t *ug = reinterpret_cast<const int64_t *>(ui.data());
      for (int64_t r = 0; r < rows && ok; ++r) {
        std::vector<int64_t> want(order.begin() + r * cols, order.begin() + r * cols + k);
        std::sort(want.begin(), want.end());
        for (int64_t j = 0; j < k && ok; ++j)
          ok = ug[r * k + j] == want[size_t(j)] &&
               std::memcmp(uv.data() + (r * k + j) * w,
                           data.data() + (r * cols + ug[r * k + j]) * w, size_t(w)) == 0;
      }
      check(ok, "topk unsorted k=" + std::to_string(k));
      Guarded kv(size_t(rows * w)), ki(size_t(rows * 8));
      rc = kwker_kth_rows(dtype, data.data(), rows, cols, k - 1, flags, kv.data(),
                          reinterpret_cast<int64_t *>(ki.data()), threads);
      ok = rc == KWKER_OK && kv.intact() && ki.intact();
      const int64_t *kg = reinterpret_cast<const int64_t *>(ki.data());
      for (int64_t r = 0; r < rows && ok; ++r)
        ok = kg[r] == order[size_t(r * cols + k - 1)] &&
             std::memcmp(kv.data() + r * w, data.data() + (r * cols + kg[r]) * w, size_t(w)) == 0;
      check(ok, "kth rank=" + std::to_string(k - 1));
    }
  }
}

void test_select() {
  for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype) {
    for (int64_t cols : {1, 7, 300, 2047, 2048, 5000})
      for (int dist : {int(kwker::ref::kUniform), int(kwker::ref::kNanHeavy),
                       int(kwker::ref::kFewDistinct), int(kwker::ref::kSorted),
                       int(kwker::ref::kReversed), int(kwker::ref::kAllEqual)})
        for (unsigned flags : {0u, unsigned(KWKER_NAN_LARGEST | KWKER_DESCENDING)}) {
          const int64_t rows = cols < 1000 ? 9 : 3;
          check_select(dtype, kwker::ref::generate(dtype, dist, rows * cols, 13), rows, cols,
                       flags, kwker::ref::dist_name(dist), 0);
        }
    // One long row: its candidate pass split over the threads.
    check_select(dtype, kwker::ref::generate(dtype, kwker::ref::kSpecials, 200000, 17), 1, 200000,
                 KWKER_NAN_LARGEST | KWKER_DESCENDING, "one long row", 2);
  }
  for (int dtype : {KWKER_FLOAT32, KWKER_INT64, KWKER_UINT8}) {
    std::vector<uint8_t> data = kwker::ref::generate(dtype, kwker::ref::kNanHeavy, 3 * 4000, 19);
    kwker_set_scratch_limit(0);  // top-k's bounded heap and the k-th value's binary search
    check_select(dtype, data, 3, 4000, KWKER_NAN_LARGEST, "no scratch", 2);
    kwker_set_scratch_limit(-1);
  }
}

// 64-bit keys whose packed words drop key bits (the row holds the type's extremes, so the
// key range and the index need more than 64 bits) and whose other keys differ only in those
// bits: groups of keys tie on their prefix while their full keys differ, and a group straddles
// the top-k boundary and the k-th position. Rows below the threshold path's 2,048 columns take
// the full path's packed selection (smallest_sorted / word_at) and its tie fix-up; rows of
// 5,000 with k up to cols / 8 the threshold path, whose candidates (an extreme among them)
// become Pack64 words over their own key range, dropping bits too.
void test_select_dropped_bits() {
  for (int dtype : {KWKER_INT64, KWKER_FLOAT64, KWKER_UINT64}) {
    for (int64_t cols : {int64_t(65), int64_t(300), int64_t(1000), int64_t(2047), int64_t(5000)}) {
      const int64_t rows = 3;
      std::vector<uint8_t> data(size_t(rows * cols * 8));
      uint64_t state = 0x9E3779B97F4A7C15ull * uint64_t(cols + dtype);
      auto next = [&state] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
      };
      for (int64_t i = 0; i < rows * cols; ++i) {
        const uint64_t group = next() % 3, low = next() % 4;
        uint64_t bits;
        if (dtype == KWKER_FLOAT64) {
          double base = group == 0 ? 1.0 : group == 1 ? -1.5 : 2.0;
          std::memcpy(&bits, &base, 8);
          bits += low;  // a few ulps apart
        } else {
          bits = (group << 40) + low;
        }
        std::memcpy(data.data() + i * 8, &bits, 8);
      }
      for (int64_t r = 0; r < rows; ++r) {  // the extremes, at places of their own per row
        uint64_t lo = dtype == KWKER_INT64 ? 0x8000000000000000ull : 0, hi = ~lo;
        if (dtype == KWKER_INT64) hi = 0x7FFFFFFFFFFFFFFFull;
        if (dtype == KWKER_FLOAT64) {
          const double a = -1.7976931348623157e308, b = 1.7976931348623157e308;
          std::memcpy(&lo, &a, 8);
          std::memcpy(&hi, &b, 8);
        }
        std::memcpy(data.data() + (r * cols + int64_t(next() % uint64_t(cols))) * 8, &lo, 8);
        std::memcpy(data.data() + (r * cols + int64_t(next() % uint64_t(cols))) * 8, &hi, 8);
      }
      for (unsigned flags : {0u, unsigned(KWKER_NAN_LARGEST | KWKER_DESCENDING)})
        for (int threads : {1, 2})
          check_select(dtype, data, rows, cols, flags, "dropped bits", threads);
    }
  }
}

// Top-k down the columns (kwker_topk_cols) against the reference argsort of each column:
// the in-place path (small k: chunks of 64 columns, the insertion by blend and one column at a
// time, narrow rows in blocks), the gathered path (larger k against the column's length),
// several matrices, the thread split, and without scratch (the gathered path's heap).
void check_columns(int dtype, const std::vector<uint8_t> &data, int64_t outer, int64_t rows,
                   int64_t cols, unsigned flags, const std::vector<int64_t> &ks,
                   const std::string &tag, int threads) {
  const int w = dtype_size(dtype);
  // order[(a * cols + j) * rows + q]: row of position q of column j's stable order.
  std::vector<int64_t> order(size_t(outer * cols * rows));
  std::vector<uint8_t> col(size_t(rows * w));
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(col.data() + r * w, data.data() + ((a * rows + r) * cols + j) * w, size_t(w));
      kwker::ref::argsort(dtype, col.data(), rows, order.data() + (a * cols + j) * rows, flags);
    }
  for (const char *e : g_engines) {
    kwker_set_isa(e);
    g_where = std::string(e) + " " + kwker::ref::dtype_name(dtype) + " " +
              std::to_string(outer) + "x" + std::to_string(rows) + "x" + std::to_string(cols) +
              mode_label(flags) + " " + tag + " threads=" + std::to_string(threads);
    for (int64_t k : ks) {
      if (k < 1 || k > rows) continue;
      for (int sorted : {1, 0}) {
        const int64_t m = outer * k * cols;
        Guarded tv(size_t(m * w)), ti(size_t(m * 8));
        const int rc = kwker_topk_cols(dtype, data.data(), outer, rows, cols, k, flags, sorted,
                                       tv.data(), reinterpret_cast<int64_t *>(ti.data()), threads);
        bool ok = rc == KWKER_OK && tv.intact() && ti.intact();
        const int64_t *got = reinterpret_cast<const int64_t *>(ti.data());
        for (int64_t a = 0; a < outer && ok; ++a)
          for (int64_t j = 0; j < cols && ok; ++j) {
            const int64_t *o = order.data() + (a * cols + j) * rows;
            std::vector<int64_t> want(o, o + k);
            if (!sorted) std::sort(want.begin(), want.end());
            for (int64_t q = 0; q < k && ok; ++q) {
              const int64_t at = (a * k + q) * cols + j, r = got[at];
              ok = r == want[size_t(q)] &&
                   std::memcmp(tv.data() + at * w, data.data() + ((a * rows + r) * cols + j) * w,
                               size_t(w)) == 0;
            }
          }
        check(ok, "topk_cols k=" + std::to_string(k) + (sorted ? "" : " unsorted"));
      }
    }
  }
}

void test_select_columns() {
  const std::vector<int64_t> ks = {1, 2, 5, 16, 17, 40};
  for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype)
    for (int dist : {int(kwker::ref::kUniform), int(kwker::ref::kSorted),
                     int(kwker::ref::kReversed), int(kwker::ref::kFewDistinct),
                     int(kwker::ref::kSpecials)})
      for (unsigned flags : {0u, unsigned(KWKER_NAN_LARGEST | KWKER_DESCENDING),
                             unsigned(KWKER_DESCENDING | KWKER_NANS_FIRST)}) {
        // 150 columns: two whole chunks and a part one; 3 columns: narrower than a register.
        check_columns(dtype, kwker::ref::generate(dtype, dist, 2 * 60 * 150, 23), 2, 60, 150,
                      flags, ks, kwker::ref::dist_name(dist), 0);
        check_columns(dtype, kwker::ref::generate(dtype, dist, 300 * 3, 29), 1, 300, 3, flags,
                      {1, 5, 16, 300}, kwker::ref::dist_name(dist), 0);
      }
  // Columns long enough for the in-place path at every k up to 16 (cols_direct): whole chunks
  // and a part one, and narrow rows taken in blocks of rows; rising and falling columns make
  // every row enter (the blend) or none.
  for (int dtype : {KWKER_FLOAT32, KWKER_INT64, KWKER_INT16, KWKER_FLOAT64, KWKER_UINT8})
    for (int dist : {int(kwker::ref::kUniform), int(kwker::ref::kSorted),
                     int(kwker::ref::kReversed), int(kwker::ref::kSpecials)})
      for (unsigned flags : {0u, unsigned(KWKER_NAN_LARGEST | KWKER_DESCENDING)}) {
        check_columns(dtype, kwker::ref::generate(dtype, dist, 9000 * 70, 41), 1, 9000, 70, flags,
                      {2, 5, 16}, std::string("long ") + kwker::ref::dist_name(dist), 0);
        check_columns(dtype, kwker::ref::generate(dtype, dist, 9000 * 10, 43), 1, 9000, 10, flags,
                      {1, 5, 16}, std::string("long narrow ") + kwker::ref::dist_name(dist), 0);
      }
  for (int dtype : {KWKER_FLOAT32, KWKER_INT64, KWKER_INT16, KWKER_FLOAT64}) {
    // Past the thread threshold: chunks split so both threads have work (cols under 2 chunks).
    check_columns(dtype, kwker::ref::generate(dtype, kwker::ref::kNanHeavy, 2000 * 100, 31), 1,
                  2000, 100, KWKER_NAN_LARGEST | KWKER_DESCENDING, {5, 16, 100}, "threads", 2);
    kwker_set_scratch_limit(0);
    check_columns(dtype, kwker::ref::generate(dtype, kwker::ref::kFewDistinct, 2 * 90 * 70, 37),
                  2, 90, 70, KWKER_NAN_LARGEST, {3, 17, 90}, "no scratch", 2);
    kwker_set_scratch_limit(-1);
  }
}

// Sort, stable argsort and k-th value down the columns (kwker_sort_cols, kwker_kth_cols) against
// the reference on each column: values alone (a copy, and in place), indices alone, both, and
// the k-th value at a few ranks; blocks of whole lines and a part one, narrow matrices (one
// block, the row kernels given the threads), several matrices, the thread split, and without
// scratch (each column where it lies).
void check_sort_columns(int dtype, const std::vector<uint8_t> &data, int64_t outer, int64_t rows,
                        int64_t cols, unsigned flags, const std::string &tag, int threads) {
  const int w = dtype_size(dtype);
  const int64_t n = outer * rows * cols;
  // Column j of matrix a: its stable order (rows) and its sorted values, laid out like data.
  std::vector<int64_t> order(static_cast<size_t>(n)), colorder(static_cast<size_t>(rows));
  std::vector<uint8_t> sorted(static_cast<size_t>(n * w)), col(static_cast<size_t>(rows * w)),
      colsorted(static_cast<size_t>(rows * w));
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(col.data() + r * w, data.data() + ((a * rows + r) * cols + j) * w, size_t(w));
      kwker::ref::argsort(dtype, col.data(), rows, colorder.data(), flags);
      kwker::ref::sort(dtype, col.data(), colsorted.data(), rows, flags);
      for (int64_t r = 0; r < rows; ++r) {
        order[size_t((a * rows + r) * cols + j)] = colorder[size_t(r)];
        std::memcpy(sorted.data() + ((a * rows + r) * cols + j) * w, colsorted.data() + r * w,
                    size_t(w));
      }
    }
  auto src_at = [&](int64_t a, int64_t r, int64_t j) {
    return data.data() + ((a * rows + r) * cols + j) * w;
  };
  for (const char *e : g_engines) {
    kwker_set_isa(e);
    g_where = std::string(e) + " " + kwker::ref::dtype_name(dtype) + " " +
              std::to_string(outer) + "x" + std::to_string(rows) + "x" + std::to_string(cols) +
              mode_label(flags) + " " + tag + " threads=" + std::to_string(threads);
    {
      Guarded v(size_t(n * w));
      bool ok = kwker_sort_cols(dtype, data.data(), v.data(), nullptr, outer, rows, cols, flags,
                                threads) == KWKER_OK &&
                v.intact() && kwker::ref::values_equal(dtype, v.data(), sorted.data(), n);
      check(ok, "sort_cols values");
      std::vector<uint8_t> inplace(data);
      ok = kwker_sort_cols(dtype, inplace.data(), inplace.data(), nullptr, outer, rows, cols,
                           flags, threads) == KWKER_OK &&
           kwker::ref::values_equal(dtype, inplace.data(), sorted.data(), n);
      check(ok, "sort_cols values in place");
    }
    for (bool with_values : {false, true}) {
      Guarded v(size_t(n * w)), i(size_t(n * 8));
      const int rc = kwker_sort_cols(dtype, data.data(), with_values ? v.data() : nullptr,
                                     reinterpret_cast<int64_t *>(i.data()), outer, rows, cols,
                                     flags, threads);
      bool ok = rc == KWKER_OK && v.intact() && i.intact();
      const int64_t *got = reinterpret_cast<const int64_t *>(i.data());
      for (int64_t a = 0; a < outer && ok; ++a)
        for (int64_t q = 0; q < rows && ok; ++q)
          for (int64_t j = 0; j < cols && ok; ++j) {
            const int64_t at = (a * rows + q) * cols + j, r = got[at];
            ok = r == order[size_t(at)] &&
                 (!with_values ||
                  std::memcmp(v.data() + at * w, src_at(a, r, j), size_t(w)) == 0);
          }
      check(ok, with_values ? "sort_cols values and indices" : "sort_cols indices");
    }
    for (int64_t rank : {int64_t(0), rows / 2, rows - 1}) {
      const int64_t m = outer * cols;
      Guarded kv(size_t(m * w)), ki(size_t(m * 8));
      bool ok = kwker_kth_cols(dtype, data.data(), outer, rows, cols, rank, flags, kv.data(),
                               reinterpret_cast<int64_t *>(ki.data()), threads) == KWKER_OK &&
                kv.intact() && ki.intact();
      const int64_t *got = reinterpret_cast<const int64_t *>(ki.data());
      for (int64_t a = 0; a < outer && ok; ++a)
        for (int64_t j = 0; j < cols && ok; ++j) {
          const int64_t r = got[a * cols + j];
          ok = r == order[size_t((a * rows + rank) * cols + j)] &&
               std::memcmp(kv.data() + (a * cols + j) * w, src_at(a, r, j), size_t(w)) == 0;
        }
      check(ok, "kth_cols rank=" + std::to_string(rank));
    }
  }
}

void test_sort_columns() {
  for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype)
    for (int dist : {int(kwker::ref::kUniform), int(kwker::ref::kReversed),
                     int(kwker::ref::kFewDistinct), int(kwker::ref::kSpecials)})
      for (unsigned flags : {0u, unsigned(KWKER_NAN_LARGEST | KWKER_DESCENDING),
                             unsigned(KWKER_DESCENDING | KWKER_NANS_FIRST)}) {
        // 150 columns of 60: blocks of whole lines and a part one, two matrices; 3 columns:
        // narrower than a line (one block); columns of 1 and 2 rows.
        check_sort_columns(dtype, kwker::ref::generate(dtype, dist, 2 * 60 * 150, 23), 2, 60,
                           150, flags, kwker::ref::dist_name(dist), 0);
        check_sort_columns(dtype, kwker::ref::generate(dtype, dist, 300 * 3, 29), 1, 300, 3,
                           flags, kwker::ref::dist_name(dist), 0);
        check_sort_columns(dtype, kwker::ref::generate(dtype, dist, 2 * 37, 31), 1, 2, 37, flags,
                           kwker::ref::dist_name(dist), 0);
        // Ragged on both sides by a few keys, yet wider than one 256-bit register of 32-bit
        // keys: the last register tile of each side overlaps the one before it.
        check_sort_columns(dtype, kwker::ref::generate(dtype, dist, 100 * 10, 41), 1, 100, 10,
                           flags, kwker::ref::dist_name(dist), 0);
        check_sort_columns(dtype, kwker::ref::generate(dtype, dist, 21 * 19, 43), 1, 21, 19,
                           flags, kwker::ref::dist_name(dist), 0);
      }
  for (int dtype : {KWKER_FLOAT32, KWKER_INT64, KWKER_INT16, KWKER_FLOAT64, KWKER_UINT8}) {
    // Past the thread threshold: blocks claimed by both threads (1,000 x 300), and a narrow
    // matrix whose one block hands the threads to the transposes and the row kernels.
    check_sort_columns(dtype, kwker::ref::generate(dtype, kwker::ref::kNanHeavy, 1000 * 300, 31),
                       1, 1000, 300, KWKER_NAN_LARGEST | KWKER_DESCENDING, "threads", 2);
    check_sort_columns(dtype, kwker::ref::generate(dtype, kwker::ref::kUniform, 40000 * 7, 33), 1,
                       40000, 7, 0, "narrow threads", 2);
    kwker_set_scratch_limit(0);
    for (int dist : {int(kwker::ref::kFewDistinct), int(kwker::ref::kSpecials),
                     int(kwker::ref::kNanHeavy)})
      check_sort_columns(dtype, kwker::ref::generate(dtype, dist, 2 * 90 * 70, 37), 2, 90, 70,
                         KWKER_NAN_LARGEST, std::string("no scratch ") +
                                                kwker::ref::dist_name(dist), 2);
    kwker_set_scratch_limit(-1);
  }
}

void test_pairs_errors() {
  g_where = "pairs errors";
  float x[4] = {3, 1, 2, 0};
  int64_t idx[4];
  float v[4];
  check(kwker_sort_pairs_rows(KWKER_FLOAT32, x, v, idx, 1, 4, 8, 0) == KWKER_E_INVALID_ARGUMENT,
        "unknown flag rejected");
  check(kwker_sort_pairs_rows(KWKER_FLOAT32, x, x, idx, 1, 4, 0, 0) == KWKER_E_INVALID_ARGUMENT &&
            std::strstr(kwker_last_error(), "separate buffer") != nullptr,
        "vals == src rejected with the fix");
  check(kwker_sort_pairs_rows(KWKER_FLOAT32, x, v, nullptr, 1, 4, 0, 0) == KWKER_E_INVALID_ARGUMENT,
        "NULL idx rejected");
  check(kwker_kth_rows(KWKER_FLOAT32, x, 1, 4, 4, 0, v, idx, 0) == KWKER_E_INVALID_ARGUMENT &&
            std::strstr(kwker_last_error(), "rank = 4") != nullptr,
        "rank out of range rejected");
  check(kwker_kth_rows(KWKER_FLOAT32, x, 1, 4, -1, 0, v, idx, 0) == KWKER_E_INVALID_ARGUMENT,
        "negative rank rejected");
  check(kwker_kth_rows(KWKER_FLOAT32, x, 0, 0, 0, 0, nullptr, nullptr, 0) == KWKER_OK,
        "no rows is fine");
  check(kwker_topk_cols(KWKER_FLOAT32, x, 1, 2, 2, 3, 0, 1, v, idx, 0) ==
                KWKER_E_INVALID_ARGUMENT &&
            std::strstr(kwker_last_error(), "k = 3 is larger than the column length") != nullptr,
        "topk_cols: k above the column length rejected with the fix");
  check(kwker_topk_cols(KWKER_FLOAT32, x, -1, 2, 2, 1, 0, 1, v, idx, 0) ==
            KWKER_E_INVALID_ARGUMENT,
        "topk_cols: negative outer rejected");
  check(kwker_topk_cols(KWKER_FLOAT32, x, 1, 2, 2, 1, 0, 1, v, nullptr, 0) ==
            KWKER_E_INVALID_ARGUMENT,
        "topk_cols: NULL out_indices rejected");
  check(kwker_topk_cols(KWKER_FLOAT32, x, int64_t(1) << 40, int64_t(1) << 20, int64_t(1) << 10,
                        1, 0, 1, v, idx, 0) == KWKER_E_INVALID_ARGUMENT &&
            std::strstr(kwker_last_error(), "overflows") != nullptr,
        "topk_cols: sizes overflowing int64 rejected");
  check(kwker_topk_cols(KWKER_FLOAT32, x, 0, 4, 1, 2, 0, 1, nullptr, nullptr, 0) == KWKER_OK,
        "topk_cols: no matrices is fine");
  check(kwker_sort_cols(KWKER_FLOAT32, x, nullptr, nullptr, 1, 2, 2, 0, 0) ==
                KWKER_E_INVALID_ARGUMENT &&
            std::strstr(kwker_last_error(), "both NULL") != nullptr,
        "sort_cols: neither output rejected with the fix");
  check(kwker_sort_cols(KWKER_FLOAT32, x, x, idx, 1, 2, 2, 0, 0) == KWKER_E_INVALID_ARGUMENT &&
            std::strstr(kwker_last_error(), "separate buffer") != nullptr,
        "sort_cols: vals == src with indices rejected with the fix");
  check(kwker_sort_cols(KWKER_FLOAT32, nullptr, v, idx, 1, 2, 2, 0, 0) ==
            KWKER_E_INVALID_ARGUMENT,
        "sort_cols: NULL src rejected");
  check(kwker_sort_cols(KWKER_FLOAT32, x, v, idx, int64_t(1) << 40, int64_t(1) << 20,
                        int64_t(1) << 10, 0, 0) == KWKER_E_INVALID_ARGUMENT &&
            std::strstr(kwker_last_error(), "overflows") != nullptr,
        "sort_cols: sizes overflowing int64 rejected");
  check(kwker_sort_cols(KWKER_FLOAT32, x, v, idx, 1, -2, 2, 0, 0) == KWKER_E_INVALID_ARGUMENT,
        "sort_cols: negative rows rejected");
  check(kwker_sort_cols(KWKER_FLOAT32, x, x, nullptr, 1, 2, 2, 0, 0) == KWKER_OK &&
            x[0] == 2 && x[1] == 0 && x[2] == 3 && x[3] == 1,
        "sort_cols: the columns of [[3, 1], [2, 0]] sorted in place");
  check(kwker_kth_cols(KWKER_FLOAT32, x, 1, 2, 2, 2, 0, v, idx, 0) == KWKER_E_INVALID_ARGUMENT &&
            std::strstr(kwker_last_error(), "rank = 2") != nullptr,
        "kth_cols: rank out of range rejected with the fix");
  check(kwker_kth_cols(KWKER_FLOAT32, x, 1, 2, 2, 0, 0, v, nullptr, 0) ==
            KWKER_E_INVALID_ARGUMENT,
        "kth_cols: NULL out_index rejected");
  check(kwker_kth_cols(KWKER_FLOAT32, x, 0, 2, 2, 5, 0, nullptr, nullptr, 0) == KWKER_OK,
        "kth_cols: no matrices is fine");
}

}  // namespace

void run_pairs_tests() {
  test_pairs_errors();
  test_pairs_1d();
  test_pairs_rows();
  test_pairs_modes();
  test_select();
  test_select_dropped_bits();
  test_select_columns();
  test_sort_columns();
  kwker_set_isa(nullptr);
}
