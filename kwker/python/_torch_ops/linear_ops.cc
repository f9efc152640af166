// The CPU backend's operators (kwker.cpu_backend): packing weights once and running the linear
// kernels of core/linear-inl.h on float32 activations, so a layer's forward costs one
// dispatcher call and no Python. Part of the same compiled extension as the sort operators
// (one torch minor version; see ops.cc).
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <array>
#include <tuple>

#include "kwker/kwker.h"
#include "torch_runner.h"

// A contiguous result tensor, large ones from Kwker's scratch cache (ops.cc): fresh pages for
// every prompt's output cost as much as the prompt GEMM writing it.
at::Tensor kwker_cached_result(c10::IntArrayRef sizes, at::ScalarType dtype);

namespace {

using at::Tensor;

void check(int status) { TORCH_CHECK(status == KWKER_OK, "kwker: ", kwker_last_error()); }

using kwker_torch::OnTorchThreads;
using kwker_torch::torch_runner;

int64_t thread_runner() { return int64_t(reinterpret_cast<uintptr_t>(&torch_runner)); }

// The decode step's KV cache views (one per layer for keys and one for values, each a slice
// of one buffer along dim 2) grown in place to `length` positions, after the step wrote the
// new position into the buffer. One call instead of two unbind()s and a new tensor per layer:
// after the step streamed the weights through every cache, 60 views cost 0.2 ms of Python per
// token. In place, as a set_() would do: the tensors keep their identity (the cache's layers
// need no new objects) and their version counters move.
void kv_extend(at::TensorList views, int64_t length) {
  // Every view checked before any changes: a bad list leaves all of them as they were.
  for (size_t i = 0; i < views.size(); ++i) {
    const Tensor &t = views[i];
    TORCH_CHECK(t.dim() == 4 && length >= 1, "kv_extend: view ", i, " has ", t.dim(),
                " dims (want 4: batch, heads, positions, head_dim) or length ", length, " < 1");
    TORCH_CHECK(t.unsafeGetTensorImpl()->allow_tensor_metadata_change(), "kv_extend: view ", i,
                " does not allow its shape to change (made by .data or .detach())");
    // The whole buffer bounds each view (the decoder checks each layer's capacity itself).
    // room: how far the positions' stride may reach past the other dims' last element,
    // compared by division so that no product overflows.
    int64_t room = int64_t(t.storage().nbytes()) / int64_t(t.element_size()) - 1 -
                   t.storage_offset();
    for (int d : {0, 1, 3}) room -= (t.size(d) - 1) * t.stride(d);
    const bool fits = room >= 0 && (t.stride(2) <= 0 || (length - 1) <= room / t.stride(2));
    TORCH_CHECK(fits, "kv_extend: view ", i, " cannot hold ", length, " positions: its buffer "
                "ends first (the decoder's capacity check failed; please report it)");
  }
  for (const Tensor &t : views) {
    const std::array<int64_t, 4> sizes{t.size(0), t.size(1), length, t.size(3)};
    c10::TensorImpl *impl = t.unsafeGetTensorImpl();
    impl->set_sizes_and_strides(sizes, t.strides());
    // Inference tensors (a cache made under torch.inference_mode()) have no version counter.
    if (impl->version_counter().enabled()) impl->bump_version();
  }
}

// mode may carry KWKER_LINEAR_Q4_0 (with INT4 / INT4_A8): the same tensors as without it.
int64_t unflagged(int64_t mode) { return mode & ~int64_t(KWKER_LINEAR_Q4_0); }

at::ScalarType value_type(int64_t mode) {
  switch (unflagged(mode)) {
    case KWKER_LINEAR_HIGH: return at::kFloat;
    case KWKER_LINEAR_MEDIUM: return at::kBFloat16;
    case KWKER_LINEAR_HIGH_F16: return at::kHalf;
    case KWKER_LINEAR_INT8:
    case KWKER_LINEAR_INT8_A8:
    case KWKER_LINEAR_HIGH_Q8: return at::kChar;
    default: return at::kByte;
  }
}

// The exact-block "high" modes store int4's (group 32) / int8's layout, the A8 modes int8's /
// int4's (kwker.h).
bool has_mins(int64_t mode) {
  mode = unflagged(mode);
  return mode == KWKER_LINEAR_INT4 || mode == KWKER_LINEAR_HIGH_Q4 || mode == KWKER_LINEAR_INT4_A8;
}
bool has_scales(int64_t mode) {
  mode = unflagged(mode);
  return mode >= KWKER_LINEAR_INT8 && mode <= KWKER_LINEAR_INT4_A8;
}

int64_t blocks(int64_t mode, int64_t k, int64_t group) {
  mode = unflagged(mode);
  int64_t b = mode == KWKER_LINEAR_INT4 || mode == KWKER_LINEAR_INT4_A8 ? group : 32;
  return (k + b - 1) / b;
}

Tensor linear_pack(int64_t mode, const Tensor &values, const std::optional<Tensor> &scales,
                   const std::optional<Tensor> &mins, int64_t group) {
  TORCH_CHECK(mode >= 0 && unflagged(mode) <= KWKER_LINEAR_HIGH_F16, "kwker.linear_pack: unknown mode ", mode);
  TORCH_CHECK(values.dim() == 2 && values.device().is_cpu(),
              "kwker.linear_pack: values must be a 2-D CPU tensor [out_features, in_features]");
  TORCH_CHECK(values.scalar_type() == value_type(mode), "kwker.linear_pack: mode ", mode,
              " takes values of dtype ", value_type(mode), ", got ", values.scalar_type());
  const int64_t n = values.size(0), k = values.size(1);
  int64_t bytes = kwker_linear_packed_size(int(mode), n, k, group);
  if (bytes < 0) check(KWKER_E_INVALID_ARGUMENT);
  Tensor v = values.contiguous();
  Tensor s, m;
  if (has_scales(mode)) {
    TORCH_CHECK(scales.has_value(), "kwker.linear_pack: mode ", mode, " needs scales");
    s = scales->to(at::kFloat).contiguous();
    TORCH_CHECK(s.numel() == n * blocks(mode, k, group), "kwker.linear_pack: scales must have ",
                n * blocks(mode, k, group), " elements, got ", s.numel());
  }
  if (has_mins(mode)) {
    TORCH_CHECK(mins.has_value(), "kwker.linear_pack: mode ", mode, " needs mins");
    m = mins->to(at::kFloat).contiguous();
    TORCH_CHECK(m.numel() == s.numel(), "kwker.linear_pack: mins must match scales");
  }
  // 64-byte aligned storage: panels start on cache-line boundaries.
  Tensor out = at::empty({bytes + 64}, at::TensorOptions().dtype(at::kByte));
  int64_t off = (64 - int64_t(reinterpret_cast<uintptr_t>(out.data_ptr()) % 64)) % 64;
  Tensor packed = out.narrow(0, off, bytes);
  check(kwker_linear_pack(int(mode), n, k, group, v.data_ptr(), s.defined() ? s.data_ptr<float>() : nullptr,
                          m.defined() ? m.data_ptr<float>() : nullptr, packed.data_ptr()));
  return packed;
}

std::tuple<Tensor, Tensor, Tensor> linear_unpack(int64_t mode, const Tensor &packed, int64_t n,
                                                 int64_t k, int64_t group) {
  int64_t bytes = kwker_linear_packed_size(int(mode), n, k, group);
  if (bytes < 0) check(KWKER_E_INVALID_ARGUMENT);
  TORCH_CHECK(packed.scalar_type() == at::kByte && packed.is_contiguous() && packed.numel() == bytes,
              "kwker.linear_unpack: packed must be a contiguous uint8 tensor of ", bytes, " bytes");
  Tensor v = at::empty({n, k}, at::TensorOptions().dtype(value_type(mode)));
  int64_t nb = has_scales(mode) ? blocks(mode, k, group) : 0;
  Tensor s = at::empty({n, nb}, at::TensorOptions().dtype(at::kFloat));
  Tensor m = at::empty({n, has_mins(mode) ? nb : 0}, at::TensorOptions().dtype(at::kFloat));
  check(kwker_linear_unpack(int(mode), n, k, group, packed.data_ptr(), v.data_ptr(),
                            nb ? s.data_ptr<float>() : nullptr,
                            has_mins(mode) ? m.data_ptr<float>() : nullptr));
  return {v, s, m};
}

Tensor linear(const Tensor &x, const Tensor &packed, const std::optional<Tensor> &bias,
              int64_t mode, int64_t n, int64_t group, int64_t threads) {
  TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() >= 1,
              "kwker.linear: x must be a float32 CPU tensor, got ", x.scalar_type(), " on ",
              x.device());
  const int64_t k = x.size(-1);
  int64_t bytes = kwker_linear_packed_size(int(mode), n, k, group);
  if (bytes < 0) check(KWKER_E_INVALID_ARGUMENT);
  TORCH_CHECK(packed.scalar_type() == at::kByte && packed.is_contiguous() && packed.numel() == bytes,
              "kwker.linear: packed weights of ", packed.numel(), " bytes do not fit in_features=",
              k, ", out_features=", n, " (expected ", bytes, ")");
  Tensor xc = x.contiguous();
  const float *b = nullptr;
  Tensor bc;
  if (bias.has_value() && bias->defined()) {
    bc = bias->to(at::kFloat).contiguous();
    TORCH_CHECK(bc.numel() == n, "kwker.linear: bias has ", bc.numel(), " elements, expected ", n);
    b = bc.data_ptr<float>();
  }
  auto shape = x.sizes().vec();
  shape.back() = n;
  Tensor y = kwker_cached_result(shape, at::kFloat);
  const int64_t m = k ? xc.numel() / k : 0;
  OnTorchThreads on_torch;
  check(kwker_linear(int(mode), xc.data_ptr<float>(), m, k, packed.data_ptr(), n, group, b,
                     y.data_ptr<float>(), int(threads)));
  return y;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kwker_torch, m) {
  m.def("linear_pack(int mode, Tensor values, Tensor? scales, Tensor? mins, int group) -> Tensor",
        &linear_pack);
  m.def("linear_unpack(int mode, Tensor packed, int n, int k, int group) -> (Tensor, Tensor, Tensor)",
        &linear_unpack);
  // linear on the CPU key (its fake kernel for tracing is registered from Python, in
  // kwker/_torch/ops.py), so Inductor traces it as one extern call; the Autograd fallthrough
  // keeps what the catch-all registration did: results carry no gradient history (inference).
  m.def("linear(Tensor x, Tensor packed, Tensor? bias, int mode, int n, int group, int threads) -> Tensor");
  m.impl("linear", torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(linear)));
  m.impl("linear", torch::dispatch(c10::DispatchKey::Autograd, torch::CppFunction::makeFallthrough()));
  // The address of the runner above, for the decode step (a C library loaded with ctypes).
  m.def("thread_runner() -> int", &thread_runner);
  m.def("kv_extend(Tensor(a!)[] views, int length) -> ()", &kv_extend);
}
