// The extern "C" layer: argument checks with messages that name the fix, per-call context from
// the runtime controls, dispatch to the selected engine, counters. No exception crosses it.
#include <sys/mman.h>

#include <atomic>
#include <mutex>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "capi/errors.h"
#include "core/engine.h"
#include "dispatch/dispatch.h"
#include "kwker/kwker.h"
#include "runtime/counters.h"
#include "runtime/cpu_share.h"
#include "runtime/scratch.h"
#include "runtime/threads.h"
#include "runtime/tuning.h"

namespace kwker {
std::atomic<unsigned> g_algos{KWKER_ALGO_ALL};
// The caller's backend name, set by the Python layer and read by runtime info, possibly from
// different threads at once (free-threaded Python): every access holds the lock. Leaked, so
// calls during process exit stay valid.
std::mutex &backend_mu() {
  static std::mutex *mu = new std::mutex();
  return *mu;
}
std::string &backend_name_locked() {
  static std::string *name = new std::string("c");
  return *name;
}
std::string backend_name() {
  std::lock_guard<std::mutex> lk(backend_mu());
  return backend_name_locked();
}
}  // namespace kwker

using namespace kwker;

namespace {

const int64_t kItemSize[KWKER_DTYPE_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8};

const char *const kDtypeNames[KWKER_DTYPE_COUNT] = {
    "bool",   "int8",    "int16",   "int32",   "int64",    "uint8",   "uint16",
    "uint32", "uint64",  "float16", "float32", "float64",  "bfloat16", "datetime64"};

int check_common(const char *fn, int dtype, unsigned flags, int threads) {
  if (dtype < 0 || dtype >= KWKER_DTYPE_COUNT)
    return set_error(KWKER_E_DTYPE, "%s: unknown dtype code %d (valid codes are 0..%d, see kwker.h)",
                     fn, dtype, KWKER_DTYPE_COUNT - 1);
  if (flags & ~(KWKER_DESCENDING | KWKER_NANS_FIRST | KWKER_NAN_LARGEST))
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: unknown flag bits 0x%x (use KWKER_DESCENDING, KWKER_NANS_FIRST, "
                     "KWKER_NAN_LARGEST)",
                     fn, flags);
  if (threads < 0)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: threads must be >= 1, or 0 for the process budget (got %d)", fn,
                     threads);
  return KWKER_OK;
}

int check_size(const char *fn, const char *what, int64_t n) {
  if (n < 0)
    return set_error(KWKER_E_INVALID_ARGUMENT, "%s: %s must be >= 0 (got %lld)", fn, what,
                     (long long)n);
  return KWKER_OK;
}

int check_ptr(const char *fn, const char *what, const void *p, int64_t n) {
  if (n > 0 && !p)
    return set_error(KWKER_E_INVALID_ARGUMENT, "%s: %s is NULL for %lld elements", fn, what,
                     (long long)n);
  return KWKER_OK;
}

// Pre-populates a large output in one system call. Two threads page-faulting a fresh output
// concurrently were measured 2-3x slower than one populating it (VM page faults contend), which
// made the first multithreaded sorts of a process slower than single-threaded ones. Advice
// only: on kernels without MADV_POPULATE_WRITE (< 5.14) nothing happens. threads: the call's
// own (CallCtx, after the budget and the CPU share): a sort left one thread faults its pages in
// as it writes them, 1-1.5 ms faster on 1e7 floats than populating them first.
void prefault_output(void *p, int64_t bytes, int threads) {
#ifdef MADV_POPULATE_WRITE
  if (threads == 1 || bytes < (int64_t(8) << 20)) return;
  const uintptr_t page = 4096;
  uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + uintptr_t(bytes)) & ~(page - 1);
  // One call on one thread: populating from two threads at once brought the contention back.
  if (hi > lo) madvise(reinterpret_cast<void *>(lo), hi - lo, MADV_POPULATE_WRITE);
#else
  (void)p, (void)bytes, (void)threads;
#endif
}

// share: the call's mark in the table of Kwker processes sharing the CPUs (runtime/cpu_share.h),
// which may leave a parallel call fewer threads while other Kwker processes are busy.
// min_work: where the call's kind goes parallel (rows and segments sooner: engine.h).
CallCtx make_ctx(int threads, int64_t work, rt::SharedCall &share, int64_t min_work) {
  // Small calls never go parallel, so they skip the budget query (an affinity syscall).
  if (work < min_work) return CallCtx{1, g_algos.load(), 1};
  int budget = rt::thread_budget();
  int t = threads == 0 ? budget : (threads < budget ? threads : budget);
  return CallCtx{share.begin(t < 1 ? 1 : t, budget), g_algos.load(), 1};
}

// Runs one engine call with the selected engine; converts any C++ failure into a status.
template <class F>
int run(const char *fn, int dtype, F &&f, int threads, int64_t work,
        int64_t min_work = kParallelMinElements) {
  try {
    int eid = current_engine();
    rt::SharedCall share;
    CallCtx ctx = make_ctx(threads, work, share, min_work);
    int rc = f(engine_table(eid), ctx);
    if (rc == KWKER_E_DTYPE)
      return set_error(rc, "%s: dtype %s is not supported by this operation", fn,
                       kDtypeNames[dtype]);
    if (rc == KWKER_OK) rt::counters_record(eid, ctx.used_threads);
    return rc;
  } catch (const std::bad_alloc &) {
    return set_error(KWKER_E_NO_MEMORY, "%s: out of memory", fn);
  } catch (const std::exception &e) {
    return set_error(KWKER_E_INTERNAL, "%s: internal error: %s (please report it)", fn, e.what());
  }
}

// Shared checks of the column calls: sizes, and outer * rows * cols within int64.
int check_cols(const char *fn, int64_t outer, int64_t rows, int64_t cols) {
  if (int rc = check_size(fn, "outer", outer)) return rc;
  if (int rc = check_size(fn, "rows", rows)) return rc;
  if (int rc = check_size(fn, "cols", cols)) return rc;
  if (outer > 0 && rows > 0 && cols > INT64_MAX / outer / rows)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: outer * rows * cols (%lld * %lld * %lld) overflows int64; pass smaller "
                     "matrices", fn, (long long)outer, (long long)rows, (long long)cols);
  return KWKER_OK;
}

int check_offsets(const char *fn, const int64_t *offsets, int64_t noffsets, int64_t n) {
  if (noffsets < 0)
    return set_error(KWKER_E_INVALID_ARGUMENT, "%s: noffsets must be >= 0 (got %lld)", fn,
                     (long long)noffsets);
  if (noffsets > 0 && !offsets)
    return set_error(KWKER_E_INVALID_ARGUMENT, "%s: offsets is NULL", fn);
  for (int64_t i = 0; i < noffsets; ++i) {
    if (offsets[i] < 0 || offsets[i] > n)
      return set_error(KWKER_E_INVALID_ARGUMENT,
                       "%s: offsets[%lld] = %lld is outside [0, %lld] (the length of values)", fn,
                       (long long)i, (long long)offsets[i], (long long)n);
    if (i > 0 && offsets[i] < offsets[i - 1])
      return set_error(KWKER_E_INVALID_ARGUMENT,
                       "%s: offsets must be non-decreasing, but offsets[%lld] = %lld < "
                       "offsets[%lld] = %lld",
                       fn, (long long)i, (long long)offsets[i], (long long)(i - 1),
                       (long long)offsets[i - 1]);
  }
  return KWKER_OK;
}

}  // namespace

#define KWKER_CHECK(expr)          \
  do {                             \
    int rc_ = (expr);              \
    if (rc_ != KWKER_OK) return rc_; \
  } while (0)

extern "C" {

KWKER_API int kwker_abi_version(void) { return KWKER_ABI_VERSION; }
KWKER_API const char *kwker_version(void) { return KWKER_VERSION_STRING; }
KWKER_API const char *kwker_last_error(void) { return last_error(); }

KWKER_API int kwker_sort_copy(int dtype, const void *src, void *dst, int64_t n, unsigned flags,
                              int threads) {
  const char *fn = "kwker_sort";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_size(fn, "n", n));
  KWKER_CHECK(check_ptr(fn, "src", src, n));
  KWKER_CHECK(check_ptr(fn, "dst", dst, n));
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    if (dst != src) prefault_output(dst, n * kItemSize[dtype], ctx.threads);
    return e.sort_copy(ctx, dtype, src, dst, n, flags);
  }, threads, n);
}

KWKER_API int kwker_sort(int dtype, void *data, int64_t n, unsigned flags, int threads) {
  return kwker_sort_copy(dtype, data, data, n, flags, threads);
}

KWKER_API int kwker_argsort(int dtype, const void *data, int64_t n, int64_t *out, unsigned flags,
                            int threads) {
  const char *fn = "kwker_argsort";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_size(fn, "n", n));
  KWKER_CHECK(check_ptr(fn, "data", data, n));
  KWKER_CHECK(check_ptr(fn, "out", out, n));
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    prefault_output(out, n * 8, ctx.threads);
    return e.argsort(ctx, dtype, data, n, out, flags);
  }, threads, n);
}

KWKER_API int kwker_sort_rows_copy(int dtype, const void *src, void *dst, int64_t rows,
                                   int64_t cols, unsigned flags, int threads) {
  const char *fn = "kwker_sort_rows";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_size(fn, "rows", rows));
  KWKER_CHECK(check_size(fn, "cols", cols));
  KWKER_CHECK(check_ptr(fn, "src", src, rows * cols));
  KWKER_CHECK(check_ptr(fn, "dst", dst, rows * cols));
  Segments segs{nullptr, cols == 0 ? 0 : rows, cols};
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    if (dst != src) prefault_output(dst, rows * cols * kItemSize[dtype], ctx.threads);
    return e.sort_segments(ctx, dtype, src, dst, segs, flags);
  }, threads, rows * cols, rows_parallel_min(cols));
}

KWKER_API int kwker_sort_rows(int dtype, void *data, int64_t rows, int64_t cols, unsigned flags,
                              int threads) {
  return kwker_sort_rows_copy(dtype, data, data, rows, cols, flags, threads);
}

KWKER_API int kwker_argsort_rows(int dtype, const void *data, int64_t rows, int64_t cols,
                                 int64_t *out, unsigned flags, int threads) {
  const char *fn = "kwker_argsort_rows";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_size(fn, "rows", rows));
  KWKER_CHECK(check_size(fn, "cols", cols));
  KWKER_CHECK(check_ptr(fn, "data", data, rows * cols));
  KWKER_CHECK(check_ptr(fn, "out", out, rows * cols));
  Segments segs{nullptr, cols == 0 ? 0 : rows, cols};
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    return e.argsort_segments(ctx, dtype, data, segs, out, flags, true);
  }, threads, rows * cols, rows_parallel_min(cols));
}

KWKER_API int kwker_sort_segments(int dtype, void *data, int64_t n, const int64_t *offsets,
                                  int64_t noffsets, unsigned flags, int threads) {
  const char *fn = "kwker_sort_segments";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_size(fn, "n", n));
  KWKER_CHECK(check_ptr(fn, "data", data, n));
  KWKER_CHECK(check_offsets(fn, offsets, noffsets, n));
  Segments segs{offsets, noffsets > 0 ? noffsets - 1 : 0, 0};
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    return e.sort_segments(ctx, dtype, data, data, segs, flags);
  }, threads, n, kBlocksParallelMinKeys);
}

KWKER_API int kwker_argsort_segments(int dtype, const void *data, int64_t n,
                                     const int64_t *offsets, int64_t noffsets, int64_t *out,
                                     unsigned flags, int threads) {
  const char *fn = "kwker_argsort_segments";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_size(fn, "n", n));
  KWKER_CHECK(check_ptr(fn, "data", data, n));
  KWKER_CHECK(check_ptr(fn, "out", out, n));
  KWKER_CHECK(check_offsets(fn, offsets, noffsets, n));
  // Positions outside every segment keep their own index.
  int64_t lo = noffsets > 0 ? offsets[0] : n, hi = noffsets > 0 ? offsets[noffsets - 1] : n;
  for (int64_t j = 0; j < n; ++j)
    if (j < lo || j >= hi) out[j] = j;
  Segments segs{offsets, noffsets > 0 ? noffsets - 1 : 0, 0};
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    return e.argsort_segments(ctx, dtype, data, segs, out, flags, false);
  }, threads, n, kBlocksParallelMinKeys);
}

KWKER_API int kwker_topk_rows(int dtype, const void *data, int64_t rows, int64_t cols, int64_t k,
                              unsigned flags, int sorted, void *out_values, int64_t *out_indices,
                              int threads) {
  const char *fn = "kwker_topk_rows";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_size(fn, "rows", rows));
  KWKER_CHECK(check_size(fn, "cols", cols));
  KWKER_CHECK(check_size(fn, "k", k));
  if (k > cols)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: k = %lld is larger than the axis length %lld; pass k <= %lld", fn,
                     (long long)k, (long long)cols, (long long)cols);
  KWKER_CHECK(check_ptr(fn, "data", data, rows * cols));
  KWKER_CHECK(check_ptr(fn, "out_values", out_values, rows * k));
  KWKER_CHECK(check_ptr(fn, "out_indices", out_indices, rows * k));
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    return e.topk_rows(ctx, dtype, data, rows, cols, k, flags, sorted != 0, out_values,
                       out_indices);
  }, threads, rows * cols, select_parallel_min(rows));
}

KWKER_API int kwker_topk_cols(int dtype, const void *data, int64_t outer, int64_t rows,
                              int64_t cols, int64_t k, unsigned flags, int sorted,
                              void *out_values, int64_t *out_indices, int threads) {
  const char *fn = "kwker_topk_cols";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_cols(fn, outer, rows, cols));
  KWKER_CHECK(check_size(fn, "k", k));
  if (k > rows)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: k = %lld is larger than the column length (rows) %lld; pass k <= %lld",
                     fn, (long long)k, (long long)rows, (long long)rows);
  const int64_t n = outer * rows * cols, out = outer * k * cols;
  KWKER_CHECK(check_ptr(fn, "data", data, n));
  KWKER_CHECK(check_ptr(fn, "out_values", out_values, out));
  KWKER_CHECK(check_ptr(fn, "out_indices", out_indices, out));
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    return e.topk_cols(ctx, dtype, data, outer, rows, cols, k, flags, sorted != 0, out_values,
                       out_indices);
  }, threads, n);
}

KWKER_API int kwker_sort_cols(int dtype, const void *src, void *vals, int64_t *idx, int64_t outer,
                              int64_t rows, int64_t cols, unsigned flags, int threads) {
  const char *fn = "kwker_sort_cols";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_cols(fn, outer, rows, cols));
  const int64_t n = outer * rows * cols;
  if (!vals && !idx)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: vals and idx are both NULL; pass a buffer for the sorted values, the "
                     "indices, or both", fn);
  KWKER_CHECK(check_ptr(fn, "src", src, n));
  if (idx && vals == src && n > 0)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: vals must not be src when idx is asked for (the indices are found "
                     "while the values are written); pass a separate buffer",
                     fn);
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    if (vals && vals != src) prefault_output(vals, n * kItemSize[dtype], ctx.threads);
    if (idx) prefault_output(idx, n * 8, ctx.threads);
    return e.sort_cols(ctx, dtype, src, vals, idx, outer, rows, cols, flags);
  }, threads, n);
}

KWKER_API int kwker_kth_cols(int dtype, const void *data, int64_t outer, int64_t rows,
                             int64_t cols, int64_t rank, unsigned flags, void *out_value,
                             int64_t *out_index, int threads) {
  const char *fn = "kwker_kth_cols";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_cols(fn, outer, rows, cols));
  const int64_t n = outer * rows * cols;
  if (n > 0 && (rank < 0 || rank >= rows))
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: rank = %lld is outside [0, %lld) (the column length, rows); pass 0 <= "
                     "rank < rows",
                     fn, (long long)rank, (long long)rows);
  KWKER_CHECK(check_ptr(fn, "data", data, n));
  KWKER_CHECK(check_ptr(fn, "out_value", out_value, n > 0 ? outer * cols : 0));
  KWKER_CHECK(check_ptr(fn, "out_index", out_index, n > 0 ? outer * cols : 0));
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    return e.kth_cols(ctx, dtype, data, outer, rows, cols, rank, flags, out_value, out_index);
  }, threads, n);
}

// ---- torch's sort family: the fused pair sort and the k-th value ----

KWKER_API int kwker_sort_pairs_rows(int dtype, const void *src, void *vals, int64_t *idx,
                                    int64_t rows, int64_t cols, unsigned flags, int threads) {
  const char *fn = "kwker_sort_pairs_rows";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_size(fn, "rows", rows));
  KWKER_CHECK(check_size(fn, "cols", cols));
  KWKER_CHECK(check_ptr(fn, "src", src, rows * cols));
  KWKER_CHECK(check_ptr(fn, "idx", idx, rows * cols));
  if (vals == src && rows * cols > 0)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: vals must not be src (the sort reads src while it writes vals); pass "
                     "a separate buffer",
                     fn);
  Segments segs{nullptr, cols == 0 ? 0 : rows, cols};
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    if (vals) prefault_output(vals, rows * cols * kItemSize[dtype], ctx.threads);
    prefault_output(idx, rows * cols * 8, ctx.threads);
    return e.sort_pairs_segments(ctx, dtype, src, vals, idx, segs, flags);
  }, threads, rows * cols, rows_parallel_min(cols));
}

KWKER_API int kwker_kth_rows(int dtype, const void *data, int64_t rows, int64_t cols,
                             int64_t rank, unsigned flags, void *out_value, int64_t *out_index,
                             int threads) {
  const char *fn = "kwker_kth_rows";
  KWKER_CHECK(check_common(fn, dtype, flags, threads));
  KWKER_CHECK(check_size(fn, "rows", rows));
  KWKER_CHECK(check_size(fn, "cols", cols));
  if (rows > 0 && (rank < 0 || rank >= cols))
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: rank = %lld is outside [0, %lld) (the row length); pass 0 <= rank < "
                     "cols",
                     fn, (long long)rank, (long long)cols);
  KWKER_CHECK(check_ptr(fn, "data", data, rows * cols));
  KWKER_CHECK(check_ptr(fn, "out_value", out_value, rows));
  KWKER_CHECK(check_ptr(fn, "out_index", out_index, rows));
  return run(fn, dtype, [&](const EngineTable &e, CallCtx &ctx) {
    return e.kth_rows(ctx, dtype, data, rows, cols, rank, flags, out_value, out_index);
  }, threads, rows * cols, select_parallel_min(rows));
}

KWKER_API void *kwker_buffer_acquire(int64_t nbytes) {
  if (nbytes < 0) return nullptr;
  try {
    return rt::scratch_acquire(size_t(nbytes));
  } catch (...) {
    return nullptr;
  }
}
KWKER_API void kwker_buffer_release(void *buffer) { rt::scratch_release(buffer, 0); }

KWKER_API int kwker_set_isa(const char *name) { return select_engine(name); }
KWKER_API const char *kwker_get_isa(void) { return engine_name(current_engine()); }
KWKER_API int kwker_isa_supported(const char *name) {
  int id = engine_id(name);
  return id >= 0 && engine_supported(id) ? 1 : 0;
}

KWKER_API int kwker_set_max_threads(int n) {
  if (n < 0)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "set_max_threads: n must be >= 1, or 0 to remove the cap (got %d); the "
                     "CPU and container limits still apply",
                     n);
  rt::set_user_max_threads(n);
  return KWKER_OK;
}
KWKER_API int kwker_get_max_threads(void) { return rt::thread_budget(); }

KWKER_API int kwker_set_scratch_cache(int64_t cache_bytes) {
  if (cache_bytes < 0)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "set_scratch_policy: cache_bytes must be >= 0 (got %lld)",
                     (long long)cache_bytes);
  rt::scratch_set_cache_limit(cache_bytes);
  return KWKER_OK;
}
KWKER_API int kwker_release_scratch(void) {
  rt::scratch_release_all();
  return KWKER_OK;
}
KWKER_API int kwker_set_scratch_limit(int64_t nbytes) {
  if (nbytes < -1)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "set_scratch_limit: nbytes must be >= 0, or -1 for no limit (got %lld)",
                     (long long)nbytes);
  rt::scratch_set_limit(nbytes);
  return KWKER_OK;
}
KWKER_API int kwker_set_algorithms(unsigned mask) {
  if (mask & ~KWKER_ALGO_ALL)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "set_algorithms: unknown algorithm bits 0x%x (known: radix=1, parallel=2, "
                     "presorted=4)",
                     mask);
  g_algos.store(mask);
  return KWKER_OK;
}
KWKER_API unsigned kwker_get_algorithms(void) { return g_algos.load(); }
KWKER_API int kwker_reset_counters(void) {
  rt::counters_reset();
  return KWKER_OK;
}
KWKER_API int kwker_set_backend_name(const char *name) {
  if (!name || !*name)
    return set_error(KWKER_E_INVALID_ARGUMENT, "set_backend_name: name must be a non-empty string");
  std::lock_guard<std::mutex> lk(backend_mu());
  backend_name_locked() = name;
  return KWKER_OK;
}

KWKER_API int kwker_set_tuning(const char *name, int64_t value) {
  int k = tune::knob_by_name(name);
  if (k < 0)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "set_tuning: unknown knob %s%s%s (see docs/design.md for the names)",
                     name ? "'" : "", name ? name : "NULL", name ? "'" : "");
  if (value < -1)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "set_tuning: %s must be >= 0, or -1 for the engine's default (got %lld)",
                     name, (long long)value);
  tune::set_override(k, value);
  return KWKER_OK;
}

KWKER_API int kwker_get_tuning(const char *name, int64_t *value) {
  int k = tune::knob_by_name(name);
  if (k < 0 || !value)
    return set_error(KWKER_E_INVALID_ARGUMENT, "get_tuning: unknown knob %s, or value is NULL",
                     name ? name : "NULL");
  int64_t v = tune::override_of(tune::Knob(k));
  *value = v >= 0 ? v : engine_table(current_engine()).tuning_default(k);
  return KWKER_OK;
}

}  // extern "C"
