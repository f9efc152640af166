// The packed weight layout of the CPU backend's linear kernels (engine-neutral: the packer in
// linear/pack.cc and every engine's kernels in core/linear-inl.h share it).
//
// W is [n, k] (out_features x in_features). Columns are grouped into panels of kLinNR output
// columns (the last panel padded with zero columns) and K is zero-padded to lin_padded_k. A
// panel is contiguous, so a thread streams its panels front to back:
//   high   (float32): per 16-wide K step, kLinNR x 16 floats (column-major within the step)
//   medium (bf16):    the same with 16-bit bfloat16 values
//   int8   (Q8_0):    per 32-wide block, kLinNR float32 scales, then kLinNR x 32 int8 values
//   int4   (Q4_1):    per group, kLinNR float32 scales, kLinNR float32 minimums, then per column
//                     group/2 bytes: each 32-block as 16 bytes, element i in the low nibble of
//                     byte i and element i+16 in its high nibble (GGUF's order); w = q*d + min.
//   int4 with the Q4_0 flag (kLinQ4_0, group 32 only): per 32-block, kLinNR float16 scales, then
//                     the same 4 x 16 bytes; every minimum is -8 d, computed, not stored. GGUF's
//                     own Q4_0 bytes (18 per 32 weights, against 24 above): the decode step of
//                     a Q4_0 model streams a quarter fewer int4 bytes. The kernels widen d and
//                     form -8 d (both exact), so the results are the flagless layout's bit for
//                     bit on the same blocks.
// Scales are float32 (GGUF stores float16; converting them is exact), so a GGUF block maps
// onto this layout without any rounding.
//
// Two more modes give "high" (float32) results from fewer bytes, for float32 weights that are
// exactly a dequantised GGUF block (what transformers loads from a Q4_1 / Q8_0 file, and what
// kwker.cpu_backend detects at optimize time, bit for bit): they store the int4 (group 32) and
// int8 layouts, and their kernels rebuild each weight exactly as GGUF's dequantiser computes it
// (high_q4: w = fl(fl(d * q) + min), high_q8: w = fl(d * q)) before the same fused multiply-add
// chain as "high", so the results are those of kLinF32 on the same float32 weights, bit for bit.
// K must be a multiple of 32 there (no padded K, whose rebuilt weights would not be 0).
// A third, high_f16, stores float32 weights that are exactly float16 (what transformers loads
// from an F16 file, or a float16 checkpoint loaded as float32) as their float16 bits in
// medium's 16-bit layout; converting float16 to float32 is exact, so it too gives kLinF32's
// results bit for bit from half the bytes.
#ifndef KWKER_CORE_LINEAR_LAYOUT_H_
#define KWKER_CORE_LINEAR_LAYOUT_H_
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kwker {

enum LinearMode {
  kLinF32 = 0,
  kLinBF16 = 1,
  kLinInt8 = 2,
  kLinInt4 = 3,
  kLinF32Q4 = 4,  // "high" from exact Q4_1 blocks (int4 layout, group 32)
  kLinF32Q8 = 5,  // "high" from exact Q8_0 blocks (int8 layout)
  kLinInt8A8 = 6, // int8 weights with x quantised to int8 at every row count (int8 layout)
  kLinInt4A8 = 7, // int4 weights likewise (int4 layout)
  kLinF32F16 = 8, // "high" from float32 weights that are exactly float16 (bf16's layout, f16 bits)
  kLinNumModes = 9
};
// A flag on kLinInt4 / kLinInt4A8 (group 32): the Q4_0 layout above. Engines strip it at entry
// (lin_mode) and keep it as a bool beside the layout.
constexpr int kLinQ4_0 = 16;
inline bool lin_q40(int mode) { return (mode & kLinQ4_0) != 0; }
inline int lin_mode(int mode) { return mode & ~kLinQ4_0; }
constexpr int kLinNR = 4;
constexpr int kLinLanes = 16;
constexpr int kLinQ8Block = 32;
constexpr int64_t kLinQ8PanelBlockBytes = kLinNR * (4 + kLinQ8Block);
// Each extra thread must stream at least this many weight bytes to pay for its hand-off.
constexpr int64_t kLinMinBytesPerThread = 96 * 1024;
// Decode calls hand their panels out in chunks as threads come free (rt::run_parallel_shared):
// up to kLinChunksPerThread per thread, each at least kLinMinChunkBytes of work, so a thread whose
// CPU is taken by another process leaves its share to the others rather than holding the call.
constexpr int kLinChunksPerThread = 8;
constexpr int64_t kLinMinChunkBytes = 32 * 1024;

inline int64_t lin_round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The layout a mode's weights are packed in (the exact-block "high" modes and the A8 modes share
// int4's / int8's).
inline int lin_layout(int mode) {
  mode = lin_mode(mode);
  return mode == kLinF32Q4 || mode == kLinInt4A8 ? kLinInt4
         : mode == kLinF32Q8 || mode == kLinInt8A8 ? kLinInt8
         : mode == kLinF32F16 ? kLinBF16 : mode;
}
// The A8 modes (W8A8 / W4A8): x quantised per 32-block to int8 for the decode step as well as
// for prompts (core/linear_prompt.h says what they compute), so that each row's result does not
// depend on how many rows a call has; int8 / int4 quantise x from kLinPromptRows rows only.
inline bool lin_a8(int mode) {
  mode = lin_mode(mode);
  return mode == kLinInt8A8 || mode == kLinInt4A8;
}
// The mode a call computes in: the A8 modes are int8 / int4 with x quantised at every row count
// (without the Q4_0 flag: the caller keeps lin_q40 of the mode it was given).
inline int lin_base(int mode) { return lin_a8(mode) ? lin_layout(mode) : lin_mode(mode); }
inline bool lin_exact_blocks(int mode) { return mode == kLinF32Q4 || mode == kLinF32Q8; }
// The "high" modes stored in fewer bytes (exact blocks, float16): their kernels rebuild each
// float32 weight exactly and run "high"'s chains on it (the prompt kernels on rebuilt panels).
inline bool lin_rebuilds(int mode) { return lin_exact_blocks(mode) || mode == kLinF32F16; }

// Threads for a linear call: a second thread pays once each covers kLinMinBytesPerThread of
// work_bytes (weight bytes scaled by the row count) and there are enough units (panels,
// column groups, strips) to split; at least 1, at most the call's budget.
inline int lin_threads(int budget, int64_t work_bytes, int64_t units) {
  int t = budget;
  const int64_t by_work = work_bytes / kLinMinBytesPerThread;
  if (by_work < t) t = by_work < 1 ? 1 : int(by_work);
  if (units < t) t = int(units < 1 ? 1 : units);
  return t;
}

// Chunks for a call of `threads` threads over `units` panels and work_bytes of work.
inline int64_t lin_chunks(int threads, int64_t work_bytes, int64_t units) {
  if (threads <= 1) return 1;
  int64_t c = int64_t(threads) * kLinChunksPerThread;
  const int64_t by_work = work_bytes / kLinMinChunkBytes;
  if (by_work < c) c = by_work;
  if (units < c) c = units;
  return c < threads ? threads : c;
}

inline int64_t lin_padded_k(int mode, int64_t k, int64_t group) {
  mode = lin_layout(mode);
  if (mode == kLinF32 || mode == kLinBF16) return lin_round_up(k, kLinLanes);
  if (mode == kLinInt8) return lin_round_up(k, kLinQ8Block);
  return lin_round_up(k, group);
}

// Bytes of an int4 group's header: kLinNR float32 scales and minimums, or (Q4_0) float16 scales.
constexpr int64_t lin_int4_header(bool q40) { return q40 ? kLinNR * 2 : kLinNR * 8; }

// mode may carry the Q4_0 flag.
inline int64_t lin_panel_bytes(int mode, int64_t kp, int64_t group) {
  switch (lin_layout(mode)) {
    case kLinF32: return kLinNR * kp * 4;
    case kLinBF16: return kLinNR * kp * 2;
    case kLinInt8: return kp / kLinQ8Block * kLinQ8PanelBlockBytes;
    default: return kp / group * (lin_int4_header(lin_q40(mode)) + kLinNR * group / 2);
  }
}

// IEEE float16 bits to float32, exactly (every float16 is a float32): what F16C's vcvtph2ps gives.
inline float lin_half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);  // inf, NaN (payload kept, as vcvtph2ps does)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else {  // zero or subnormal: man * 2^-24, exact in float32
    float f = std::ldexp(float(man), -24);
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// An int4 group header's kLinNR scales and minimums as float32 (q40: float16 scales, min = -8 d;
// both exact, so the flagless layout's values of the same blocks).
inline void lin_int4_scales(const uint8_t *gp, bool q40, float *scale, float *mins) {
  if (!q40) {
    std::memcpy(scale, gp, sizeof(float) * kLinNR);
    std::memcpy(mins, gp + kLinNR * 4, sizeof(float) * kLinNR);
    return;
  }
  for (int j = 0; j < kLinNR; ++j) {
    uint16_t h;
    std::memcpy(&h, gp + 2 * j, 2);
    scale[j] = lin_half_to_float(h);
    mins[j] = -8.0f * scale[j];
  }
}

inline int64_t lin_packed_bytes(int mode, int64_t n, int64_t k, int64_t group) {
  return (n + kLinNR - 1) / kLinNR * lin_panel_bytes(mode, lin_padded_k(mode, k, group), group);
}

}  // namespace kwker
#endif
