// Native tests: every engine this CPU runs x every dtype x distributions x sizes crossing every
// algorithm threshold, against the scalar reference, with red zones around every buffer.
// Prints "N passed, N failed" and exits non-zero on any failure.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "dispatch/reference.h"
#include "kwker/kwker.h"
#include "tests/native/harness.h"

using namespace harness;

namespace {

// One case, checked on every engine against one reference result (computed once).
void test_1d(int dtype, int dist, int64_t n, unsigned flags, int threads) {
  using namespace kwker;
  int w = ref::dtype_size(dtype);
  std::vector<uint8_t> data = ref::generate(dtype, dist, n, 1234);
  std::vector<uint8_t> orig = data;
  std::vector<uint8_t> want((size_t)(n * w) + 1);
  ref::sort(dtype, data.data(), want.data(), n, flags);
  std::vector<int64_t> wi((size_t)(n) + 1);
  ref::argsort(dtype, data.data(), n, wi.data(), flags);
  for (const char *engine : g_engines) {
    kwker_set_isa(engine);
    std::string l = std::string(engine) + " " + label(dtype, dist, n, flags) +
                    " threads=" + std::to_string(threads);
    Guarded out((size_t)(n * w));
    int rc = kwker_sort_copy(dtype, data.data(), out.data(), n, flags, threads);
    check(rc == KWKER_OK && ref::values_equal(dtype, out.data(), want.data(), n), "sort_copy " + l);
    check(out.intact(), "sort_copy red zone " + l);
    check(data == orig, "sort_copy modified its source " + l);

    Guarded inplace((size_t)(n * w));
    if (n) std::memcpy(inplace.data(), data.data(), (size_t)(n * w));
    rc = kwker_sort(dtype, inplace.data(), n, flags, threads);
    check(rc == KWKER_OK && ref::values_equal(dtype, inplace.data(), want.data(), n), "sort " + l);
    check(inplace.intact(), "sort red zone " + l);

    Guarded idx((size_t)(n * 8));
    rc = kwker_argsort(dtype, data.data(), n, reinterpret_cast<int64_t *>(idx.data()), flags,
                       threads);
    check(rc == KWKER_OK && (n == 0 || std::memcmp(idx.data(), wi.data(), (size_t)(n * 8)) == 0),
          "argsort " + l);
    check(idx.intact(), "argsort red zone " + l);
    check(data == orig, "argsort modified its source " + l);
  }
}

void test_segments(int dtype, int threads) {
  using namespace kwker;
  int w = ref::dtype_size(dtype);
  const int64_t n = 5000;
  std::vector<uint8_t> data = ref::generate(dtype, ref::kSpecials, n, 99);
  // Ragged offsets, with empty segments and untouched head and tail.
  std::vector<int64_t> offs = {7, 7, 8, 100, 100, 1000, 1001, 3000, 4990};
  for (unsigned flags = 0; flags < 4; ++flags) {
    g_where = std::string("segments ") + ref::dtype_name(dtype);
    Guarded got((size_t)(n * w));
    std::memcpy(got.data(), data.data(), size_t(n * w));
    int rc = kwker_sort_segments(dtype, got.data(), n, offs.data(), int64_t(offs.size()), flags, threads);
    std::vector<uint8_t> want = data;
    for (size_t s = 0; s + 1 < offs.size(); ++s)
      ref::sort(dtype, data.data() + offs[s] * w, want.data() + offs[s] * w, offs[s + 1] - offs[s], flags);
    check(rc == KWKER_OK && ref::values_equal(dtype, got.data(), want.data(), n), "sort_segments");
    check(got.intact(), "sort_segments red zone");

    Guarded gi((size_t)(n * 8));
    rc = kwker_argsort_segments(dtype, data.data(), n, offs.data(), int64_t(offs.size()),
                                reinterpret_cast<int64_t *>(gi.data()), flags, threads);
    std::vector<int64_t> wi((size_t)(n));
    for (int64_t j = 0; j < n; ++j) wi[size_t(j)] = j;
    for (size_t s = 0; s + 1 < offs.size(); ++s) {
      int64_t b = offs[s], len = offs[s + 1] - b;
      ref::argsort(dtype, data.data() + b * w, len, wi.data() + b, flags);
      for (int64_t j = 0; j < len; ++j) wi[size_t(b + j)] += b;
    }
    check(rc == KWKER_OK && std::memcmp(gi.data(), wi.data(), size_t(n * 8)) == 0, "argsort_segments");
    check(gi.intact(), "argsort_segments red zone");
  }
}

// Per-row sorts and top-k; the reference for each row is computed once and reused.
void test_rows_topk(int dtype, int threads) {
  using namespace kwker;
  int w = ref::dtype_size(dtype);
  for (int64_t rows : {1, 3, 200}) {
    for (int64_t cols : {1, 2, 17, 300, 1000}) {
      std::vector<uint8_t> data = ref::generate(dtype, ref::kNanHeavy, rows * cols, 5);
      for (unsigned flags = 0; flags < 4; ++flags) {
        std::vector<uint8_t> want_vals(data.size());
        std::vector<int64_t> want_idx((size_t)(rows * cols));
        for (int64_t r = 0; r < rows; ++r) {
          ref::sort(dtype, data.data() + r * cols * w, want_vals.data() + r * cols * w, cols, flags);
          ref::argsort(dtype, data.data() + r * cols * w, cols, want_idx.data() + r * cols, flags);
        }
        for (const char *engine : g_engines) {
          kwker_set_isa(engine);
          g_where = std::string(engine) + " " + label(dtype, ref::kNanHeavy, rows * cols, flags) +
                    " rows=" + std::to_string(rows);
          Guarded got(data.size());
          std::memcpy(got.data(), data.data(), data.size());
          int rc = kwker_sort_rows(dtype, got.data(), rows, cols, flags, threads);
          check(rc == KWKER_OK && got.intact() &&
                    ref::values_equal(dtype, got.data(), want_vals.data(), rows * cols),
                "sort_rows");
          Guarded copy(data.size());
          rc = kwker_sort_rows_copy(dtype, data.data(), copy.data(), rows, cols, flags, threads);
          check(rc == KWKER_OK && copy.intact() &&
                    ref::values_equal(dtype, copy.data(), want_vals.data(), rows * cols),
                "sort_rows_copy");
          Guarded gi((size_t)(rows * cols * 8));
          rc = kwker_argsort_rows(dtype, data.data(), rows, cols,
                                  reinterpret_cast<int64_t *>(gi.data()), flags, threads);
          check(rc == KWKER_OK && gi.intact() &&
                    std::memcmp(gi.data(), want_idx.data(), want_idx.size() * 8) == 0,
                "argsort_rows");
          for (int64_t k : {int64_t(0), int64_t(1), cols / 2, cols}) {
            for (int sorted = 0; sorted < 2; ++sorted) {
              Guarded tv((size_t)(rows * k * w)), ti((size_t)(rows * k * 8));
              rc = kwker_topk_rows(dtype, data.data(), rows, cols, k, flags, sorted, tv.data(),
                                   reinterpret_cast<int64_t *>(ti.data()), threads);
              bool ok = rc == KWKER_OK && tv.intact() && ti.intact();
              const int64_t *tip = reinterpret_cast<const int64_t *>(ti.data());
              for (int64_t r = 0; r < rows && ok; ++r) {
                std::vector<int64_t> want(want_idx.begin() + r * cols, want_idx.begin() + r * cols + k);
                if (!sorted) std::sort(want.begin(), want.end());
                ok = std::equal(want.begin(), want.end(), tip + r * k);
                for (int64_t j = 0; j < k && ok; ++j)
                  ok = std::memcmp(tv.data() + (r * k + j) * w,
                                   data.data() + (r * cols + tip[r * k + j]) * w, size_t(w)) == 0;
              }
              check(ok, "topk k=" + std::to_string(k) + " sorted=" + std::to_string(sorted));
            }
          }
        }
      }
    }
  }
}

void test_errors() {
  g_where = "errors";
  int32_t x[4] = {3, 1, 2, 0};
  int64_t out[4];
  check(kwker_sort(99, x, 4, 0, 0) == KWKER_E_DTYPE, "unknown dtype rejected");
  check(std::strstr(kwker_last_error(), "dtype") != nullptr, "dtype message");
  check(kwker_sort(KWKER_INT32, x, -1, 0, 0) == KWKER_E_INVALID_ARGUMENT, "negative n rejected");
  check(kwker_sort(KWKER_INT32, x, 4, 0, -1) == KWKER_E_INVALID_ARGUMENT, "negative threads rejected");
  check(kwker_sort(KWKER_INT32, x, 4, 8, 0) == KWKER_E_INVALID_ARGUMENT, "unknown flags rejected");
  int64_t bad[3] = {0, 3, 2};
  check(kwker_sort_segments(KWKER_INT32, x, 4, bad, 3, 0, 0) == KWKER_E_INVALID_ARGUMENT, "decreasing offsets");
  check(std::strstr(kwker_last_error(), "offsets[2]") != nullptr, "offsets message names the index");
  int64_t past[2] = {0, 5};
  check(kwker_argsort_segments(KWKER_INT32, x, 4, past, 2, out, 0, 0) == KWKER_E_INVALID_ARGUMENT, "offset past the end");
  int32_t tv[8];
  check(kwker_topk_rows(KWKER_INT32, x, 1, 4, 5, 0, 1, tv, out, 0) == KWKER_E_INVALID_ARGUMENT, "k > cols");
  check(kwker_set_isa("bogus") == KWKER_E_UNSUPPORTED_ISA, "unknown engine");
  check(kwker_set_max_threads(-1) == KWKER_E_INVALID_ARGUMENT, "negative max threads");
  check(kwker_set_max_threads(1) == KWKER_OK && kwker_get_max_threads() == 1, "max threads 1");
  check(kwker_set_max_threads(0) == KWKER_OK && kwker_get_max_threads() >= 1, "max threads cap removed");
  size_t need = 0;
  check(kwker_runtime_info(nullptr, 0, &need) == KWKER_E_BUFFER_TOO_SMALL && need > 100, "info size query");
  check(kwker_abi_version() == KWKER_ABI_VERSION, "abi version");
}

void run_matrix() {
  using namespace kwker;
  for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype) {
    g_where = ref::dtype_name(dtype);
    for (int64_t n = 0; n <= 300; n += (n < 40 ? 1 : 13))
      for (int dist = 0; dist < ref::kNumDists; ++dist)
        for (unsigned flags = 0; flags < 4; ++flags) test_1d(dtype, dist, n, flags, 0);
    // Sizes across the counting, parallel and network thresholds (130,000: above the parallel
    // sort threshold of 100,000 for 8-byte keys and the 16-bit counting argsort threshold of
    // 65,537; 250,000 below: above 4-byte keys' 200,000).
    for (int64_t n : {1000, 4099, 20001, 60001, 130000})
      for (int dist : {int(ref::kUniform), int(ref::kFewDistinct), int(ref::kNanHeavy),
                       int(ref::kSorted), int(ref::kReversed)})
        for (unsigned flags : {0u, unsigned(KWKER_DESCENDING | KWKER_NANS_FIRST)})
          test_1d(dtype, dist, n, flags, 0);
    for (int64_t n : {100000, 250000})
      for (int dist : {int(ref::kUniform), int(ref::kFewDistinct)})
        test_1d(dtype, dist, n, dist == ref::kUniform ? 0u : unsigned(KWKER_DESCENDING), 0);
    // Above the linear passes' thread threshold (core/engine.h): the presorted check and the
    // reversal split over two threads.
    if (dtype == KWKER_FLOAT32 || dtype == KWKER_INT64)
      for (int dist : {int(ref::kSorted), int(ref::kReversed)})
        test_1d(dtype, dist, 2200000, 0u, 2);
    // From 2,097,152 keys the parallel sort shares its work out (core/parallel-inl.h,
    // kSharedSortMin): the split in claimed chunks, the buckets cut further as threads come
    // free, on two and three threads (three buckets through the counted split).
    // float32: keys of 4 bytes, argsort packed with the index; int64: keys of 8 bytes, argsort
    // with dropped key bits (splitters rounded to the end of their prefix).
    if (dtype == KWKER_FLOAT32 || dtype == KWKER_INT64)
      test_1d(dtype, int(ref::kUniform), 2100000, 0u, 2);
    if (dtype == KWKER_FLOAT32) test_1d(dtype, int(ref::kUniform), 2100000, KWKER_DESCENDING, 3);
    for (const char *engine : g_engines) {
      kwker_set_isa(engine);
      g_where = std::string(engine) + " " + ref::dtype_name(dtype);
      test_segments(dtype, 0);
    }
    test_rows_topk(dtype, 0);
  }
}

void test_threads_and_modes() {
  using namespace kwker;
  for (int dtype : {KWKER_FLOAT32, KWKER_INT64, KWKER_UINT16, KWKER_FLOAT64, KWKER_INT8}) {
    g_where = std::string("threads/modes ") + ref::dtype_name(dtype);
    for (int threads : {1, 2, 3}) test_1d(dtype, ref::kUniform, 300000, 0, threads);
    // Adaptive only, and in-place only (no scratch): every fallback path.
    kwker_set_algorithms(0);
    test_1d(dtype, ref::kUniform, 120000, KWKER_DESCENDING, 2);
    test_1d(dtype, ref::kSorted, 5000, 0, 2);
    kwker_set_algorithms(KWKER_ALGO_ALL);
    kwker_set_scratch_limit(0);
    test_1d(dtype, ref::kNanHeavy, 120000, 0, 2);
    test_rows_topk(dtype, 2);
    kwker_set_scratch_limit(-1);
    // Above the 4-byte keys' thread threshold (200,000, core/driver-inl.h): the parallel NaN
    // paths with scratch.
    test_1d(dtype, ref::kNanHeavy, 250000, 0, 2);
  }
}

}  // namespace

int main(int argc, char **argv) {
  // A CPU-share page of this process's own (runtime/cpu_share.cc): the thread counts the tests
  // check must not shrink because other Kwker processes (make test's Python suites, which run
  // beside this one) are busy on the same CPUs.
  const std::string share = "/dev/shm/kwker-native-tests-" + std::to_string(int(getpid()));
  setenv("KWKER_CPU_SHARE_FILE", share.c_str(), 0);
  struct Unlink {
    std::string path;
    ~Unlink() { unlink(path.c_str()); }
  } unlink_share{share};
  const char *engines[] = {"portable", "sse4.2", "avx2", "avx512"};
  for (const char *e : engines) {
    if (kwker_isa_supported(e)) g_engines.push_back(e);
    else std::printf("engine %s: SKIPPED (this CPU does not run it)\n", e);
  }
  // Each part's wall time is printed so the suite's share of `make test` stays visible.
  // `kwker_native_tests linear pairs` runs only the parts named (while working on one of them).
  auto timed = [argc, argv](const char *name, void (*part)()) {
    bool wanted = argc < 2;
    for (int i = 1; i < argc; ++i) wanted = wanted || std::strcmp(argv[i], name) == 0;
    if (!wanted) return;
    auto t0 = std::chrono::steady_clock::now();
    part();
    std::printf("%s: %.1f s\n", name,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  };
  timed("errors", test_errors);
  timed("matrix", run_matrix);
  timed("threads and modes", test_threads_and_modes);
  timed("short inputs", run_short_tests);
  timed("pairs", run_pairs_tests);
  timed("linear", run_linear_tests);
  for (const char *e : g_engines) {
    size_t need = 0;
    kwker_self_check(e, nullptr, 0, &need);
    std::vector<char> buf(need);
    g_where = std::string("self_check ") + e;
    check(kwker_self_check(e, buf.data(), buf.size(), &need) == KWKER_OK, "self-check passes");
    std::printf("engine %s: tested\n", e);
  }
  kwker_set_isa(nullptr);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
