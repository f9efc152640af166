// Short inputs and packed argsort keys against the scalar reference, on every engine this CPU
// runs: every dtype, row lengths 0-130 through every row entry point (rows of 2, 4 and 8 take
// the multi-row registers, rows of 3 and 5-7 padded ones, argsort rows of W + 1 to 2 W keys two
// registers each, also split over two threads), ties, NaNs with payloads, +-0.0, descending and nans_first; every
// tuning knob's boundary +-1, with the knob at its default and with the other path forced; and
// 64-bit keys whose packed prefixes tie (dropped key bits), from tiny rows to the parallel sort.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/engine.h"
#include "dispatch/reference.h"
#include "kwker/kwker.h"
#include "tests/native/harness.h"

using namespace harness;

namespace {

using kwker::ref::dtype_size;

int64_t knob(const char *name) {
  int64_t v = -1;
  kwker_get_tuning(name, &v);
  return v;
}

// Reference results for rows x cols keys, row by row.
struct RowRef {
  std::vector<uint8_t> vals;
  std::vector<int64_t> idx;
  RowRef(int dtype, const std::vector<uint8_t> &data, int64_t rows, int64_t cols, unsigned flags)
      : vals(data.size()), idx(size_t(rows * cols)) {
    const int w = dtype_size(dtype);
    for (int64_t r = 0; r < rows; ++r) {
      kwker::ref::sort(dtype, data.data() + r * cols * w, vals.data() + r * cols * w, cols, flags);
      kwker::ref::argsort(dtype, data.data() + r * cols * w, cols, idx.data() + r * cols, flags);
    }
  }
};

// Every row entry point on the current engine: sorted copy, in place, argsort, and the same rows
// as explicit segments (the ragged path), values and absolute indices.
// Keys in a row call that splits over threads (core/engine.h's kParallelMinElements is 100,000).
constexpr int64_t kParallelRows = 120000;

void check_rows_now(int dtype, const std::vector<uint8_t> &data, int64_t rows, int64_t cols,
                    unsigned flags, const RowRef &want, int threads) {
  const int w = dtype_size(dtype);
  const int64_t n = rows * cols;
  const size_t bytes = size_t(n * w);
  Guarded copy(bytes);
  int rc = kwker_sort_rows_copy(dtype, data.data(), copy.data(), rows, cols, flags, threads);
  check(rc == KWKER_OK && copy.intact() &&
            kwker::ref::values_equal(dtype, copy.data(), want.vals.data(), n),
        "sort_rows_copy");
  Guarded inplace(bytes);
  if (n) std::memcpy(inplace.data(), data.data(), bytes);
  rc = kwker_sort_rows(dtype, inplace.data(), rows, cols, flags, threads);
  check(rc == KWKER_OK && inplace.intact() &&
            kwker::ref::values_equal(dtype, inplace.data(), want.vals.data(), n),
        "sort_rows in place");
  Guarded gi(size_t(n * 8));
  rc = kwker_argsort_rows(dtype, data.data(), rows, cols, reinterpret_cast<int64_t *>(gi.data()),
                          flags, threads);
  check(rc == KWKER_OK && gi.intact() &&
            (n == 0 || std::memcmp(gi.data(), want.idx.data(), size_t(n * 8)) == 0),
        "argsort_rows");
  std::vector<int64_t> offs;
  for (int64_t r = 0; r <= rows; ++r) offs.push_back(r * cols);
  Guarded seg(bytes);
  if (n) std::memcpy(seg.data(), data.data(), bytes);
  rc = kwker_sort_segments(dtype, seg.data(), n, offs.data(), int64_t(offs.size()), flags, threads);
  check(rc == KWKER_OK && seg.intact() &&
            kwker::ref::values_equal(dtype, seg.data(), want.vals.data(), n),
        "sort_segments as rows");
  Guarded si(size_t(n * 8));
  rc = kwker_argsort_segments(dtype, data.data(), n, offs.data(), int64_t(offs.size()),
                              reinterpret_cast<int64_t *>(si.data()), flags, threads);
  bool ok = rc == KWKER_OK && si.intact();
  const int64_t *got = reinterpret_cast<const int64_t *>(si.data());
  for (int64_t j = 0; j < n && ok; ++j) ok = got[j] == want.idx[size_t(j)] + (j / cols) * cols;
  check(ok, "argsort_segments as rows");
}

// 1-D sort, in-place sort and argsort of n keys on the current engine.
void check_1d_now(int dtype, const std::vector<uint8_t> &data, int64_t n, unsigned flags,
                  const std::vector<uint8_t> &want, const std::vector<int64_t> &wi, int threads) {
  const int w = dtype_size(dtype);
  Guarded out(size_t(n * w));
  int rc = kwker_sort_copy(dtype, data.data(), out.data(), n, flags, threads);
  check(rc == KWKER_OK && out.intact() && kwker::ref::values_equal(dtype, out.data(), want.data(), n),
        "sort_copy");
  Guarded in(size_t(n * w));
  if (n) std::memcpy(in.data(), data.data(), size_t(n * w));
  rc = kwker_sort(dtype, in.data(), n, flags, threads);
  check(rc == KWKER_OK && in.intact() && kwker::ref::values_equal(dtype, in.data(), want.data(), n),
        "sort in place");
  Guarded idx(size_t(n * 8));
  rc = kwker_argsort(dtype, data.data(), n, reinterpret_cast<int64_t *>(idx.data()), flags, threads);
  check(rc == KWKER_OK && idx.intact() &&
            (n == 0 || std::memcmp(idx.data(), wi.data(), size_t(n * 8)) == 0),
        "argsort");
}

void check_1d_all(int dtype, int dist, int64_t n, unsigned flags, const std::string &tag,
                  const std::vector<uint8_t> *given = nullptr, int threads = 0) {
  std::vector<uint8_t> data = given ? *given : kwker::ref::generate(dtype, dist, n, 17);
  std::vector<uint8_t> want(data.size() + 1);
  std::vector<int64_t> wi(size_t(n) + 1);
  kwker::ref::sort(dtype, data.data(), want.data(), n, flags);
  kwker::ref::argsort(dtype, data.data(), n, wi.data(), flags);
  for (const char *e : g_engines) {
    kwker_set_isa(e);
    g_where = std::string(e) + " " + label(dtype, dist, n, flags) + " " + tag +
              " threads=" + std::to_string(threads);
    check_1d_now(dtype, data, n, flags, want, wi, threads);
  }
}

// Rows of 0-130 keys for every dtype.
void test_row_lengths() {
  for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype)
    for (int64_t cols = 0; cols <= 130; ++cols)
      for (int dist : {int(kwker::ref::kSpecials), int(kwker::ref::kNanHeavy),
                       int(kwker::ref::kFewDistinct), int(kwker::ref::kUniform)})
        for (unsigned flags = 0; flags < 4; ++flags) {
          // Enough rows that registers holding several rows are filled and a tail is left.
          const int64_t rows = cols ? std::max<int64_t>(3, 70 / cols + 3) : 3;
          std::vector<uint8_t> data = kwker::ref::generate(dtype, dist, rows * cols, 31 + cols);
          RowRef want(dtype, data, rows, cols, flags);
          for (const char *e : g_engines) {
            kwker_set_isa(e);
            g_where = std::string(e) + " " + label(dtype, dist, rows * cols, flags) +
                      " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
            check_rows_now(dtype, data, rows, cols, flags, want, 0);
          }
        }
}

// One matrix of rows x cols keys on two threads, on every engine, against the reference.
void check_rows_threads(int dtype, int dist, int64_t rows, int64_t cols, unsigned flags,
                        uint64_t seed) {
  std::vector<uint8_t> data = kwker::ref::generate(dtype, dist, rows * cols, seed);
  RowRef want(dtype, data, rows, cols, flags);
  for (const char *e : g_engines) {
    kwker_set_isa(e);
    g_where = std::string(e) + " " + label(dtype, dist, rows * cols, flags) +
              " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " threads=2";
    check_rows_now(dtype, data, rows, cols, flags, want, 2);
  }
}

// Rows of 3-8, 12 and 15 keys (padded to 4, 8 or 16 lanes in registers, or a row in two
// registers, whose loads and stores reach past the rows they hold) in calls large enough to
// split over two threads: a thread's last rows, the split between threads and the tail of the
// matrix take the per-row path, and no store may reach into the next thread's rows. An odd row
// count, so the split is uneven.
void test_padded_rows_threads() {
  for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype)
    for (int64_t cols : {3, 4, 5, 6, 7, 8, 12, 15})
      for (int dist : {int(kwker::ref::kSpecials), int(kwker::ref::kFewDistinct)})
        for (unsigned flags = 0; flags < 4; ++flags)
          check_rows_threads(dtype, dist, kParallelRows / cols | 1, cols, flags, 7 + cols);
}

// Rows split over two threads from far fewer keys than 1-D sorts (core/engine.h's
// rows_parallel_min): calls just past and just short of each length's count, so the threads'
// shares are a few rows of 2-1,000 keys (the same rows as explicit segments split from 32,768).
void test_rows_split_thresholds() {
  for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype)
    for (int64_t cols : {2, 3, 4, 8, 16, 17, 100, 1000})
      for (int64_t rows : {kwker::rows_parallel_min(cols) / cols + 1,
                           kwker::rows_parallel_min(cols) / cols - 1})
        for (unsigned flags : {0u, 3u})
          check_rows_threads(dtype, dtype % 2 ? int(kwker::ref::kSpecials)
                                              : int(kwker::ref::kUniform),
                             rows, cols, flags, 11 + cols);
}

// Ragged segments of every length 0-130 in one call.
void test_ragged() {
  for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype)
    for (unsigned flags = 0; flags < 4; ++flags) {
      std::vector<int64_t> offs = {0};
      for (int64_t len = 0; len <= 130; ++len) offs.push_back(offs.back() + len);
      const int64_t n = offs.back();
      std::vector<uint8_t> data = kwker::ref::generate(dtype, kwker::ref::kSpecials, n, 5);
      const int w = dtype_size(dtype);
      std::vector<uint8_t> want(data);
      std::vector<int64_t> wi((size_t)n);
      for (size_t s = 0; s + 1 < offs.size(); ++s) {
        int64_t b = offs[s], len = offs[s + 1] - b;
        kwker::ref::sort(dtype, data.data() + b * w, want.data() + b * w, len, flags);
        kwker::ref::argsort(dtype, data.data() + b * w, len, wi.data() + b, flags);
        for (int64_t j = 0; j < len; ++j) wi[size_t(b + j)] += b;
      }
      for (const char *e : g_engines) {
        kwker_set_isa(e);
        g_where = std::string(e) + " ragged 0-130 " + label(dtype, kwker::ref::kSpecials, n, flags);
        Guarded got(size_t(n * w));
        std::memcpy(got.data(), data.data(), size_t(n * w));
        int rc = kwker_sort_segments(dtype, got.data(), n, offs.data(), int64_t(offs.size()), flags, 0);
        check(rc == KWKER_OK && got.intact() &&
                  kwker::ref::values_equal(dtype, got.data(), want.data(), n),
              "sort_segments");
        Guarded gi(size_t(n * 8));
        rc = kwker_argsort_segments(dtype, data.data(), n, offs.data(), int64_t(offs.size()),
                                    reinterpret_cast<int64_t *>(gi.data()), flags, 0);
        check(rc == KWKER_OK && gi.intact() && std::memcmp(gi.data(), wi.data(), size_t(n * 8)) == 0,
              "argsort_segments");
      }
    }
}

// Each size knob's boundary +-1 (its value on each engine), with the knob at its default and
// with it set to 0, which sends the same sizes down the general path.
void test_knob_boundaries() {
  const char *knobs[] = {"sort_network_max_16",    "sort_network_max_32",    "sort_network_max_64",
                         "sort_pair_min_16",       "sort_pair_max_16",       "sort_pair_min_32",
                         "sort_pair_max_32",       "sort_pair_min_64",       "sort_pair_max_64",
                         "argsort_network_max_16", "argsort_network_max_32", "argsort_network_max_64",
                         "sort_tiny_max",          "argsort_tiny_max",       "presorted_min",
                         "sort_float_min_32",      "sort_float_min_64",      "sort_float_max_32",
                         "sort_float_max_64",      "sort_float_pair_min_32", "sort_float_pair_min_64",
                         "sort16_compress_min",    "sort_float_rows_max"};
  for (const char *e : g_engines) {
    kwker_set_isa(e);
    std::vector<int64_t> sizes;
    for (const char *k : knobs) {
      int64_t v = knob(k);
      for (int64_t d = -1; d <= 1; ++d)
        if (v + d >= 0) sizes.push_back(v + d);
    }
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    // Pass 0: the defaults; 1: every short path off; 2: the two-network merge from the first
    // size above one network.
    for (int pass = 0; pass < 3; ++pass) {
      if (pass == 1)
        for (const char *k : knobs) kwker_set_tuning(k, 0);
      if (pass == 2)
        for (const char *k : {"sort_pair_min_16", "sort_pair_min_32", "sort_pair_min_64",
                              "sort_float_pair_min_32", "sort_float_pair_min_64"})
          kwker_set_tuning(k, 0);
      for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype)
        for (int64_t n : sizes)
          for (int dist : {int(kwker::ref::kSpecials), int(kwker::ref::kFewDistinct),
                           int(kwker::ref::kSorted), int(kwker::ref::kReversed)})
            for (unsigned flags : {0u, unsigned(KWKER_DESCENDING | KWKER_NANS_FIRST)}) {
              std::vector<uint8_t> data = kwker::ref::generate(dtype, dist, n, 3);
              std::vector<uint8_t> want(data.size() + 1);
              std::vector<int64_t> wi(size_t(n) + 1);
              kwker::ref::sort(dtype, data.data(), want.data(), n, flags);
              kwker::ref::argsort(dtype, data.data(), n, wi.data(), flags);
              g_where = std::string(e) + " knobs pass " + std::to_string(pass) + " " +
                        label(dtype, dist, n, flags);
              check_1d_now(dtype, data, n, flags, want, wi, 0);
              if (n > 0 && n <= 1000) {
                std::vector<uint8_t> rows = kwker::ref::generate(dtype, dist, 3 * n, 4);
                RowRef rw(dtype, rows, 3, n, flags);
                check_rows_now(dtype, rows, 3, n, flags, rw, 0);
              }
            }
      for (const char *k : knobs) kwker_set_tuning(k, -1);
    }
  }
  // 16-bit counting thresholds and the LSD radix for 64-bit keys, at their boundaries.
  for (int dtype : {KWKER_INT16, KWKER_UINT16, KWKER_FLOAT16})
    for (const char *k : {"count16_sort_min", "count16_argsort_min"}) {
      kwker_set_isa(nullptr);
      int64_t v = knob(k);
      for (int64_t n : {v - 1, v, v + 1})
        check_1d_all(dtype, kwker::ref::kUniform, n, KWKER_DESCENDING, std::string(k) + " boundary");
    }
}

// 64-bit keys whose packed prefixes tie: the full key range is used (so key bits are dropped)
// and most keys differ from a few bases only in their lowest bits.
std::vector<uint8_t> prefix_ties(int dtype, int64_t n, uint64_t seed) {
  std::vector<uint8_t> out(size_t(n) * 8);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + uint64_t(dtype);
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  uint64_t bases[4];
  for (auto &b : bases) b = next() & ~uint64_t(0xFF);
  if (dtype == KWKER_FLOAT64)  // finite values around 1.0, 2^40 and -3.5, plus both infinities
    bases[0] = 0x3FF0000000000000ull, bases[1] = 0x4270000000000000ull,
    bases[2] = 0xC00C000000000000ull, bases[3] = 0x0000000000000100ull;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = next(), bits = bases[r % 4] + ((r >> 8) % 7);
    if (i % 17 == 3) bits = dtype == KWKER_FLOAT64 ? 0x7FF0000000000000ull : ~uint64_t(0) >> 1;
    if (i % 19 == 5) bits = dtype == KWKER_FLOAT64 ? 0xFFF0000000000000ull : uint64_t(1) << 63;
    if (dtype == KWKER_DATETIME && bits == uint64_t(1) << 63) bits += 1;  // keep NaT out of the extremes
    std::memcpy(out.data() + i * 8, &bits, 8);
  }
  return out;
}

void test_packed64() {
  for (int dtype : {KWKER_INT64, KWKER_UINT64, KWKER_FLOAT64, KWKER_DATETIME}) {
    for (int64_t n = 2; n <= 300; n += (n < 40 ? 1 : 23))
      for (unsigned flags = 0; flags < 4; ++flags) {
        std::vector<uint8_t> data = prefix_ties(dtype, n, uint64_t(n));
        check_1d_all(dtype, kwker::ref::kUniform, n, flags, "prefix ties", &data);
        if (n <= 130) {
          std::vector<uint8_t> rows = prefix_ties(dtype, 5 * n, uint64_t(n) + 1);
          RowRef want(dtype, rows, 5, n, flags);
          for (const char *e : g_engines) {
            kwker_set_isa(e);
            g_where = std::string(e) + " prefix-tie rows " + label(dtype, 0, 5 * n, flags);
            check_rows_now(dtype, rows, 5, n, flags, want, 0);
          }
        }
      }
    // The sequential and the parallel packed sort (aligned splitters), and the LSD radix.
    for (int64_t n : {5000, 150000})
      for (int threads : {1, 2}) {
        std::vector<uint8_t> data = prefix_ties(dtype, n, 77);
        check_1d_all(dtype, kwker::ref::kUniform, n, KWKER_DESCENDING, "prefix ties", &data, threads);
        kwker_set_tuning("radix64_argsort_max_bits", 64);
        kwker_set_tuning("radix64_argsort_min", 0);
        check_1d_all(dtype, kwker::ref::kUniform, n, 0, "prefix ties, radix", &data, threads);
        kwker_set_tuning("radix64_argsort_max_bits", -1);
        kwker_set_tuning("radix64_argsort_min", -1);
      }
  }
  // The radix counts only the 11-bit digits its key range spans: ranges ending on either side
  // of a digit boundary, above an arbitrary smallest key, at every size from a few keys (one
  // digit: four interleaved sub-chunks a thread, some empty at 3 keys, uneven at 150,001).
  kwker_set_tuning("radix64_argsort_max_bits", 64);
  kwker_set_tuning("radix64_argsort_min", 0);
  for (int bits : {0, 1, 10, 11, 12, 21, 22, 23, 33, 34, 44, 55, 63})
    for (int64_t n : {3, 100, 2500, 70000, 150001}) {
      std::vector<uint8_t> data(size_t(n) * 8);
      uint64_t s = uint64_t(bits) * 0x9E3779B97F4A7C15ull + uint64_t(n);
      const uint64_t base = (s >> 3) * 0x2545F4914F6CDD1Dull >> 2;  // any smallest key
      const uint64_t span = bits >= 63 ? ~uint64_t(0) >> 1 : (uint64_t(1) << bits) - 1;
      for (int64_t i = 0; i < n; ++i) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const uint64_t v = base + (span ? s % (span + 1) : 0);
        memcpy(&data[size_t(i) * 8], &v, 8);
      }
      check_1d_all(KWKER_INT64, kwker::ref::kUniform, n, 0,
                   ("radix over " + std::to_string(bits) + " bits").c_str(), &data, 0);
    }
  kwker_set_tuning("radix64_argsort_max_bits", -1);
  kwker_set_tuning("radix64_argsort_min", -1);
}

// Inputs of few distinct values (the dictionary-counting path): NaNs with several payloads and
// both zeros among them, and the same with values the sample cannot have seen: they join the
// dictionary while it has room (16), else the attempt aborts and the quicksort takes over; one
// is an all-ones pattern (a NaN with a payload for the floats), which the in-place float path
// must not take into its dictionary (it gives up instead).
// From 1,024 keys (kFewDistinctMin), 16-bit keys too: short inputs whose tail is not a whole
// vector, and one of several threads.
void test_few_distinct() {
  for (int dtype : {KWKER_FLOAT32, KWKER_FLOAT64, KWKER_INT32, KWKER_UINT64, KWKER_DATETIME,
                    KWKER_INT16, KWKER_UINT16, KWKER_FLOAT16})
    for (int64_t n : {int64_t(1030), int64_t(3001), int64_t(150000)}) {
      for (int extra = 0; extra < 5; ++extra)
        for (unsigned flags : {0u, unsigned(KWKER_DESCENDING | KWKER_NANS_FIRST)}) {
          const int w = dtype_size(dtype);
          std::vector<uint8_t> pool = kwker::ref::generate(dtype, kwker::ref::kSpecials, 12, 9);
          std::vector<uint8_t> data(size_t(n * w));
          uint64_t s = 12345;
          for (int64_t i = 0; i < n; ++i) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            std::memcpy(data.data() + i * w, pool.data() + (s >> 33) % 12 * w, size_t(w));
          }
          if (extra == 1 || extra == 2)  // a late newcomer
            std::memset(data.data() + (n - 7) * w, extra == 1 ? 0x5B : 0xFF, size_t(w));
          // Newcomers in several blocks: 4 (16 distinct, the dictionary grows block by block) or
          // 5 (17: the attempt aborts after counting most of the input).
          if (extra >= 3)
            for (int j = 0; j < extra + 1; ++j)
              std::memset(data.data() + (n / 3 + j * 9001) % n * w, 0x11 * (j + 1), size_t(w));
          check_1d_all(dtype, kwker::ref::kSpecials, n, flags,
                       extra ? "few distinct + unseen values" : "few distinct", &data, 1);
        }
    }
  // 9 to 16 distinct 32-bit keys (the avx512 engine counts them through a perfect hash):
  // values that differ only in their top bits (the hardest for a multiplicative hash), small
  // consecutive integers, float-like exponents; a newcomer in the first or the last full block
  // (the hash is rebuilt as the dictionary grows), or a 17th value; one and two threads.
  for (int dtype : {KWKER_FLOAT32, KWKER_INT32, KWKER_UINT32})
    for (int shape = 0; shape < 3; ++shape)
      for (int d : {9, 13, 16})
        for (int late = 0; late < 3; ++late) {
          const int64_t n = 120000 + 16 * d + late;
          std::vector<uint32_t> vals(static_cast<size_t>(d));
          for (int j = 0; j < d; ++j)
            vals[size_t(j)] = shape == 0 ? uint32_t(j) << 28 : shape == 1 ? uint32_t(j)
                                                                        : uint32_t(127 + j) << 23;
          const int have = late ? d - 1 : d;  // late: the last value only appears at `at`
          std::vector<uint32_t> data(static_cast<size_t>(n));
          uint64_t s = 777 + uint64_t(d);
          for (int64_t i = 0; i < n; ++i) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            data[size_t(i)] = vals[size_t((s >> 33) % uint64_t(have))];
          }
          if (late) {
            const int64_t at = late == 1 ? 100 : (n / 2048 - 1) * 2048 + 5;
            data[size_t(at)] = vals[size_t(d - 1)];
            if (d == 16 && shape == 2) data[size_t(at + 1)] = 0x7F000001u;  // a 17th value
          }
          std::vector<uint8_t> bytes(size_t(n) * 4);
          std::memcpy(bytes.data(), data.data(), bytes.size());
          for (int threads : {1, 2})
            check_1d_all(dtype, kwker::ref::kSpecials, n, threads == 2 ? KWKER_DESCENDING : 0u,
                         "9-16 distinct 32-bit keys", &bytes, threads);
        }
}

// Float keys compared as floats (vq::FOps, from sort_float_min_32 / _64 to _max_ keys, where the
// engine has them): finite values with denormals, both infinities, +0.0 and ties, so that the
// float path is taken; then one -0.0 or one NaN among them (both must send the call back to the
// integer keys) and MXCSR's DAZ bit set (float comparisons would read denormals as zero). Each
// with the knobs at their defaults, forced down to 2 keys, and off; and with the window off but
// sort_float_rows_max covering every row, so that rows alone compare as floats.
std::vector<uint8_t> plain_floats(int dtype, int64_t n, uint64_t seed, int special, bool last = false) {
  const int w = dtype_size(dtype);
  std::vector<uint8_t> out(size_t(n * w));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + uint64_t(n);
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = next(), bits;
    if (w == 4) {
      bits = r & 0xFFFFFFFFu;
      if (((bits >> 23) & 0xFF) == 0xFF) bits = (bits & 0x80000000u) | 0x7F800000u;  // +-inf
      if (i % 7 == 1) bits &= 0x807FFFFFu;                                          // denormal
      if (bits == 0x80000000u) bits = 0;
    } else {
      bits = r;
      if (((bits >> 52) & 0x7FF) == 0x7FF) bits = (bits & (1ull << 63)) | 0x7FF0000000000000ull;
      if (i % 7 == 1) bits &= 0x800FFFFFFFFFFFFFull;
      if (bits == 1ull << 63) bits = 0;
    }
    if (i % 11 == 2) bits = 0;
    if (i % 5 == 3 && i > 3) std::memcpy(&bits, out.data() + (i / 2) * w, size_t(w));  // a tie
    std::memcpy(out.data() + i * w, &bits, size_t(w));
  }
  if (n > 0 && special) {
    const uint64_t bits = special == 1 ? (w == 4 ? 0x80000000ull : 1ull << 63)       // -0.0
                                       : (w == 4 ? 0x7FC00001ull : 0x7FF8000000000001ull);
    std::memcpy(out.data() + (last ? n - 1 : n / 3) * w, &bits, size_t(w));
  }
  return out;
}

void test_float_compares() {
  const int64_t sizes[] = {2,  3,  8,  9,  15,  16,  17,  31,  33,  64,  65,  100,   127,
                           128, 129, 200, 255, 256, 257, 300, 511, 512, 513, 1000, 4099, 150001};
  for (int dtype : {KWKER_FLOAT32, KWKER_FLOAT64})
    for (int pass = 0; pass < 5; ++pass) {  // default knobs, forced on, off, DAZ set, rows only
      const bool f32 = dtype == KWKER_FLOAT32;
      kwker_set_tuning(f32 ? "sort_float_min_32" : "sort_float_min_64",
                       pass == 1 || pass == 3 ? 2 : pass == 2 || pass == 4 ? 0 : -1);
      kwker_set_tuning(f32 ? "sort_float_max_32" : "sort_float_max_64",
                       pass == 1 || pass == 3 ? int64_t(1) << 40 : -1);
      kwker_set_tuning("sort_float_rows_max",
                       pass == 2 ? 0 : pass == 3 || pass == 4 ? int64_t(1) << 40 : -1);
      const unsigned csr = _mm_getcsr();
      if (pass == 3) _mm_setcsr(csr | 0x40u);
      for (int64_t n : sizes)
        for (int variant = 0; variant < 5; ++variant)  // none; -0.0, NaN at n / 3; at the end
          for (unsigned flags : {0u, unsigned(KWKER_DESCENDING), unsigned(KWKER_NANS_FIRST)}) {
            const int special = variant == 0 ? 0 : 1 + (variant - 1) % 2;
            const bool last = variant >= 3;  // the checks' tail (or, at multiples of 32 keys,
                                             // their unrolled steps' last lane)
            std::vector<uint8_t> data =
                plain_floats(dtype, n, uint64_t(pass * 7 + special), special, last);
            std::vector<uint8_t> want(data.size() + 1);
            kwker::ref::sort(dtype, data.data(), want.data(), n, flags);
            const int w = dtype_size(dtype);
            for (const char *e : g_engines) {
              kwker_set_isa(e);
              g_where = std::string(e) + " float compares pass " + std::to_string(pass) +
                        " special " + std::to_string(special) + (last ? " at the end " : " ") +
                        label(dtype, kwker::ref::kUniform, n, flags);
              Guarded out(size_t(n * w));
              int rc = kwker_sort_copy(dtype, data.data(), out.data(), n, flags, 1);
              check(rc == KWKER_OK && out.intact() &&
                        kwker::ref::values_equal(dtype, out.data(), want.data(), n),
                    "sort_copy");
              Guarded in(size_t(n * w));
              std::memcpy(in.data(), data.data(), size_t(n * w));
              rc = kwker_sort(dtype, in.data(), n, flags, 1);
              check(rc == KWKER_OK && in.intact() &&
                        kwker::ref::values_equal(dtype, in.data(), want.data(), n),
                    "sort in place");
              if (n <= 1000) {  // rows of up to 16 keys: enough of them for the float rows
                const int64_t nr = n <= 16 ? 40 : 3;  // (rows_as_floats: 256 keys in all)
                std::vector<uint8_t> rows = plain_floats(dtype, nr * n, uint64_t(n), special, last);
                RowRef rw(dtype, rows, nr, n, flags);
                check_rows_now(dtype, rows, nr, n, flags, rw, 1);
              }
            }
          }
      _mm_setcsr(csr);
      kwker_set_tuning(f32 ? "sort_float_min_32" : "sort_float_min_64", -1);
      kwker_set_tuning(f32 ? "sort_float_max_32" : "sort_float_max_64", -1);
      kwker_set_tuning("sort_float_rows_max", -1);
    }
}

// The in-place ascending float sort finds NaNs inside its first partition (vq::sort_unless_above)
// and stops there, having moved only non-NaN values. NaNs (several payloads, both signs) placed
// where the stop happens at different moments: in the keys set aside before the vectors, in the
// vectors saved at either end, in the main loop from either side, in its one-vector tail, and
// in the range small enough for one scalar check; on two threads, in the blocks the parallel
// sort's split reads (each checked before anything is written back); every engine, against the stable reference
// (NaNs in input order). Then inputs already sorted or reversed as floats with their NaN block
// (the presorted check, which then counts no NaNs either).
void test_nan_stops() {
  for (int dtype : {KWKER_FLOAT32, KWKER_FLOAT64}) {
    const int w = dtype_size(dtype);
    const uint64_t nan_a = w == 4 ? 0x7FC00000ull : 0x7FF8000000000000ull;
    const uint64_t nan_b = w == 4 ? 0xFFC00123ull : 0xFFF8000000000123ull;  // negative, payload
    const uint64_t nan_c = w == 4 ? 0x7F800001ull : 0x7FF0000000000001ull;  // signalling
    for (int64_t n : {200, 513, 1000, 4099, 20001, 150001}) {
      const int64_t spots[] = {0, 3, 15, 17, 100, n / 4, n / 3, n / 2, n / 2 + 40, n - 120, n - 1};
      for (int64_t at : spots) {
        if (at < 0 || at >= n) continue;
        for (int many = 0; many < 2; ++many) {
          std::vector<uint8_t> data = plain_floats(dtype, n, uint64_t(n + at), 0);
          auto put = [&](int64_t i, uint64_t bits) { std::memcpy(data.data() + i * w, &bits, size_t(w)); };
          put(at, many ? nan_b : nan_a);
          if (many) {  // two more, later, with other payloads
            put((at + n / 2 + 7) % n, nan_c);
            put((at + n - 5) % n, nan_a);
          }
          std::vector<uint8_t> want(data.size() + 1);
          kwker::ref::sort(dtype, data.data(), want.data(), n, 0);
          for (const char *e : g_engines)
            for (int threads : {1, 2}) {  // 2: the parallel sort's split checks (n >= 100,000)
              if (threads == 2 && n < 100000) continue;
              kwker_set_isa(e);
              g_where = std::string(e) + " NaN at " + std::to_string(at) + (many ? " (+2)" : "") +
                        " " + label(dtype, kwker::ref::kUniform, n, 0) + " threads " +
                        std::to_string(threads);
              Guarded in(size_t(n * w));
              std::memcpy(in.data(), data.data(), size_t(n * w));
              int rc = kwker_sort(dtype, in.data(), n, 0, threads);
              check(rc == KWKER_OK && in.intact() &&
                        kwker::ref::values_equal(dtype, in.data(), want.data(), n),
                    "sort in place");
            }
          if (at != n / 3) continue;
          // Presorted as floats: ascending (NaNs already last) and non-increasing (NaNs first).
          for (unsigned order : {0u, unsigned(KWKER_DESCENDING | KWKER_NANS_FIRST)}) {
            std::vector<uint8_t> pre(data.size() + 1);
            kwker::ref::sort(dtype, data.data(), pre.data(), n, order);
            std::vector<uint8_t> want2(data.size() + 1);
            kwker::ref::sort(dtype, pre.data(), want2.data(), n, 0);
            for (const char *e : g_engines) {
              kwker_set_isa(e);
              g_where = std::string(e) + (order ? " reversed" : " sorted") + " with NaNs " +
                        label(dtype, kwker::ref::kUniform, n, 0);
              Guarded in(size_t(n * w));
              std::memcpy(in.data(), pre.data(), size_t(n * w));
              int rc = kwker_sort(dtype, in.data(), n, 0, 1);
              check(rc == KWKER_OK && in.intact() &&
                        kwker::ref::values_equal(dtype, in.data(), want2.data(), n),
                    "presorted sort in place");
            }
          }
        }
      }
    }
  }
}

// Bit patterns already ascending (or descending) as signed integers, the order the in-place
// float sort checks for first: NaNs then sit only at the end (positive ones, payloads ascending)
// and at the end of the negative block (negative ones), where two reads must find them; the
// descending variant is reversed by the check and must come back in input order for the NaN
// gathering. Without NaNs, the same inputs take the fast path. Every engine, 1 and 2 threads;
// 2,200,001 keys: above the linear passes' thread threshold, the check and both reversals split
// over two threads (an odd count leaves a middle key).
void test_int_presorted_floats() {
  for (int dtype : {KWKER_FLOAT32, KWKER_FLOAT64})
    for (int64_t n : {3000, 150001, 2200001})
      for (int nans = 0; nans < 4; ++nans)  // none, positive, negative, both
        for (int desc = 0; desc < 2; ++desc) {
          const int w = dtype_size(dtype);
          const int shift = w * 8 - 1;
          std::vector<uint64_t> bits(static_cast<size_t>(n));
          const int64_t neg = n / 3;
          for (int64_t i = 0; i < n; ++i) {  // ascending as integers: -0.0, -tiny .. -big, then 0 ..
            uint64_t mag = uint64_t(i < neg ? i : i - neg) * 3 + 1;
            bits[size_t(i)] = i < neg ? ((1ull << shift) | mag) : mag;
          }
          const uint64_t inf = w == 4 ? 0x7F800000ull : 0x7FF0000000000000ull;
          const uint64_t quiet = w == 4 ? 0x00400000ull : 0x0008000000000000ull;
          if (nans & 1) {  // positive NaNs, payloads ascending, at the very end
            bits[size_t(n - 2)] = inf | quiet;
            bits[size_t(n - 1)] = inf | quiet | 5;
          }
          if (nans & 2)  // a negative NaN: the largest negative integer, last of the block
            bits[size_t(neg - 1)] = (1ull << shift) | inf | quiet | 7;
          if (desc) std::reverse(bits.begin(), bits.end());
          std::vector<uint8_t> data(size_t(n * w));
          for (int64_t i = 0; i < n; ++i) std::memcpy(data.data() + i * w, &bits[size_t(i)], size_t(w));
          std::vector<uint8_t> want(data.size() + 1);
          kwker::ref::sort(dtype, data.data(), want.data(), n, 0);
          for (const char *e : g_engines)
            for (int threads : {1, 2}) {
              kwker_set_isa(e);
              g_where = std::string(e) + " integer-presorted floats, NaNs " + std::to_string(nans) +
                        (desc ? " descending " : " ") + label(dtype, kwker::ref::kSorted, n, 0) +
                        " threads " + std::to_string(threads);
              Guarded in(size_t(n * w));
              std::memcpy(in.data(), data.data(), size_t(n * w));
              const int rc = kwker_sort(dtype, in.data(), n, 0, threads);
              check(rc == KWKER_OK && in.intact() &&
                        kwker::ref::values_equal(dtype, in.data(), want.data(), n),
                    "sort in place");
            }
        }
}

// Strictly decreasing keys but for one tie, which the presorted check must report so that the
// reversed argsort puts the pair back in index order (a strictly decreasing input skips that
// search): the tie near either end, on the two threads' split (2,200,001 keys: the check in two
// parts) and none; for floats also -0.0 beside +0.0 and two NaNs with different payloads, which
// tie as keys but not as bits. int32 / int64 read the values (values_in_key_order), the floats
// their encoded keys. Every engine, 1 and 2 threads, sort and argsort against the reference.
void test_reversed_one_tie() {
  for (int dtype : {KWKER_INT32, KWKER_INT64, KWKER_FLOAT32, KWKER_FLOAT64})
    for (int64_t n : {int64_t(5001), int64_t(2200001)})
      for (int kind = 0; kind < (dtype >= KWKER_FLOAT32 ? 3 : 1); ++kind)  // equal, +-0, NaNs
        for (int64_t at : {int64_t(-1), int64_t(0), n / 2 - 1, n / 2, n - 2}) {
          if (kind && at < 0) continue;
          if (n > 5001 && (dtype == KWKER_INT64 || dtype == KWKER_FLOAT32 || kind)) continue;
          const int w = dtype_size(dtype);
          std::vector<uint8_t> data(size_t(n * w));
          for (int64_t i = 0; i < n; ++i) {  // n - i, strictly decreasing, in the dtype
            const int64_t v = n - i;
            if (dtype == KWKER_INT32) { const int32_t x = int32_t(v); std::memcpy(&data[size_t(i * w)], &x, 4); }
            if (dtype == KWKER_INT64) { const int64_t x = v; std::memcpy(&data[size_t(i * w)], &x, 8); }
            if (dtype == KWKER_FLOAT32) { const float x = float(v); std::memcpy(&data[size_t(i * w)], &x, 4); }
            if (dtype == KWKER_FLOAT64) { const double x = double(v); std::memcpy(&data[size_t(i * w)], &x, 8); }
          }
          if (at >= 0) {
            uint8_t *p = &data[size_t(at * w)], *q = &data[size_t((at + 1) * w)];
            if (kind == 0) std::memcpy(q, p, size_t(w));  // keys at and at + 1 equal
            if (kind == 1) {  // ..., +0.0, -0.0, then the rest negative: a tie as keys
              for (int64_t i = at; i < n; ++i) {
                const double v = i == at || i == at + 1 ? 0.0 : -double(i - at);
                if (w == 4) { const float x = float(v); std::memcpy(&data[size_t(i * w)], &x, 4); }
                else std::memcpy(&data[size_t(i * w)], &v, 8);
              }
              data[size_t((at + 1) * w + w - 1)] |= 0x80;  // the second zero negative
            }
            if (kind == 2) {  // two NaNs, the largest keys, first
              if (at > 0) continue;
              const uint64_t a = w == 4 ? 0x7FC00123ull : 0x7FF8000000000123ull;
              const uint64_t b = w == 4 ? 0xFFC00456ull : 0xFFF8000000000456ull;
              std::memcpy(p, &a, size_t(w));
              std::memcpy(q, &b, size_t(w));
            }
          }
          for (int threads : {1, 2}) {
            if (n > 5001 && threads == 1) continue;
            check_1d_all(dtype, kwker::ref::kReversed, n, 0u,
                         "strictly decreasing, tie kind " + std::to_string(kind) + " at " +
                             std::to_string(at),
                         &data, threads);
          }
        }
}

// 64-bit keys whose quicksort leaves compare doubles on AVX2 (vq::KeyKind kInt64AsDouble /
// kFloatBits): int64 keys on both sides of 0, of the monotone range's ends (+inf's bits
// 0x7FF0... and its complement) and of the extremes, small ones (denormals as doubles), with
// MXCSR's DAZ bit clear and set (set: the integer leaves); sort, in place and argsort.
void test_int64_leaves_as_doubles() {
  const int64_t kInf = 0x7FF0000000000000;
  const int64_t anchors[] = {0, -1, kInf, ~kInf, INT64_MAX, INT64_MIN, 1000, -1000};
  for (int64_t n : {int64_t(300), int64_t(5000), int64_t(150001)})
    for (int daz = 0; daz < 2; ++daz)
      for (unsigned flags : {0u, unsigned(KWKER_DESCENDING)}) {
        std::vector<int64_t> v(static_cast<size_t>(n));
        uint64_t s = uint64_t(n) * 77 + daz;
        for (int64_t i = 0; i < n; ++i) {
          s ^= s << 13;
          s ^= s >> 7;
          s ^= s << 17;
          const int64_t anchor = anchors[s % 8];
          v[size_t(i)] = int64_t(uint64_t(anchor) + (s >> 40) % 257 - 128);  // wraps at the ends
          if (i % 9 == 4) v[size_t(i)] = v[size_t(i / 2)];                  // ties
        }
        std::vector<int64_t> want(size_t(n) + 1), wi(size_t(n) + 1);
        kwker::ref::sort(KWKER_INT64, v.data(), want.data(), n, flags);
        kwker::ref::argsort(KWKER_INT64, v.data(), n, wi.data(), flags);
        const unsigned csr = _mm_getcsr();
        if (daz) _mm_setcsr(csr | 0x40u);
        for (const char *e : g_engines) {
          kwker_set_isa(e);
          g_where = std::string(e) + " int64 leaves as doubles, DAZ " + std::to_string(daz) +
                    " " + label(KWKER_INT64, kwker::ref::kUniform, n, flags);
          for (int threads : {1, 2}) {
            Guarded out(size_t(n * 8));
            int rc = kwker_sort_copy(KWKER_INT64, v.data(), out.data(), n, flags, threads);
            check(rc == KWKER_OK && out.intact() &&
                      std::memcmp(out.data(), want.data(), size_t(n * 8)) == 0,
                  "sort_copy");
            Guarded in(size_t(n * 8));
            std::memcpy(in.data(), v.data(), size_t(n * 8));
            rc = kwker_sort(KWKER_INT64, in.data(), n, flags, threads);
            check(rc == KWKER_OK && in.intact() &&
                      std::memcmp(in.data(), want.data(), size_t(n * 8)) == 0,
                  "sort in place");
            Guarded idx(size_t(n * 8));
            rc = kwker_argsort(KWKER_INT64, v.data(), n, reinterpret_cast<int64_t *>(idx.data()),
                               flags, threads);
            check(rc == KWKER_OK && idx.intact() &&
                      std::memcmp(idx.data(), wi.data(), size_t(n * 8)) == 0,
                  "argsort");
          }
        }
        _mm_setcsr(csr);
      }
}

// One-thread float copies from 100,000 keys: the copy rides on the quicksort's first partition
// (vq::partition_copy), which a NaN stops wherever it sits (among the keys set aside at the
// front, in the unrolled loop, in the last vectors); presorted input with NaN payloads is
// copied block by block instead. Every engine against the reference, NaN payloads in input
// order.
void test_float_copy_partition() {
  for (int dtype : {KWKER_FLOAT32, KWKER_FLOAT64})
    for (int64_t n : {int64_t(100003), int64_t(250001)})
      for (int shape = 0; shape < 3; ++shape)          // random, sorted, reversed
        for (int64_t at : {int64_t(-1), int64_t(0), int64_t(2), n / 2, n - 9, n - 1}) {
          const int w = dtype_size(dtype);
          std::vector<uint8_t> data = plain_floats(dtype, n, uint64_t(n + shape), 0);
          if (shape) {
            std::vector<uint8_t> tmp(data.size() + 1);
            kwker::ref::sort(dtype, data.data(), tmp.data(), n, shape == 2 ? KWKER_DESCENDING : 0u);
            std::memcpy(data.data(), tmp.data(), data.size());
          }
          if (at >= 0) {  // two NaNs with different payloads, one of them negative
            const uint64_t a = w == 4 ? 0x7FC00123ull : 0x7FF8000000000123ull;
            const uint64_t b = w == 4 ? 0xFFC00456ull : 0xFFF8000000000456ull;
            std::memcpy(data.data() + at * w, &a, size_t(w));
            std::memcpy(data.data() + ((at + n / 3) % n) * w, &b, size_t(w));
          }
          std::vector<uint8_t> want(data.size() + 1);
          kwker::ref::sort(dtype, data.data(), want.data(), n, 0);
          for (const char *e : g_engines) {
            kwker_set_isa(e);
            g_where = std::string(e) + " float copy partition, shape " + std::to_string(shape) +
                      " NaN at " + std::to_string(at) + " " +
                      label(dtype, kwker::ref::kUniform, n, 0);
            Guarded out(size_t(n * w));
            const int rc = kwker_sort_copy(dtype, data.data(), out.data(), n, 0, 1);
            check(rc == KWKER_OK && out.intact() &&
                      std::memcmp(out.data(), want.data(), size_t(n * w)) == 0,
                  "sort_copy");
          }
        }
}

// 16-bit value sorts through the quicksorts at every size (the counting sort held off): on
// compressed 16-bit lanes where the avx512 engine has them (AVX512-VBMI2 CPUs,
// core/sort16_compress.h) and, with sort16_compress_min at 0, widened to 32 bits; one thread and
// two (the parallel sort's split, from 200,000 keys), every distribution, both orders.
void test_sort16_quicksorts() {
  int64_t compress_default = 1025;  // the avx512 engine's, where this CPU runs it
  for (const char *e : g_engines) {
    kwker_set_isa(e);
    if (knob("sort16_compress_min") > 0) compress_default = knob("sort16_compress_min");
  }
  kwker_set_tuning("count16_sort_min", int64_t(1) << 40);
  for (int64_t setting : {int64_t(-1), int64_t(0)}) {
    kwker_set_tuning("sort16_compress_min", setting);
    const std::string tag = setting == 0 ? "16-bit widened" : "16-bit compressed (default)";
    for (int dtype : {KWKER_INT16, KWKER_UINT16, KWKER_FLOAT16, KWKER_BFLOAT16})
      for (int64_t n : {compress_default, int64_t(4099), int64_t(70001), int64_t(250001)})
        for (int dist = 0; dist < kwker::ref::kNumDists; ++dist)
          for (unsigned flags : {0u, unsigned(KWKER_DESCENDING | KWKER_NANS_FIRST)}) {
            if (n < 200000) {
              check_1d_all(dtype, dist, n, flags, tag, nullptr, 1);
            } else if (dist == kwker::ref::kUniform || dist == kwker::ref::kFewDistinct ||
                       dist == kwker::ref::kNanHeavy) {
              check_1d_all(dtype, dist, n, flags, tag, nullptr, 2);
            }
          }
  }
  kwker_set_tuning("sort16_compress_min", -1);
  kwker_set_tuning("count16_sort_min", -1);
}

// Integers whose first and last keys are equal: presorted only when all keys are (the check
// then compares each key with the first and fills the output). One key below or above the
// others at the front, in the middle, at the end of a block or one from the end must turn it
// away; all equal must come back whole. Every integer width, signed and unsigned, ascending and
// descending, one and two threads, above and below the parallel passes' size.
void test_equal_ends() {
  for (int dtype : {KWKER_INT8, KWKER_UINT8, KWKER_INT16, KWKER_UINT16, KWKER_INT32,
                    KWKER_UINT32, KWKER_INT64, KWKER_UINT64})
    for (int64_t n : {int64_t(300), int64_t(5000), int64_t(2100000)})
      for (int64_t at : {int64_t(-1), int64_t(1), n / 2, int64_t(2048), n - 2})
        for (int delta : {-1, 1}) {
          if (at >= n) continue;
          // Time: the split check (2.1e6 keys) once, uint64, all equal or odd one from the end.
          const bool big = n > 5000;
          if (big && (dtype != KWKER_UINT64 || delta < 0 || (at != -1 && at != n - 2))) continue;
          const int w = dtype_size(dtype);
          std::vector<uint8_t> data(size_t(n * w), 0x40);
          if (at >= 0) data[size_t(at * w)] = uint8_t(0x40 + delta);  // lowest byte: +-1
          for (unsigned flags : {0u, unsigned(KWKER_DESCENDING)})
            for (int threads : {1, 2}) {
              if (big && (flags || threads == 1)) continue;
              check_1d_all(dtype, kwker::ref::kAllEqual, n, flags,
                           "equal ends, odd key at " + std::to_string(at), &data, threads);
            }
        }
}

}  // namespace

// The parallel float copy's canonical-NaN check (OddNanCheck, driver-inl.h): a third of the
// keys NaN, every one the canonical quiet NaN (the NaN block then is not restored from the
// input), or one NaN with other bits (a payload, or the sign) in the first block, in the last,
// or in the middle of the two-thread split, which must stop the checked split and restore that
// NaN in its place. Below and above the shared split (2,097,152 keys), two and three threads
// (the two-way and the counted split), both NaN orders.
void test_canonical_nans_copy() {
  for (int dtype : {KWKER_FLOAT32, KWKER_FLOAT64})
    for (int64_t n : {int64_t(250000), int64_t(2200000)})
      for (int64_t odd : {int64_t(-1), int64_t(0), n / 2 + 7, n - 1}) {
        const int w = dtype_size(dtype);
        std::vector<uint8_t> data = kwker::ref::generate(dtype, kwker::ref::kUniform, n, 41);
        const uint64_t qnan = w == 4 ? 0x7FC00000ull : 0x7FF8000000000000ull;
        for (int64_t i = 0; i < n; i += 3) std::memcpy(&data[size_t(i * w)], &qnan, size_t(w));
        for (int64_t i = 0; i < n; ++i) {  // the generator's own NaNs made canonical too
          uint64_t b = 0;
          std::memcpy(&b, &data[size_t(i * w)], size_t(w));
          const uint64_t mag = w == 4 ? (b & 0x7FFFFFFFull) : (b & 0x7FFFFFFFFFFFFFFFull);
          if (mag > (w == 4 ? 0x7F800000ull : 0x7FF0000000000000ull))
            std::memcpy(&data[size_t(i * w)], &qnan, size_t(w));
        }
        if (odd >= 0) {
          const uint64_t other = odd % 2 ? (w == 4 ? 0xFFC00000ull : 0xFFF8000000000000ull)
                                         : qnan | 0x5;
          std::memcpy(&data[size_t(odd * w)], &other, size_t(w));
        }
        if (n > 250000 && odd > 0 && odd < n - 1) continue;
        for (int threads : {2, 3}) {
          if (n > 250000 && threads == 3) continue;
          for (unsigned flags : {0u, unsigned(KWKER_NANS_FIRST)})
            if (n == 250000 || flags == 0)
            check_1d_all(dtype, kwker::ref::kNanHeavy, n, flags,
                         "canonical NaNs, odd at " + std::to_string(odd), &data, threads);
        }
      }
}

void run_short_tests() {
  test_nan_stops();
  test_int_presorted_floats();
  test_reversed_one_tie();
  test_canonical_nans_copy();
  test_few_distinct();
  test_equal_ends();
  test_row_lengths();
  test_padded_rows_threads();
  test_rows_split_thresholds();
  test_ragged();
  test_knob_boundaries();
  test_packed64();
  test_float_compares();
  test_int64_leaves_as_doubles();
  test_float_copy_partition();
  test_sort16_quicksorts();
  kwker_set_isa(nullptr);
}
