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
// Scales are float32 (GGUF stores float16; converting them is exact), so a GGUF block maps
// onto this layout without any rounding.
#ifndef KWKER_CORE_LINEAR_LAYOUT_H_
#define KWKER_CORE_LINEAR_LAYOUT_H_
#include <cstdint>

namespace kwker {

enum LinearMode { kLinF32 = 0, kLinBF16 = 1, kLinInt8 = 2, kLinInt4 = 3, kLinNumModes = 4 };
constexpr int kLinNR = 4;
constexpr int kLinLanes = 16;
constexpr int kLinQ8Block = 32;
constexpr int64_t kLinQ8PanelBlockBytes = kLinNR * (4 + kLinQ8Block);
// Each extra thread must stream at least this many weight bytes to pay for its hand-off.
constexpr int64_t kLinMinBytesPerThread = 96 * 1024;

inline int64_t lin_round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

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

inline int64_t lin_padded_k(int mode, int64_t k, int64_t group) {
  if (mode == kLinF32 || mode == kLinBF16) return lin_round_up(k, kLinLanes);
  if (mode == kLinInt8) return lin_round_up(k, kLinQ8Block);
  return lin_round_up(k, group);
}

inline int64_t lin_panel_bytes(int mode, int64_t kp, int64_t group) {
  switch (mode) {
    case kLinF32: return kLinNR * kp * 4;
    case kLinBF16: return kLinNR * kp * 2;
    case kLinInt8: return kp / kLinQ8Block * kLinQ8PanelBlockBytes;
    default: return kp / group * (kLinNR * 8 + kLinNR * group / 2);
  }
}

inline int64_t lin_packed_bytes(int mode, int64_t n, int64_t k, int64_t group) {
  return (n + kLinNR - 1) / kLinNR * lin_panel_bytes(mode, lin_padded_k(mode, k, group), group);
}

}  // namespace kwker
#endif
