// The C API of the CPU backend's linear kernels: argument checks, packing (engine-neutral, the
// layout of core/linear_layout.h) and dispatch of kwker_linear to the selected engine's kernels.
#include <cmath>
#include <cstring>
#include <exception>
#include <new>

#include "capi/errors.h"
#include "core/engine.h"
#include "core/linear_layout.h"
#include "core/linear_prompt.h"
#include "dispatch/dispatch.h"
#include "kwker/kwker.h"
#include "runtime/counters.h"
#include "runtime/cpu_share.h"
#include "runtime/threads.h"

using namespace kwker;

namespace {

const char *const kModeNames[kLinNumModes] = {"high", "medium", "int8", "int4", "high_q4",
                                               "high_q8", "int8_a8", "int4_a8", "high_f16"};

const LinearTable &linear_table(int id) {
  switch (id) {
    case kSse42: return linear_sse42();
    case kAvx2: return linear_avx2();
    case kAvx512: return linear_avx512();
    default: return linear_portable();
  }
}

// A mode the kernels know, and the Q4_0 flag only where it applies (on int4 / int4_a8).
bool known_mode(int mode) { return mode >= 0 && lin_mode(mode) < kLinNumModes; }
bool flag_fits(int mode) { return !lin_q40(mode) || lin_base(mode) == kLinInt4; }

int check_shape(const char *fn, int mode, int64_t n, int64_t k, int64_t group) {
  if (!known_mode(mode))
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: unknown mode %d (use KWKER_LINEAR_HIGH, _MEDIUM, _INT8, _INT4, "
                     "_HIGH_Q4, _HIGH_Q8, _INT8_A8, _INT4_A8 or _HIGH_F16; _INT4 and _INT4_A8 "
                     "may add the KWKER_LINEAR_Q4_0 flag)", fn, mode);
  if (!flag_fits(mode))
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: the KWKER_LINEAR_Q4_0 flag goes with KWKER_LINEAR_INT4 or _INT4_A8 "
                     "(got mode %d, %s with the flag)", fn, mode, kModeNames[lin_mode(mode)]);
  if (lin_q40(mode) && group != kLinQ8Block)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: the KWKER_LINEAR_Q4_0 layout stores Q4_0 blocks of 32 (group must be "
                     "32, got %lld); pack other groups without the flag", fn, (long long)group);
  if (n < 1 || k < 1)
    return set_error(KWKER_E_INVALID_ARGUMENT, "%s: n and k must be >= 1 (got n=%lld, k=%lld)",
                     fn, (long long)n, (long long)k);
  if (lin_layout(mode) == kLinInt4 && (group < kLinQ8Block || group % kLinQ8Block != 0 || group > 4096))
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: int4 group size %lld does not divide into 32-element blocks (use a "
                     "multiple of 32 up to 4096, e.g. 32, 64 or 128)",
                     fn, (long long)group);
  // The exact-block "high" modes rebuild every weight of a 32-block, padding included, so K
  // has no padding there (core/linear_layout.h).
  if (lin_exact_blocks(mode) && k % kLinQ8Block != 0)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: mode %s needs k a multiple of 32 (got k=%lld); pack such a matrix as "
                     "KWKER_LINEAR_HIGH", fn, kModeNames[mode], (long long)k);
  if (mode == kLinF32Q4 && group != kLinQ8Block)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: mode high_q4 stores Q4_1 blocks of 32 (group must be 32, got %lld)", fn,
                     (long long)group);
  return KWKER_OK;
}

int64_t blocks_per_row(int mode, int64_t k, int64_t group) {
  return lin_padded_k(mode, k, group) / (lin_layout(mode) == kLinInt4 ? group : kLinQ8Block);
}

// Position of W[r, c] in the packed buffer, and of its scale / min (quantised modes; the Q4_0
// layout's scale is a float16 and its min is not stored: -1).
struct Where {
  int64_t value, scale, min;
};

// f as float16 bits where it is exactly one (finite; the Q4_0 layout's scales).
bool half_exact(float f, uint16_t &h) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  const uint32_t sign = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return false;  // infinity, NaN
  if (a >= 0x38800000u) {              // float16's normal range, from 2^-14
    if (a > 0x477FE000u || (a & 0x1FFFu) != 0) return false;  // above 65504, or more bits
    h = uint16_t(sign | ((a - 0x38000000u) >> 13));
  } else {  // below 2^-14: float16 holds the multiples of 2^-24
    const float m = std::ldexp(std::fabs(f), 24);
    if (m != std::floor(m)) return false;
    h = uint16_t(sign | uint32_t(m));
  }
  return true;
}

Where locate(int mode, int64_t kp, int64_t group, int64_t r, int64_t c) {
  const int64_t pb = lin_panel_bytes(mode, kp, group);
  const int64_t base = r / kLinNR * pb;
  const int64_t j = r % kLinNR;
  switch (lin_layout(mode)) {
    case kLinF32:
    case kLinBF16: {
      int64_t es = mode == kLinF32 ? 4 : 2;
      int64_t step = c / kLinLanes, lane = c % kLinLanes;
      return {base + ((step * kLinNR + j) * kLinLanes + lane) * es, -1, -1};
    }
    case kLinInt8: {
      int64_t blk = c / kLinQ8Block, off = base + blk * kLinQ8PanelBlockBytes;
      return {off + kLinNR * 4 + j * kLinQ8Block + c % kLinQ8Block, off + j * 4, -1};
    }
    default: {
      const bool q40 = lin_q40(mode);
      const int64_t hdr = lin_int4_header(q40);
      int64_t gbytes = hdr + kLinNR * group / 2;
      int64_t g = c / group, in = c % group, off = base + g * gbytes;
      int64_t b32 = in / kLinQ8Block, e = in % kLinQ8Block;
      // Nibble addressing: byte index here, the nibble (e >= 16: high) chosen by the caller.
      return {off + hdr + j * (group / 2) + b32 * 16 + e % 16, off + j * (q40 ? 2 : 4),
              q40 ? -1 : off + kLinNR * 4 + j * 4};
    }
  }
}

}  // namespace

KWKER_API int64_t kwker_linear_packed_size(int mode, int64_t n, int64_t k, int64_t group) {
  if (check_shape("kwker_linear_packed_size", mode, n, k, group) != KWKER_OK) return -1;
  return lin_packed_bytes(mode, n, k, group);
}

KWKER_API int kwker_linear_pack(int mode, int64_t n, int64_t k, int64_t group, const void *values,
                                const float *scales, const float *mins, void *packed) {
  const char *fn = "kwker_linear_pack";
  int rc = check_shape(fn, mode, n, k, group);
  if (rc != KWKER_OK) return rc;
  const int lay = lin_layout(mode);
  if (!values || !packed || (lay >= kLinInt8 && !scales) || (lay == kLinInt4 && !mins))
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: values, packed%s must not be NULL in mode %s", fn,
                     lay == kLinInt4 ? ", scales and mins" : lay == kLinInt8 ? " and scales" : "",
                     kModeNames[lin_mode(mode)]);
  const int64_t kp = lin_padded_k(mode, k, group);
  const int64_t nb = blocks_per_row(mode, k, group);
  uint8_t *out = static_cast<uint8_t *>(packed);
  if (lin_q40(mode)) {  // checked before anything is written: the caller's buffer stays as it was
    for (int64_t i = 0; i < n * nb; ++i) {
      uint16_t h;
      const float want = -8.0f * scales[i];
      if (!half_exact(scales[i], h) || std::memcmp(&want, mins + i, 4) != 0)
        return set_error(KWKER_E_INVALID_ARGUMENT,
                         "%s: row %lld, block %lld is not a Q4_0 block (scale %.9g, min %.9g: "
                         "the KWKER_LINEAR_Q4_0 layout needs a finite float16 scale d and min "
                         "== -8 d); pack it without the flag", fn, (long long)(i / nb),
                         (long long)(i % nb), double(scales[i]), double(mins[i]));
    }
  }
  if (lay == kLinInt4) {
    const uint8_t *q = static_cast<const uint8_t *>(values);
    for (int64_t i = 0; i < n * k; ++i)
      if (q[i] > 15)
        return set_error(KWKER_E_INVALID_ARGUMENT,
                         "%s: int4 value %d at index %lld is outside 0..15", fn, int(q[i]),
                         (long long)i);
  }
  // Zero first: padded columns, padded K and padded scales all read as 0.
  std::memset(out, 0, size_t(lin_packed_bytes(mode, n, k, group)));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      Where w = locate(mode, kp, group, r, c);
      switch (lay) {
        case kLinF32: std::memcpy(out + w.value, static_cast<const float *>(values) + r * k + c, 4); break;
        case kLinBF16: std::memcpy(out + w.value, static_cast<const uint16_t *>(values) + r * k + c, 2); break;
        case kLinInt8: out[w.value] = static_cast<const uint8_t *>(values)[r * k + c]; break;
        default: {
          uint8_t q = static_cast<const uint8_t *>(values)[r * k + c];
          bool high = (c % group) % kLinQ8Block >= 16;
          out[w.value] = uint8_t(high ? (out[w.value] & 0x0F) | (q << 4) : (out[w.value] & 0xF0) | q);
        }
      }
    }
    if (lay >= kLinInt8) {
      const int64_t block = lay == kLinInt4 ? group : kLinQ8Block;
      for (int64_t b = 0; b < nb; ++b) {
        Where w = locate(mode, kp, group, r, b * block);
        if (lin_q40(mode)) {
          uint16_t h = 0;
          half_exact(scales[r * nb + b], h);
          std::memcpy(out + w.scale, &h, 2);
          continue;
        }
        std::memcpy(out + w.scale, scales + r * nb + b, 4);
        if (lay == kLinInt4) std::memcpy(out + w.min, mins + r * nb + b, 4);
      }
    }
  }
  return KWKER_OK;
}

KWKER_API int kwker_linear_unpack(int mode, int64_t n, int64_t k, int64_t group,
                                  const void *packed, void *values, float *scales, float *mins) {
  const char *fn = "kwker_linear_unpack";
  int rc = check_shape(fn, mode, n, k, group);
  if (rc != KWKER_OK) return rc;
  if (!values || !packed)
    return set_error(KWKER_E_INVALID_ARGUMENT, "%s: packed and values must not be NULL", fn);
  const int64_t kp = lin_padded_k(mode, k, group);
  const int64_t nb = blocks_per_row(mode, k, group);
  const uint8_t *in = static_cast<const uint8_t *>(packed);
  const int lay = lin_layout(mode);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      Where w = locate(mode, kp, group, r, c);
      switch (lay) {
        case kLinF32: std::memcpy(static_cast<float *>(values) + r * k + c, in + w.value, 4); break;
        case kLinBF16: std::memcpy(static_cast<uint16_t *>(values) + r * k + c, in + w.value, 2); break;
        case kLinInt8: static_cast<uint8_t *>(values)[r * k + c] = in[w.value]; break;
        default: {
          bool high = (c % group) % kLinQ8Block >= 16;
          static_cast<uint8_t *>(values)[r * k + c] = uint8_t(high ? in[w.value] >> 4 : in[w.value] & 15);
        }
      }
    }
    if (lay >= kLinInt8) {
      const int64_t block = lay == kLinInt4 ? group : kLinQ8Block;
      for (int64_t b = 0; b < nb; ++b) {
        Where w = locate(mode, kp, group, r, b * block);
        if (lin_q40(mode)) {  // the float16 scale widened; min = -8 d, as the kernels form it
          uint16_t h;
          std::memcpy(&h, in + w.scale, 2);
          const float d = lin_half_to_float(h);
          if (scales) scales[r * nb + b] = d;
          if (mins) mins[r * nb + b] = -8.0f * d;
          continue;
        }
        if (scales) std::memcpy(scales + r * nb + b, in + w.scale, 4);
        if (lay == kLinInt4 && mins) std::memcpy(mins + r * nb + b, in + w.min, 4);
      }
    }
  }
  return KWKER_OK;
}

KWKER_API int kwker_linear(int mode, const float *x, int64_t m, int64_t k, const void *packed,
                           int64_t n, int64_t group, const float *bias, float *y, int threads) {
  const char *fn = "kwker_linear";
  int rc = check_shape(fn, mode, n, k, group);
  if (rc != KWKER_OK) return rc;
  if (m < 0)
    return set_error(KWKER_E_INVALID_ARGUMENT, "%s: m must be >= 0 (got %lld)", fn, (long long)m);
  if (threads < 0)
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "%s: threads must be >= 1, or 0 for the process budget (got %d)", fn, threads);
  if (m == 0) return KWKER_OK;
  if (!x || !packed || !y)
    return set_error(KWKER_E_INVALID_ARGUMENT, "%s: x, packed and y must not be NULL", fn);
  try {
    int eid = current_engine();
    int budget = rt::thread_budget();
    int t = threads == 0 || threads > budget ? budget : threads;
    rt::SharedCall share;  // fewer threads while other Kwker processes are busy (cpu_share.h)
    CallCtx ctx{share.begin(t < 1 ? 1 : t, budget), 0u, 1};
    if (linear_table(eid).linear(ctx, mode, x, m, k, packed, n, group, bias, y) != 0)
      return set_error(KWKER_E_NO_MEMORY, "%s: out of memory for the padded activations", fn);
    rt::counters_record(eid, ctx.used_threads);
    return KWKER_OK;
  } catch (const std::bad_alloc &) {
    return set_error(KWKER_E_NO_MEMORY, "%s: out of memory", fn);
  } catch (const std::exception &e) {
    return set_error(KWKER_E_INTERNAL, "%s: internal error: %s (please report it)", fn, e.what());
  }
}

KWKER_API const char *kwker_linear_kernel(int mode, int64_t m) {
  if (!known_mode(mode) || !flag_fits(mode)) {
    set_error(KWKER_E_INVALID_ARGUMENT, "kwker_linear_kernel: unknown mode %d", mode);
    return nullptr;
  }
  const int eid = current_engine();
  if (eid == kAvx512) {
    switch (linear_prompt_kernel_avx512(lin_base(mode), m)) {
      case kPromptAmxBf16: return "amx-bf16";
      case kPromptAmxInt8: return "amx-int8";
      case kPromptVnniInt8: return "vnni-int8";
      case kPromptAvx512Bf16: return "avx512-bf16";
      default: break;
    }
  }
  if (lin_int_activations(mode, m)) return linear_table(eid).int_kernel;
  return linear_table(eid).name;
}


KWKER_API int kwker_run_tasks(int ntasks, int threads, void (*fn)(void *ctx, int task), void *ctx) {
  if (ntasks < 0 || threads < 0 || (ntasks > 0 && !fn))
    return set_error(KWKER_E_INVALID_ARGUMENT,
                     "kwker_run_tasks: ntasks and threads must be >= 0 and fn not NULL (got "
                     "ntasks=%d, threads=%d)", ntasks, threads);
  if (ntasks == 0) return KWKER_OK;
  const int budget = rt::thread_budget();
  int t = threads == 0 || threads > budget ? budget : threads;
  if (t > ntasks) t = ntasks;
  if (t < 1) t = 1;
  rt::SharedCall share;
  t = share.begin(t, budget);
  rt::run_parallel_shared(t, ntasks, fn, ctx);  // tasks taken as threads come free
  return KWKER_OK;
}

KWKER_API kwker_thread_runner kwker_set_thread_runner(kwker_thread_runner runner) {
  return rt::set_thread_runner(runner);
}
