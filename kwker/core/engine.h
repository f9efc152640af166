// The table every engine fills in: the whole core compiled once per ISA. Engine-neutral
// (no ISA flags, no engine namespace) so dispatch and capi can hold pointers to any engine.
#ifndef KWKER_CORE_ENGINE_H_
#define KWKER_CORE_ENGINE_H_
#include <cstddef>
#include <cstdint>

namespace kwker {

// Below this many elements a call runs on one thread: waking another costs more than it saves.
// (Also lets the C API skip the thread-budget query for small calls.)
constexpr int64_t kParallelMinElements = 100000;
// One linear pass (the presorted check, a reversal, the NaN restore, a key-range scan) reads
// memory at 0.05-0.4 ns per element on one thread, so a second thread's hand-off (a futex
// wake-up, tens of µs on these VMs) pays only from about two million elements: sorted int32 in
// place took 0.05 ns/el on one thread and 0.10 on two at 1e6, 0.17 and 0.11 at 1e7
// (make bench-native, idle machine).
constexpr int64_t kParallelPassMinElements = int64_t(1) << 21;

// Rows and segments are split among the threads whole, with nothing to sample or merge, so a
// second thread pays from much less than a 1-D sort's kParallelMinElements. Rows of one length:
// from about kRowsParallelSteps key steps (keys x the bits of the row length) and at least
// kRowsParallelMinKeys keys (rows are claimed in runs of kClaimKeys: fewer runs leave one thread
// most of the work); rows of 2 keep kParallelMinElements (0.3-0.5 ns a key: two threads read
// 0.92-0.97x one at 64,000 keys). Ragged segments and the rows of a top-k or k-th value: from
// kBlocksParallelMinKeys keys, whatever their lengths (a short segment costs its call more than
// its keys). Columns keep kParallelMinElements: their blocks are whole cache lines of columns, so
// a matrix of 33 int16 columns splits 32 + 1 (1,000 x 33 on two threads: 0.70-0.94x). Measured
// 2026-12-07 on the 2-vCPU Intel Xeon, two threads against one (design.md): just past these
// thresholds rows of 3-1,000 float32 / float64 / int16 / int64 keys 1.26-2.01x (avx2 engine) and
// 1.01-2.00x (avx512), segments of 1-8 to 1-512 keys 1.19-1.63x, top-k of rows of 100-10,000 keys
// 1.05-1.83x; at 2,000-8,000 keys two threads lose (0.44-0.99x).
constexpr int64_t kRowsParallelSteps = 131072;
constexpr int64_t kRowsParallelMinKeys = 16384;
constexpr int64_t kBlocksParallelMinKeys = 32768;
// Threads claim rows from a shared counter in runs of about this many keys, so its cache line
// does not bounce between the cores once per short row.
constexpr int64_t kClaimKeys = 4096;

// Rows of len keys per claim.
inline int64_t rows_per_claim(int64_t len) {
  return len >= kClaimKeys ? 1 : kClaimKeys / (len > 0 ? len : 1);
}

// The fewest keys at which rows of len keys go parallel (ragged segments: kBlocksParallelMinKeys).
inline int64_t rows_parallel_min(int64_t len) {
  int bits = 1;
  while (bits < 62 && (int64_t(1) << bits) < len) ++bits;
  int64_t m = kRowsParallelSteps / bits;
  if (m < kRowsParallelMinKeys) m = kRowsParallelMinKeys;
  return m < kParallelMinElements ? m : kParallelMinElements;
}

// The same for a top-k / k-th value of `rows` rows: several rows split from
// kBlocksParallelMinKeys; one row splits its candidate pass only from kParallelMinElements
// (a row of 10,000 keys on two threads: 0.87-0.92x).
inline int64_t select_parallel_min(int64_t rows) {
  return rows > 1 ? kBlocksParallelMinKeys : kParallelMinElements;
}

// Per-call context resolved by the C API from the runtime controls.
struct CallCtx {
  int threads;      // threads this call may use (>= 1), already clamped to the budget
  unsigned algos;   // KWKER_ALGO_* bits that are on
  int used_threads; // out: the most threads any stage of the call actually ran
};

// Segments: explicit offsets, or (offsets == nullptr) `count` rows of `row_len`.
struct Segments {
  const int64_t *offsets;
  int64_t count;   // number of segments
  int64_t row_len; // used when offsets == nullptr
  int64_t begin(int64_t i) const { return offsets ? offsets[i] : i * row_len; }
  int64_t end(int64_t i) const { return offsets ? offsets[i + 1] : (i + 1) * row_len; }
};

struct EngineTable {
  const char *name;
  // Each returns a kwker_status. data/dst are contiguous, native-endian.
  int (*sort_copy)(CallCtx &, int dtype, const void *src, void *dst, int64_t n, unsigned flags);
  int (*argsort)(CallCtx &, int dtype, const void *data, int64_t n, int64_t *out, unsigned flags);
  // Sorts every segment of src into the same positions of dst (dst may equal src); elements
  // outside segments are untouched.
  int (*sort_segments)(CallCtx &, int dtype, const void *src, void *dst, const Segments &segs,
                       unsigned flags);
  // relative: indices counted from each segment's start (rows) instead of absolute.
  int (*argsort_segments)(CallCtx &, int dtype, const void *data, const Segments &segs,
                          int64_t *out, unsigned flags, bool relative);
  int (*topk_rows)(CallCtx &, int dtype, const void *data, int64_t rows, int64_t cols, int64_t k,
                   unsigned flags, bool sorted, void *out_values, int64_t *out_indices);
  // This engine's measured default of a tuning knob (runtime/tuning.h), -1 when unknown.
  int64_t (*tuning_default)(int knob);
  // Stable sort of every segment returning values (may be null) and segment-relative indices:
  // vals[j] == src[begin + idx[j]] bit for bit (core/pairs-inl.h).
  int (*sort_pairs_segments)(CallCtx &, int dtype, const void *src, void *vals, int64_t *idx,
                             const Segments &segs, unsigned flags);
  // Position `rank` of every row's stable order: one value and one index per row.
  int (*kth_rows)(CallCtx &, int dtype, const void *data, int64_t rows, int64_t cols,
                  int64_t rank, unsigned flags, void *out_values, int64_t *out_indices);
  // Top-k down every column of `outer` (rows x cols) matrices, results as (outer, k, cols)
  // (core/columns-inl.h).
  int (*topk_cols)(CallCtx &, int dtype, const void *data, int64_t outer, int64_t rows,
                   int64_t cols, int64_t k, unsigned flags, bool sorted, void *out_values,
                   int64_t *out_indices);
  // Every column sorted, laid out like src: values (vals, may be null) and / or the rows of the
  // stable order (idx, may be null) (core/columns-inl.h).
  int (*sort_cols)(CallCtx &, int dtype, const void *src, void *vals, int64_t *idx,
                   int64_t outer, int64_t rows, int64_t cols, unsigned flags);
  // Position `rank` of every column's stable order, results as (outer, cols).
  int (*kth_cols)(CallCtx &, int dtype, const void *data, int64_t outer, int64_t rows,
                  int64_t cols, int64_t rank, unsigned flags, void *out_values,
                  int64_t *out_indices);
};

// The CPU backend's linear kernels (core/linear-inl.h), one table per engine beside the sorts'.
struct LinearTable {
  const char *name;
  const char *int_kernel;  // the int8-activation kernel (core/linear_int-inl.h) on this engine
  // y[m, n] = x[m, k] W^T (+ bias) with W packed by kwker_linear_pack (core/linear_layout.h).
  // Returns 0, or -1 when scratch memory ran out.
  int (*linear)(CallCtx &, int mode, const float *x, int64_t m, int64_t k, const void *packed,
                int64_t n, int64_t group, const float *bias, float *y);
};
const LinearTable &linear_portable();
const LinearTable &linear_sse42();
const LinearTable &linear_avx2();
const LinearTable &linear_avx512();

// One accessor per engine, each defined in engines/<dir>/engine.cc.
const EngineTable &engine_portable();
const EngineTable &engine_sse42();
const EngineTable &engine_avx2();
const EngineTable &engine_avx512();

}  // namespace kwker
#endif
