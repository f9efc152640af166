// kwker_self_check: runs one engine's table directly (the process-wide engine is untouched) on
// a fixed battery and compares every result with the scalar reference.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <string>
#include <vector>

#include "capi/errors.h"
#include "dispatch/dispatch.h"
#include "dispatch/json.h"
#include "dispatch/reference.h"
#include "kwker/kwker.h"
#include "runtime/threads.h"

namespace kwker {
extern std::atomic<unsigned> g_algos;
namespace {

// Test-only hook: KWKER_TEST_CORRUPT_ENGINE=<engine> flips one byte of that engine's results
// inside the self-check, so tests can prove that both doctors report a wrong engine (exit 1,
// engine named). Read only here; it never touches a user's sort.
thread_local const char *g_check_engine = "";
void corrupt_for_test(void *data, size_t bytes) {
  static const char *target = std::getenv("KWKER_TEST_CORRUPT_ENGINE");
  if (target && bytes > 0 && std::strcmp(target, g_check_engine) == 0)
    static_cast<unsigned char *>(data)[bytes / 2] ^= 0x5A;
}

struct Report {
  int cases = 0;
  int failed = 0;
  std::vector<std::string> failures;
  void fail(const char *op, int dtype, int64_t n, const std::string &c) {
    ++failed;
    if (failures.size() < 20)
      failures.push_back("{\"op\": " + json_str(op) + ", \"dtype\": " +
                         json_str(ref::dtype_name(dtype)) + ", \"n\": " + std::to_string(n) +
                         ", \"case\": " + json_str(c) + "}");
    else if (failures.size() == 20)
      failures.push_back("{\"op\": \"...\", \"dtype\": \"...\", \"n\": 0, \"case\": \"more failures omitted\"}");
  }
};

std::string case_name(int dist, unsigned flags) {
  std::string s = ref::dist_name(dist);
  if (flags & KWKER_DESCENDING) s += "/descending";
  if (flags & KWKER_NANS_FIRST) s += "/nans_first";
  return s;
}

void check_1d(const EngineTable &e, int dtype, int dist, int64_t n, unsigned flags, Report &r) {
  std::vector<uint8_t> data = ref::generate(dtype, dist, n, 7);
  int w = ref::dtype_size(dtype);
  std::vector<uint8_t> got((size_t)(n * w) + 1), want((size_t)(n * w) + 1);
  std::vector<int64_t> gi((size_t)(n) + 1), wi((size_t)(n) + 1);
  CallCtx ctx{rt::thread_budget(), g_algos.load(), 1};
  ++r.cases;
  int rc = e.sort_copy(ctx, dtype, data.data(), got.data(), n, flags);
  corrupt_for_test(got.data(), size_t(n * w));
  ref::sort(dtype, data.data(), want.data(), n, flags);
  if (rc != KWKER_OK || !ref::values_equal(dtype, got.data(), want.data(), n))
    r.fail("sort", dtype, n, case_name(dist, flags));
  ++r.cases;
  rc = e.argsort(ctx, dtype, data.data(), n, gi.data(), flags);
  ref::argsort(dtype, data.data(), n, wi.data(), flags);
  if (rc != KWKER_OK || !std::equal(gi.begin(), gi.begin() + n, wi.begin()))
    r.fail("argsort", dtype, n, case_name(dist, flags));
}

void check_rows(const EngineTable &e, int dtype, Report &r) {
  const int64_t rows = 9, cols = 300, k = 7;
  int w = ref::dtype_size(dtype);
  std::vector<uint8_t> data = ref::generate(dtype, ref::kSpecials, rows * cols, 11);
  CallCtx ctx{rt::thread_budget(), g_algos.load(), 1};
  for (unsigned flags : {0u, unsigned(KWKER_DESCENDING)}) {
    std::vector<uint8_t> got = data, want(size_t(cols * w));
    std::vector<int64_t> gi((size_t)(rows * cols)), wi((size_t)(cols));
    Segments segs{nullptr, rows, cols};
    r.cases += 3;
    bool ok_sort = e.sort_segments(ctx, dtype, got.data(), got.data(), segs, flags) == KWKER_OK;
    bool ok_arg = e.argsort_segments(ctx, dtype, data.data(), segs, gi.data(), flags, true) == KWKER_OK;
    std::vector<uint8_t> tv((size_t)(rows * k * w));
    std::vector<int64_t> ti((size_t)(rows * k));
    bool ok_topk = e.topk_rows(ctx, dtype, data.data(), rows, cols, k, flags, true, tv.data(),
                               ti.data()) == KWKER_OK;
    for (int64_t row = 0; row < rows; ++row) {
      const uint8_t *src = data.data() + row * cols * w;
      ref::sort(dtype, src, want.data(), cols, flags);
      ok_sort = ok_sort && ref::values_equal(dtype, got.data() + row * cols * w, want.data(), cols);
      ref::argsort(dtype, src, cols, wi.data(), flags);
      ok_arg = ok_arg && std::equal(wi.begin(), wi.end(), gi.begin() + row * cols);
      ok_topk = ok_topk && std::equal(wi.begin(), wi.begin() + k, ti.begin() + row * k);
    }
    if (!ok_sort) r.fail("sort_rows", dtype, rows * cols, case_name(ref::kSpecials, flags));
    if (!ok_arg) r.fail("argsort_rows", dtype, rows * cols, case_name(ref::kSpecials, flags));
    if (!ok_topk) r.fail("topk", dtype, rows * cols, case_name(ref::kSpecials, flags));
  }
}

}  // namespace
}  // namespace kwker

extern "C" KWKER_API int kwker_self_check(const char *name, char *buf, size_t cap,
                                          size_t *needed) {
  using namespace kwker;
  int id = engine_id(name);
  if (id < 0 || !engine_supported(id))
    return set_error(KWKER_E_UNSUPPORTED_ISA,
                     "self_check: engine '%s' %s; this CPU runs: %s", name ? name : "(null)",
                     id < 0 ? "is not a Kwker engine" : "cannot run on this CPU",
                     supported_list().c_str());
  try {
    const EngineTable &e = engine_table(id);
    g_check_engine = engine_name(id);
    Report r;
    static const int64_t sizes[] = {0, 1, 2, 3, 5, 8, 15, 16, 17, 31, 33, 64, 100, 255, 257, 1000};
    for (int dtype = 0; dtype < KWKER_DTYPE_COUNT; ++dtype) {
      for (int64_t n : sizes)
        for (int dist = 0; dist < ref::kNumDists; ++dist)
          for (unsigned flags = 0; flags < 4; ++flags) check_1d(e, dtype, dist, n, flags, r);
      check_rows(e, dtype, r);
    }
    // Large inputs reach the parallel, radix and counting paths.
    for (int dtype : {KWKER_FLOAT32, KWKER_INT64})
      check_1d(e, dtype, ref::kUniform, 150000, 0, r);
    check_1d(e, KWKER_UINT16, ref::kUniform, 70000, KWKER_DESCENDING, r);
    bool ok = r.failures.empty();
    std::string doc = "{\"schema\": \"kwker.self_check\", \"schema_version\": " +
                      std::to_string(KWKER_SELF_CHECK_SCHEMA_VERSION) +
                      ", \"engine\": " + json_str(engine_name(id)) + ", \"ok\": " + json_bool(ok) +
                      ", \"cases\": " + std::to_string(r.cases) + ", \"failures\": [";
    for (size_t i = 0; i < r.failures.size(); ++i) doc += (i ? ", " : "") + r.failures[i];
    doc += "]}";
    int rc = copy_out(doc, buf, cap, needed);
    if (rc != KWKER_OK) return rc;
    if (!ok)
      return set_error(KWKER_E_SELF_CHECK_FAILED,
                       "self_check: engine %s gave %d wrong result(s) in %d cases; see the "
                       "report's failures and use another engine (set_isa / KWKER_ISA) "
                       "meanwhile",
                       engine_name(id), r.failed, r.cases);
    return KWKER_OK;
  } catch (const std::exception &ex) {
    return set_error(KWKER_E_INTERNAL, "self_check: internal error: %s", ex.what());
  }
}
