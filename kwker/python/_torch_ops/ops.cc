// The compiled PyTorch operators: Kwker's kernels for torch's sort family registered for the
// CPU dispatch key, so a call costs no Python. Built with the wheel against the torch installed
// then (the wheel's version ends in +torch2.M); tied to that torch minor version because it
// links libtorch's C++ API. kwker.torch_ops loads it with torch.ops.load_library only when the
// running torch has the same minor version.
//
// Nothing is registered on aten at load time. kwker.torch_ops calls kwker_torch::enable(op,
// thresholds) for each op that passed its self-check and kwker_torch::disable_all() to undo
// every registration (the torch::Library below is destroyed, which restores the dispatcher).
// The kernels also exist as kwker_torch::sort_kernel/topk_kernel/kthvalue_kernel/unique_kernel,
// without thresholds or fallbacks, for the self-check. The plain names in this namespace
// (kwker_torch::sort, argsort, topk, kthvalue: what a graph rewritten by the compile backend
// calls) are defined from Python (kwker/_torch/ops.py) in a fragment of the same namespace, so
// they exist with or without this library.
//
// Semantics are those of kwker/python/kwker/torch_ops/_kernels.py (the Python-registered
// operators), which documents them; the two are checked against torch by the same battery.
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <c10/core/CPUAllocator.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_unique2_cpu_dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/kthvalue_cpu_dispatch.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sort_cpu_dispatch.h>
#include <ATen/ops/topk_cpu_dispatch.h>
#include <torch/library.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "kwker/kwker.h"
#include "torch_runner.h"

#ifndef KWKER_TORCH_BUILT_FOR
#error "KWKER_TORCH_BUILT_FOR (the torch version this is built against) must be defined"
#endif

namespace {

using at::Tensor;

constexpr int kNoCode = -1;
constexpr unsigned kFlagsAsc = KWKER_NAN_LARGEST;
constexpr unsigned kFlagsDesc = KWKER_NAN_LARGEST | KWKER_DESCENDING;
constexpr int64_t kRadixMin = 32768;  // see _kernels.RADIX_MIN
// torch's stable radix sort (1-D, ascending, integers) ran 8- and 16-bit keys faster than
// Kwker's counting sorts from about this many on, on AMD (Zen 5, 2026-12-06: torch.sort(t,
// stable=True) of 1e5 / 1e6 uint8 0.86x / 0.80x, int16 0.74x / 0.46x); on Intel (a Xeon with
// AMX, 2026-12-07) Kwker's ran 1.1-2.9x torch's, so only other CPUs hand them over; see
// _kernels.NARROW_RADIX_MIN.
constexpr int64_t kNarrowRadixMin = 65536;
bool torch_narrow_radix_cpu() {
  static const bool not_intel = [] {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return true;
    char vendor[13] = {};
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
    return std::strcmp(vendor, "GenuineIntel") != 0;
#else
    return true;
#endif
  }();
  return not_intel;
}

int code_of(at::ScalarType t) {
  switch (t) {
    case at::kBool: return KWKER_BOOL;
    case at::kChar: return KWKER_INT8;
    case at::kShort: return KWKER_INT16;
    case at::kInt: return KWKER_INT32;
    case at::kLong: return KWKER_INT64;
    case at::kByte: return KWKER_UINT8;
    case at::kUInt16: return KWKER_UINT16;
    case at::kUInt32: return KWKER_UINT32;
    case at::kUInt64: return KWKER_UINT64;
    case at::kHalf: return KWKER_FLOAT16;
    case at::kFloat: return KWKER_FLOAT32;
    case at::kDouble: return KWKER_FLOAT64;
    case at::kBFloat16: return KWKER_BFLOAT16;
    default: return kNoCode;
  }
}

void check(int status) {
  TORCH_CHECK(status == KWKER_OK, "kwker: ", kwker_last_error());
}

enum Op { kSort = 0, kTopk, kKth, kUnique, kNumOps };
const char *const kOpNames[kNumOps] = {"sort", "topk", "kthvalue", "unique"};

// Per op: the smallest element count the override takes, by dtype code (below: torch's own).
int64_t g_threshold[kNumOps][KWKER_DTYPE_COUNT];
bool g_corrupt[kNumOps];  // test-only: KWKER_TEST_CORRUPT_TORCH_OP at enable()

bool corrupt_now(Op op, bool from_registration) {
  if (from_registration) return g_corrupt[op];
  const char *env = std::getenv("KWKER_TEST_CORRUPT_TORCH_OP");
  return env && std::strcmp(env, kOpNames[op]) == 0;
}

// A dense CPU tensor of a dtype Kwker sorts: its code, else kNoCode. (torch 2.13 has no named
// tensors; the Python-registered operators check names on versions that have them.)
int plain_code(const Tensor &t) {
  if (t.device().type() != c10::DeviceType::CPU || t.layout() != c10::kStrided) return kNoCode;
  return code_of(t.scalar_type());
}

bool wrap_dim(const Tensor &t, int64_t dim, int64_t *d) {
  const int64_t nd = t.dim();
  if (nd == 0 || dim < -nd || dim >= nd) return false;
  *d = dim < 0 ? dim + nd : dim;
  return true;
}

void swap_first_two(Tensor &idx) {
  if (idx.numel() < 2) return;
  Tensor flat = idx.reshape({-1}).clone();
  int64_t *p = flat.data_ptr<int64_t>();
  std::swap(p[0], p[1]);
  idx.copy_(flat.view(idx.sizes()));
}

// Large results come from Kwker's scratch cache: torch's CPU allocator maps fresh pages for
// every large tensor, and faulting them in cost 30 ms of a 60 ms sort of 10,000 x 1,000 floats
// here. Buffers released by their tensors return to the cache (kept up to its limit, 1 GiB by
// default; kwker.release_scratch() empties it). The storage stays resizable.
constexpr size_t kCachedOutputMin = size_t(8) << 20;

// Small results (up to 64 KiB) come from a per-thread list of freed buffers, a few per power-of-two
// size: torch.sort of 1,000 floats spent about a tenth of its 3 us in glibc's posix_memalign and
// free for its two results (its 8 KiB request ran malloc_consolidate every time, since Python's
// small frees leave fast bins behind). A buffer freed on another thread joins that thread's
// list; past kSmallKeep per size it goes back to malloc. The class sits in a 64-byte header, so
// the data stay 64-byte aligned as c10's allocator gives them.
constexpr int kSmallClasses = 11;  // 64 B << 0 .. 64 B << 10 = 64 KiB
constexpr int kSmallKeep = 4;
constexpr size_t kSmallHeader = 64;

struct SmallCache {
  void *kept[kSmallClasses][kSmallKeep];
  int count[kSmallClasses] = {};
  ~SmallCache();
};
thread_local bool t_small_gone = false;  // trivially destructible: readable while the thread exits
thread_local SmallCache t_small;
SmallCache::~SmallCache() {
  t_small_gone = true;
  for (int c = 0; c < kSmallClasses; ++c)
    for (int i = 0; i < count[c]; ++i) std::free(kept[c][i]);
}

void *small_acquire(size_t n) {
  int cls = 0;
  while ((size_t(64) << cls) < n) ++cls;
  void *base = nullptr;
  if (!t_small_gone && t_small.count[cls] > 0) base = t_small.kept[cls][--t_small.count[cls]];
  if (!base) base = std::aligned_alloc(64, kSmallHeader + (size_t(64) << cls));
  if (!base) return nullptr;
  *static_cast<int *>(base) = cls;
  return static_cast<char *>(base) + kSmallHeader;
}

void small_release(void *p) {
  void *base = static_cast<char *>(p) - kSmallHeader;
  const int cls = *static_cast<int *>(base);
  if (!t_small_gone && t_small.count[cls] < kSmallKeep) {
    t_small.kept[cls][t_small.count[cls]++] = base;
    return;
  }
  std::free(base);
}

constexpr size_t kSmallOutputMax = size_t(64) << (kSmallClasses - 1);

struct KwkerAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n > 0 && n <= kSmallOutputMax) {
      if (void *p = small_acquire(n)) return {p, p, &small_release, cpu};
    }
    void *p = n >= kCachedOutputMin ? kwker_buffer_acquire(int64_t(n)) : nullptr;
    if (!p) return c10::GetCPUAllocator()->allocate(n);
    return {p, p, &release, cpu};
  }
  static void release(void *p) { kwker_buffer_release(p); }
  void copy_data(void *dest, const void *src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

KwkerAllocator g_allocator;

// A contiguous CPU tensor for a result (sizes of the input, or any).
Tensor result(c10::IntArrayRef sizes, at::ScalarType dtype) {
  return at::detail::empty_generic(sizes, &g_allocator, c10::DispatchKeySet(c10::DispatchKey::CPU),
                                   dtype, std::nullopt);
}

// Runs fn(first_row, row_count, threads) over rows. With several rows and torch threads, the
// rows are split over torch's own intra-op threads (at::parallel_for) and each part runs on one
// Kwker thread: right after a torch op, torch's OpenMP workers still spin on the other cores,
// and Kwker's pool waiting for those cores lost its second thread. One row (or threads <= 1, or
// 0: Kwker's own budget) goes to Kwker with its thread count.
template <class Fn> void over_rows(int64_t rows, int64_t cols, int threads, Fn fn) {
  if (rows < 2 || threads <= 1) {
    // One row on torch's threads, which spin after torch's own kernels (torch_runner.h).
    kwker_torch::OnTorchThreads on_torch;
    check(fn(int64_t(0), rows, threads));
    return;
  }
  const int64_t grain = cols >= 32768 ? 1 : 32768 / (cols > 0 ? cols : 1);
  std::mutex mu;
  std::string error;  // kwker_last_error() is per thread: keep the first worker's message
  at::parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    if (fn(b, e - b, 1) != KWKER_OK) {
      std::lock_guard<std::mutex> lock(mu);
      if (error.empty()) error = kwker_last_error();
    }
  });
  TORCH_CHECK(error.empty(), "kwker: ", error);
}

// ---- kernels (arguments already accepted) ----

// The pair sort of rows x cols contiguous values of src into vals and idx.
void sort_rows(const Tensor &src, Tensor &vals, Tensor &idx, int64_t rows, int64_t cols,
               bool descending, int threads) {
  const int code = code_of(src.scalar_type());
  const auto *sp = static_cast<const char *>(src.data_ptr());
  auto *vp = static_cast<char *>(vals.data_ptr());
  int64_t *ip = idx.data_ptr<int64_t>();
  const int64_t w = int64_t(src.element_size());
  over_rows(rows, cols, threads, [&](int64_t r, int64_t n, int th) {
    return kwker_sort_pairs_rows(code, sp + r * cols * w, vp + r * cols * w, ip + r * cols, n,
                                 cols, descending ? kFlagsDesc : kFlagsAsc, th);
  });
}

// ---- a contiguous tensor along a dim that is not its last ----
//
// Seen as (outer, L, inner) with L = size(d): the core sorts and selects down its columns where
// they lie (kwker_sort_cols, kwker_kth_cols, kwker_topk_cols: blocks of columns gathered into
// rows inside the core), no transposed copy of the whole tensor and no temporaries as large as
// it. Before, the input went through movedim().contiguous() and the results back through
// strided copies (torch's, 2-3 GB/s here) with three tensor-sized temporaries that page-faulted
// on every call: torch.sort(x, dim=0) of (10, 100000) int64 took 13-25 ms where torch's own
// kernel took 14.
struct Columns {
  static constexpr int64_t kSmallBytes = int64_t(32) << 10;
  // Rows of inner elements of 256 bytes and more, or a small tensor.
  static bool wanted(const Tensor &x, int64_t d) {
    if (!x.is_contiguous() || d == x.dim() - 1 || x.numel() == 0) return false;
    const int64_t w = int64_t(x.element_size());
    return inner_of(x, d) * w >= 256 || x.numel() * w <= kSmallBytes;
  }
  // A large contiguous tensor along a dim whose inner rows are narrow (under 256 bytes): its
  // k-th value and its top-k with k above 16 go to torch's kernel, which selects down each
  // strided column, while Kwker gathers the whole tensor into rows first (torch.topk(x, 10,
  // dim=0) of (100000, 10): 0.32-0.61x torch's that way; kwker_topk_cols in place now, 2.1x
  // float32 at k = 5). The sort keeps Kwker's path there (torch's ran 2.7-6x slower).
  static bool narrow(const Tensor &x, int64_t d) {
    return x.is_contiguous() && d != x.dim() - 1 && x.numel() > 0 && !wanted(x, d);
  }
  static int64_t inner_of(const Tensor &x, int64_t d) {
    int64_t inner = 1;
    for (int64_t j = d + 1; j < x.dim(); ++j) inner *= x.size(j);
    return inner;
  }
  // (outer, L, inner) of a contiguous x along d.
  static void shape_of(const Tensor &x, int64_t d, int64_t *outer, int64_t *L, int64_t *inner) {
    *L = x.size(d);
    *inner = inner_of(x, d);
    *outer = *L && *inner ? x.numel() / (*L * *inner) : 0;
  }
};

// A contiguous copy of a strided 1-D tensor (t[::2], a matrix column), without the dispatcher's
// contiguous() (about a microsecond of a short sort's three).
Tensor gather_1d(const Tensor &src) {
  Tensor out = result(src.sizes(), src.scalar_type());
  const int64_t n = src.numel(), step = src.stride(0);
  const char *from = static_cast<const char *>(src.data_ptr());
  char *to = static_cast<char *>(out.data_ptr());
  switch (src.element_size()) {
#define KWKER_GATHER(T)                                                             \
  for (int64_t j = 0; j < n; ++j)                                                   \
    reinterpret_cast<T *>(to)[j] = reinterpret_cast<const T *>(from)[j * step];     \
  break;
    case 1: KWKER_GATHER(uint8_t)
    case 2: KWKER_GATHER(uint16_t)
    case 4: KWKER_GATHER(uint32_t)
    case 8: KWKER_GATHER(uint64_t)
#undef KWKER_GATHER
    default: return src.contiguous();
  }
  return out;
}

std::tuple<Tensor, Tensor> k_sort(const Tensor &self, int64_t d, bool descending,
                                  bool from_registration, int threads) {
  if (self.is_contiguous() && d == self.dim() - 1 && self.numel() > 0) {
    // The common call, kept short: allocation without the dispatcher (empty_like through it
    // cost more than the sort of 1,000 floats), large results from Kwker's cache.
    Tensor vals = result(self.sizes(), self.scalar_type());
    Tensor idx = result(self.sizes(), at::kLong);
    const int64_t cols = self.size(d);
    sort_rows(self, vals, idx, self.numel() / cols, cols, descending, threads);
    if (corrupt_now(kSort, from_registration)) swap_first_two(idx);
    return {vals, idx};
  }
  if (self.is_contiguous() && d != self.dim() - 1 && self.numel() > 0) {
    int64_t outer, L, inner;
    Columns::shape_of(self, d, &outer, &L, &inner);
    Tensor vals = result(self.sizes(), self.scalar_type());
    Tensor idx = result(self.sizes(), at::kLong);
    const int rc = kwker_sort_cols(code_of(self.scalar_type()), self.data_ptr(), vals.data_ptr(),
                                   idx.data_ptr<int64_t>(), outer, L, inner,
                                   descending ? kFlagsDesc : kFlagsAsc, threads);
    TORCH_CHECK(rc == KWKER_OK, "kwker: ", kwker_last_error());
    if (corrupt_now(kSort, from_registration)) swap_first_two(idx);
    return {vals, idx};
  }
  Tensor x = self.detach();
  // torch's results are empty_like(x): x's strides where x is dense (no gaps, no overlap), else
  // contiguous, which result() gives without a trip through the dispatcher (below 4 dims, where
  // no channels-last format can be suggested instead).
  const bool own_layout = x.dim() < 4 && !x.is_non_overlapping_and_dense();
  Tensor vals = own_layout ? result(x.sizes(), x.scalar_type()) : at::empty_like(x);
  Tensor idx = own_layout ? result(x.sizes(), at::kLong)
                          : at::empty_like(x, x.options().dtype(at::kLong));
  if (x.numel() == 0) return {vals, idx};
  const int64_t cols = x.size(d);
  // A strided input (a slice, a transposed view) is copied into rows once; the results are
  // written in place wherever torch's own layout for them (empty_like: contiguous for an input
  // with gaps, such as t[::2]) has d's rows contiguous, else through rows of their own and a copy
  // back. (Both copies used to be made whenever either side was strided: torch.sort(t[::2]) of
  // 100 floats 4.7 us against torch's 3.7.)
  Tensor src = x.movedim(d, -1);
  if (src.dim() == 1 && !src.is_contiguous()) src = gather_1d(src);
  else if (!src.is_contiguous()) src = src.contiguous();
  const bool direct = vals.movedim(d, -1).is_contiguous();
  Tensor v = vals, i = idx;
  if (!direct) {
    v = result(src.sizes(), x.scalar_type());
    i = result(src.sizes(), at::kLong);
  }
  sort_rows(src, v, i, x.numel() / cols, cols, descending, threads);
  if (!direct) {
    vals.movedim(d, -1).copy_(v);
    idx.movedim(d, -1).copy_(i);
  }
  if (corrupt_now(kSort, from_registration)) swap_first_two(idx);
  return {vals, idx};
}

// The input with dim d moved last and made contiguous, seen as rows x cols, and the outputs of
// a per-row selection: `out` results per row in a last dim (topk), or one result per row with
// that dim dropped (kthvalue, keep_dim false).
struct RowSelect {
  Tensor src, v, i;
  int64_t rows, cols, width;
  int code;
  RowSelect(const Tensor &self, int64_t d, int64_t out, bool keep_dim) {
    Tensor x = self.detach();
    src = x.movedim(d, -1).contiguous();
    cols = src.size(-1);
    rows = cols ? src.numel() / cols : 0;
    std::vector<int64_t> shape(src.sizes().begin(), src.sizes().end());
    if (keep_dim) shape.back() = out;
    else shape.pop_back();
    v = at::empty(shape, x.options());
    i = at::empty(shape, x.options().dtype(at::kLong));
    width = int64_t(x.element_size());
    code = code_of(x.scalar_type());
  }
  const char *row(int64_t r) const { return static_cast<const char *>(src.data_ptr()) + r * cols * width; }
  char *vals(int64_t r, int64_t out) { return static_cast<char *>(v.data_ptr()) + r * out * width; }
  int64_t *idx(int64_t r, int64_t out) { return i.data_ptr<int64_t>() + r * out; }
};

// Top-k along a dim before the last of a contiguous tensor: down its columns where they lie
// (kwker_topk_cols), no transposed copy. Up to k = 16 each row of a block of columns is one
// compare against the columns' k-th best (torch.topk(x, 5, dim=0) of (1000, 1000) int64: 0.74x
// torch's when the columns were gathered into rows first); larger k gathers blocks of columns
// inside the core.
constexpr int64_t kColsDirectMaxK = 16;  // the core's kColsDirectMaxK (core/columns-inl.h)

std::tuple<Tensor, Tensor> k_topk(const Tensor &self, int64_t k, int64_t d, bool largest,
                                  bool from_registration, int threads) {
  if (self.is_contiguous() && d != self.dim() - 1 && self.numel() > 0 && k > 0) {
    int64_t outer, rows, inner;
    Columns::shape_of(self, d, &outer, &rows, &inner);
    std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end());
    shape[size_t(d)] = k;
    Tensor v = result(shape, self.scalar_type()), i = result(shape, at::kLong);
    const int rc = kwker_topk_cols(code_of(self.scalar_type()), self.data_ptr(), outer, rows,
                                   inner, k, largest ? kFlagsDesc : kFlagsAsc, 1, v.data_ptr(),
                                   i.data_ptr<int64_t>(), threads);
    TORCH_CHECK(rc == KWKER_OK, "kwker: ", kwker_last_error());
    if (corrupt_now(kTopk, from_registration)) swap_first_two(i);
    return {v, i};
  }
  RowSelect s(self, d, k, true);
  if (s.v.numel())
    over_rows(s.rows, s.cols, threads, [&](int64_t r, int64_t n, int th) {
      return kwker_topk_rows(s.code, s.row(r), n, s.cols, k, largest ? kFlagsDesc : kFlagsAsc, 1,
                             s.vals(r, k), s.idx(r, k), th);
    });
  Tensor v = s.v, i = s.i;
  if (d != self.dim() - 1) {
    v = v.movedim(-1, d).contiguous();
    i = i.movedim(-1, d).contiguous();
  }
  if (corrupt_now(kTopk, from_registration)) swap_first_two(i);
  return {v, i};
}

std::tuple<Tensor, Tensor> k_kth(const Tensor &self, int64_t k, int64_t d, bool keepdim,
                                 bool from_registration, int threads) {
  if (Columns::wanted(self, d)) {
    int64_t outer, L, inner;
    Columns::shape_of(self, d, &outer, &L, &inner);
    std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end());
    shape[size_t(d)] = 1;
    Tensor v = result(shape, self.scalar_type()), i = result(shape, at::kLong);
    const int rc = kwker_kth_cols(code_of(self.scalar_type()), self.data_ptr(), outer, L, inner,
                                  k - 1, kFlagsAsc, v.data_ptr(), i.data_ptr<int64_t>(), threads);
    TORCH_CHECK(rc == KWKER_OK, "kwker: ", kwker_last_error());
    if (!keepdim) {
      v = v.squeeze(d);
      i = i.squeeze(d);
    }
    if (corrupt_now(kKth, from_registration) && i.numel()) i.view({-1})[0].add_(1);
    return {v, i};
  }
  RowSelect s(self, d, 1, false);
  if (s.rows)
    over_rows(s.rows, s.cols, threads, [&](int64_t r, int64_t n, int th) {
      return kwker_kth_rows(s.code, s.row(r), n, s.cols, k - 1, kFlagsAsc, s.vals(r, 1),
                            s.idx(r, 1), th);
    });
  Tensor v = s.v, i = s.i;
  if (keepdim) {
    v = v.unsqueeze(d);
    i = i.unsqueeze(d);
  }
  if (corrupt_now(kKth, from_registration) && i.numel()) i.view({-1})[0].add_(1);
  return {v, i};
}

std::tuple<Tensor, Tensor, Tensor> k_unique(const Tensor &self, bool return_inverse,
                                            bool return_counts, bool from_registration, int threads) {
  Tensor x = self.detach().reshape({-1}).contiguous();
  const int64_t n = x.numel();
  auto long_opts = x.options().dtype(at::kLong);
  Tensor empty = at::empty({0}, long_opts);
  Tensor inverse = return_inverse ? at::empty(self.sizes(), long_opts) : empty;
  if (n == 0) return {x.clone(), inverse, return_counts ? empty.clone() : empty};
  Tensor v = at::empty({n}, x.options());
  Tensor i = at::empty({n}, long_opts);
  check(kwker_sort_pairs_rows(code_of(x.scalar_type()), x.data_ptr(), v.data_ptr(),
                              i.data_ptr<int64_t>(), 1, n, kFlagsAsc, threads));
  // Wide unsigned types go through torch's ops as the signed type of the same width (torch has
  // few kernels for them; equality is bitwise for integers).
  switch (x.scalar_type()) {
    case at::kUInt16: v = v.view(at::kShort); break;
    case at::kUInt32: v = v.view(at::kInt); break;
    case at::kUInt64: v = v.view(at::kLong); break;
    default: break;
  }
  Tensor starts = at::ones({n}, x.options().dtype(at::kBool));
  Tensor tail = starts.narrow(0, 1, n - 1);
  at::ne_out(tail, v.narrow(0, 1, n - 1), v.narrow(0, 0, n - 1));
  Tensor first = starts.nonzero().view({-1});
  Tensor out = v.index_select(0, first).view(x.scalar_type());
  Tensor counts = empty;
  if (return_counts) {
    Tensor ends = at::empty_like(first);
    const int64_t u = first.numel();
    ends.narrow(0, 0, u - 1).copy_(first.narrow(0, 1, u - 1));
    ends.narrow(0, u - 1, 1).fill_(n);
    counts = ends.sub(first);
    if (corrupt_now(kUnique, from_registration)) counts.narrow(0, 0, 1).add_(1);
  }
  if (return_inverse) {
    Tensor group = starts.cumsum(0, at::kLong).sub_(1);
    inverse.view({-1}).index_copy_(0, i, group);
  }
  return {out, inverse, counts};
}

// ---- the aten overrides: threshold and acceptance, else torch's own CPU kernel ----

bool sort_taken(const Tensor &self, std::optional<bool> stable, int64_t dim, bool descending,
                int64_t *d) {
  const int code = plain_code(self);
  if (code == kNoCode || !wrap_dim(self, dim, d)) return false;
  if (self.numel() < g_threshold[kSort][code]) return false;
  const auto t = self.scalar_type();
  const bool no_radix = t == at::kUInt16 || t == at::kUInt32 || t == at::kUInt64;
  if (no_radix && self.dim() == 1 && !descending && self.numel() >= kRadixMin) return false;
  const bool narrow = t == at::kByte || t == at::kChar || t == at::kShort;
  return !(narrow && stable.value_or(false) && self.dim() == 1 && !descending &&
           self.numel() >= kNarrowRadixMin && torch_narrow_radix_cpu());
}

// torch's topk and kthvalue have no kernel for these: the overrides leave them to its error.
bool select_dtype(int code) {
  return code != kNoCode && code != KWKER_BOOL && code != KWKER_UINT16 &&
         code != KWKER_UINT32 && code != KWKER_UINT64;
}

bool select_taken(Op op, const Tensor &self, int64_t k, int64_t dim, int64_t lowest,
                  int64_t *d) {
  const int code = plain_code(self);
  return select_dtype(code) && wrap_dim(self, dim, d) && k >= lowest && k <= self.size(*d) &&
         self.numel() >= g_threshold[op][code] &&
         // Narrow columns go to torch like sizes under the threshold (a threshold of 0, every
         // size to Kwker as the conformance tests set it, keeps them on Kwker too), except a
         // top-k with a small k, which kwker_topk_cols selects in place.
         !(g_threshold[op][code] > 0 && Columns::narrow(self, *d) &&
           !(op == kTopk && k <= kColsDirectMaxK));
}

// An out= tensor torch would resize rather than refuse: a dense CPU tensor of the result's
// dtype (anything else goes to torch, which raises its own error).
bool out_fits(const Tensor &out, at::ScalarType dtype) {
  return out.device().type() == c10::DeviceType::CPU && out.layout() == c10::kStrided &&
         out.scalar_type() == dtype;
}

// An out= tensor the result can be copied into as it is.
bool out_ok(const Tensor &out, at::ScalarType dtype, c10::IntArrayRef shape) {
  return out_fits(out, dtype) && out.sizes() == shape;
}

// out= as torch's structured kernels treat it: resized to the result's shape when it differs
// (at::native::resize_output, with torch's deprecation warning when out had elements), taking
// the result's strides when resized; then the result is copied in.
void into_out(Tensor &out, const Tensor &result) {
  if (at::native::resize_output(out, result.sizes()))
    out.as_strided_(result.sizes(), result.strides());
  out.copy_(result);
}

std::tuple<Tensor, Tensor> o_sort(const Tensor &self, std::optional<bool> stable, int64_t dim,
                                  bool descending) {
  int64_t d;
  if (!sort_taken(self, stable, dim, descending, &d))
    return at::cpu::sort(self, stable, dim, descending);
  return k_sort(self, d, descending, true, at::get_num_threads());
}

std::tuple<Tensor &, Tensor &> o_sort_out(const Tensor &self, std::optional<bool> stable,
                                          int64_t dim, bool descending, Tensor &values,
                                          Tensor &indices) {
  int64_t d;
  // out= tensors of another shape (torch.empty(0), say) are resized as torch resizes them, so
  // torch.sort(x, out=...) gives the same stable order as torch.sort(x).
  if (!sort_taken(self, stable, dim, descending, &d) || !out_fits(values, self.scalar_type()) ||
      !out_fits(indices, at::kLong))
    return at::cpu::sort_outf(self, stable, dim, descending, values, indices);
  // Contiguous out= tensors of the result's shape that share no memory with the input or each
  // other take the result directly: sorted elsewhere and copied in, torch.sort(t, stable=True,
  // out=...) of 1e6 int32 took 5.1 ms against 2.5 without out= (torch's own 3.4).
  const auto apart = [](const Tensor &a, const Tensor &b) {
    return at::get_overlap_status(a, b) == at::MemOverlapStatus::No;
  };
  if (self.is_contiguous() && d == self.dim() - 1 && self.numel() > 0 &&
      out_ok(values, self.scalar_type(), self.sizes()) && values.is_contiguous() &&
      out_ok(indices, at::kLong, self.sizes()) && indices.is_contiguous() &&
      apart(values, self) && apart(indices, self) && apart(values, indices)) {
    const int64_t cols = self.size(d);
    sort_rows(self, values, indices, self.numel() / cols, cols, descending,
              at::get_num_threads());
    if (corrupt_now(kSort, true)) swap_first_two(indices);
    return {values, indices};
  }
  auto r = k_sort(self, d, descending, true, at::get_num_threads());
  into_out(values, std::get<0>(r));
  into_out(indices, std::get<1>(r));
  return {values, indices};
}

std::tuple<Tensor, Tensor> o_topk(const Tensor &self, c10::SymInt k, int64_t dim, bool largest,
                                  bool sorted) {
  int64_t d;
  auto kk = k.maybe_as_int();
  if (!kk || !select_taken(kTopk, self, *kk, dim, 0, &d))
    return at::cpu::topk_symint(self, k, dim, largest, sorted);
  return k_topk(self, *kk, d, largest, true, at::get_num_threads());
}

std::tuple<Tensor &, Tensor &> o_topk_out(const Tensor &self, c10::SymInt k, int64_t dim,
                                          bool largest, bool sorted, Tensor &values,
                                          Tensor &indices) {
  int64_t d;
  auto kk = k.maybe_as_int();
  if (!kk || !select_taken(kTopk, self, *kk, dim, 0, &d))
    return at::cpu::topk_symint_outf(self, k, dim, largest, sorted, values, indices);
  if (!out_fits(values, self.scalar_type()) || !out_fits(indices, at::kLong))
    return at::cpu::topk_symint_outf(self, k, dim, largest, sorted, values, indices);
  auto r = k_topk(self, *kk, d, largest, true, at::get_num_threads());
  into_out(values, std::get<0>(r));
  into_out(indices, std::get<1>(r));
  return {values, indices};
}

std::tuple<Tensor &, Tensor &> o_kth_out(const Tensor &self, c10::SymInt k, int64_t dim,
                                         bool keepdim, Tensor &values, Tensor &indices) {
  int64_t d;
  auto kk = k.maybe_as_int();
  if (!kk || !select_taken(kKth, self, *kk, dim, 1, &d))
    return at::cpu::kthvalue_symint_outf(self, k, dim, keepdim, values, indices);
  auto r = k_kth(self, *kk, d, keepdim, true, at::get_num_threads());
  const Tensor &v = std::get<0>(r), &i = std::get<1>(r);
  // The functional kthvalue passes empty outputs for resizing; other shapes go to torch.
  const bool fresh = values.numel() == 0 && indices.numel() == 0 &&
                     values.scalar_type() == self.scalar_type() &&
                     indices.scalar_type() == at::kLong;
  if (!fresh && (!out_ok(values, self.scalar_type(), v.sizes()) ||
                 !out_ok(indices, at::kLong, i.sizes())))
    return at::cpu::kthvalue_symint_outf(self, k, dim, keepdim, values, indices);
  if (fresh) {
    values.resize_(v.sizes());
    indices.resize_(i.sizes());
  }
  values.copy_(v);
  indices.copy_(i);
  return {values, indices};
}

std::tuple<Tensor, Tensor, Tensor> o_unique2(const Tensor &self, bool sorted,
                                             bool return_inverse, bool return_counts) {
  const int code = plain_code(self);
  // torch's unique sorts wide unsigned tensors of kRadixMin elements or more with its radix
  // path, which raises: that error stays torch's.
  const bool no_radix = code == KWKER_UINT16 || code == KWKER_UINT32 || code == KWKER_UINT64;
  if (!sorted || code == kNoCode || self.numel() < g_threshold[kUnique][code] ||
      (no_radix && self.numel() >= kRadixMin))
    return at::cpu::_unique2(self, sorted, return_inverse, return_counts);
  return k_unique(self, return_inverse, return_counts, true, at::get_num_threads());
}

// ---- registration ----

std::mutex g_mu;
std::unique_ptr<torch::Library> g_lib;

// While Kwker registers, torch's one-time "Overriding a previously registered kernel" warning
// is dropped (overriding is what install() asks for; docs/torch.md says so) and every other
// warning goes on to the handler in force.
class QuietOverride : public c10::WarningHandler {
 public:
  explicit QuietOverride(c10::WarningHandler *next) : next_(next) {}
  void process(const c10::Warning &w) override {
    if (w.msg().find("Overriding a previously registered kernel") != std::string::npos) return;
    next_->process(w);
  }

 private:
  c10::WarningHandler *next_;
};

void enable(std::string op, std::vector<int64_t> thresholds) {
  std::lock_guard<std::mutex> lock(g_mu);
  int which = -1;
  for (int i = 0; i < kNumOps; ++i)
    if (op == kOpNames[i]) which = i;
  TORCH_CHECK(which >= 0, "kwker_torch::enable: unknown op '", op,
              "' (known: sort, topk, kthvalue, unique)");
  TORCH_CHECK(int64_t(thresholds.size()) == KWKER_DTYPE_COUNT,
              "kwker_torch::enable: expected ", KWKER_DTYPE_COUNT, " thresholds, got ",
              thresholds.size());
  for (int c = 0; c < KWKER_DTYPE_COUNT; ++c) g_threshold[which][c] = thresholds[c];
  g_corrupt[which] = corrupt_now(Op(which), false);
  QuietOverride quiet(c10::WarningUtils::get_warning_handler());
  c10::WarningUtils::WarningHandlerGuard guard(&quiet);
  if (!g_lib)
    g_lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::CPU,
                                             __FILE__, __LINE__);
  switch (which) {
    case kSort:
      g_lib->impl("sort.stable", TORCH_FN(o_sort));
      g_lib->impl("sort.values_stable", TORCH_FN(o_sort_out));
      break;
    case kTopk:
      g_lib->impl("topk", TORCH_FN(o_topk));
      g_lib->impl("topk.values", TORCH_FN(o_topk_out));
      break;
    case kKth: g_lib->impl("kthvalue.values", TORCH_FN(o_kth_out)); break;
    case kUnique: g_lib->impl("_unique2", TORCH_FN(o_unique2)); break;
  }
}

void disable_all() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_lib.reset();  // destroys every registration made through it
}

std::string built_for() { return KWKER_TORCH_BUILT_FOR; }

// Direct kernels for the self-check: no threshold, no fallback; arguments must be accepted.
std::tuple<Tensor, Tensor> direct_sort(const Tensor &self, int64_t dim, bool descending,
                                       int64_t threads) {
  int64_t d = 0;
  TORCH_CHECK(plain_code(self) != kNoCode && wrap_dim(self, dim, &d), "kwker_torch::sort_kernel: bad input");
  return k_sort(self, d, descending, false, int(threads));
}
std::tuple<Tensor, Tensor> direct_topk(const Tensor &self, int64_t k, int64_t dim, bool largest,
                                       int64_t threads) {
  int64_t d = 0;
  TORCH_CHECK(select_dtype(plain_code(self)) && wrap_dim(self, dim, &d) && k >= 0 && k <= self.size(d),
              "kwker_torch::topk_kernel: bad input");
  return k_topk(self, k, d, largest, false, int(threads));
}
std::tuple<Tensor, Tensor> direct_kth(const Tensor &self, int64_t k, int64_t dim, bool keepdim,
                                      int64_t threads) {
  int64_t d = 0;
  TORCH_CHECK(select_dtype(plain_code(self)) && wrap_dim(self, dim, &d) && k >= 1 && k <= self.size(d),
              "kwker_torch::kthvalue_kernel: bad input");
  return k_kth(self, k, d, keepdim, false, int(threads));
}
std::tuple<Tensor, Tensor, Tensor> direct_unique(const Tensor &self, bool inv, bool counts,
                                                 int64_t threads) {
  TORCH_CHECK(plain_code(self) != kNoCode, "kwker_torch::unique_kernel: bad input");
  return k_unique(self, inv, counts, false, int(threads));
}

}  // namespace

// linear_ops.cc's outputs (a prompt's logits are 50 MB for SmolLM2) come from the same cache.
at::Tensor kwker_cached_result(c10::IntArrayRef sizes, at::ScalarType dtype) {
  return result(sizes, dtype);
}

TORCH_LIBRARY(kwker_torch, m) {
  m.def("enable(str op, int[] thresholds) -> ()", &enable);
  m.def("disable_all() -> ()", &disable_all);
  m.def("built_for() -> str", &built_for);
  m.def("sort_kernel(Tensor self, int dim, bool descending, int threads) -> (Tensor, Tensor)", &direct_sort);
  m.def("topk_kernel(Tensor self, int k, int dim, bool largest, int threads) -> (Tensor, Tensor)", &direct_topk);
  m.def("kthvalue_kernel(Tensor self, int k, int dim, bool keepdim, int threads) -> (Tensor, Tensor)", &direct_kth);
  m.def("unique_kernel(Tensor self, bool return_inverse, bool return_counts, int threads) -> "
        "(Tensor, Tensor, Tensor)",
        &direct_unique);
}
