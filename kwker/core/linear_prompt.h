// The CPU backend's prompt kernels: from kLinPromptRows rows up, the avx512 engine runs
// "medium", int8 and int4 on AMX tiles (where the CPU has them, Linux grants them and
// KWKER_AMX is not 0) or, for int8 and int4, on AVX-512 VNNI (engines/avx512/linear_prompt.cc);
// every other engine (and avx512 without VNNI) runs int8 and int4 prompts with the same
// arithmetic on byte multiply-adds (AVX2) or in scalar code (core/linear_int-inl.h).
//   int8 / int4: x is quantised per row and 32-block to int8 (Q8_0: dx = max|x| / 127,
//     q = round-to-nearest-even(x * (127 / max|x|))), each block's dot product with the weights
//     is an exact int32, and acc = fma(float(isum), dw * dx, acc) per block in K order (int4 adds
//     acc = fma(float(sum q), min * dx, acc)); the bias is added last. AMX, VNNI, AVX2 and the scalar
//     code give the same bits; fewer rows (the decode step) keep float activations.
//   medium: x rounded to bfloat16; on AMX TDPBF16PS accumulates in float32 in the tile unit's
//     own order, without AMX (AVX512_BF16) VDPBF16PS adds two products per lane and k pair in k
//     order; KWKER_AMX=0 gives the float kernels' results back.
#ifndef KWKER_CORE_LINEAR_PROMPT_H_
#define KWKER_CORE_LINEAR_PROMPT_H_
#include <cstdint>

#include "core/engine.h"
#include "core/linear_layout.h"

namespace kwker {

// Rows from which a call is a prompt: below it (the decode step, a few sequences) the weight
// streaming kernels win, since the weights are read once whatever the row count.
constexpr int64_t kLinPromptRows = 16;

// Whether a call of m rows in `mode` quantises x to int8 (the int8-activation kernels, AMX / VNNI
// or core/linear_int-inl.h): int8 / int4 from kLinPromptRows rows, the A8 modes at any count.
inline bool lin_int_activations(int mode, int64_t m) {
  const int base = lin_base(mode);
  return (base == kLinInt8 || base == kLinInt4) && (m >= kLinPromptRows || lin_a8(mode));
}

enum PromptKernel {
  kPromptNone = 0,
  kPromptAmxBf16,
  kPromptAmxInt8,
  kPromptVnniInt8,
  kPromptAvx512Bf16
};

PromptKernel linear_prompt_kernel_avx512(int mode, int64_t m);
// mode may carry the Q4_0 flag. 1: done; 0: not a prompt call for these kernels (run the float
// kernels); -1: out of memory.
int linear_prompt_avx512(CallCtx &ctx, int mode, const float *x, int64_t m, int64_t k,
                         const void *packed, int64_t n, int64_t group, const float *bias, float *y);

}  // namespace kwker
#endif
