/* kwker.h: the stable C ABI of libkwker.
 *
 * Every symbol is prefixed kwker_. Arrays are C-contiguous and native-endian;
 * callers (the Python layer, the C++ sugar in kwker.hpp) normalise layout first.
 * Every call returns a kwker_status; on failure kwker_last_error() returns a
 * thread-local message that names what was wrong and how to fix it.
 *
 * ABI rule: KWKER_ABI_VERSION changes whenever a signature, an enum value or a
 * struct layout changes. Callers compare kwker_abi_version() with the value they
 * were compiled against before calling anything else.
 */
#ifndef KWKER_H_
#define KWKER_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define KWKER_API __declspec(dllexport)
#else
#define KWKER_API __attribute__((visibility("default")))
#endif

#define KWKER_ABI_VERSION 1
#define KWKER_INFO_SCHEMA_VERSION 1
#define KWKER_SELF_CHECK_SCHEMA_VERSION 1

typedef enum kwker_status {
  KWKER_OK = 0,
  KWKER_E_INVALID_ARGUMENT = 1, /* a size, axis, offset or option is out of range */
  KWKER_E_DTYPE = 2,            /* dtype code unknown to this build */
  KWKER_E_NO_MEMORY = 3,        /* scratch allocation failed or exceeds the scratch limit */
  KWKER_E_UNSUPPORTED_ISA = 4,  /* engine unknown, not compiled, or not run by this CPU */
  KWKER_E_BUFFER_TOO_SMALL = 5, /* an output text buffer is too small; *needed says how big */
  KWKER_E_SELF_CHECK_FAILED = 6,/* an engine gave a result different from the scalar reference */
  KWKER_E_INTERNAL = 7
} kwker_status;

/* Element types. DATETIME is int64 where INT64_MIN (NaT) orders like NaN. */
typedef enum kwker_dtype {
  KWKER_BOOL = 0,
  KWKER_INT8 = 1,
  KWKER_INT16 = 2,
  KWKER_INT32 = 3,
  KWKER_INT64 = 4,
  KWKER_UINT8 = 5,
  KWKER_UINT16 = 6,
  KWKER_UINT32 = 7,
  KWKER_UINT64 = 8,
  KWKER_FLOAT16 = 9,
  KWKER_FLOAT32 = 10,
  KWKER_FLOAT64 = 11,
  KWKER_BFLOAT16 = 12,
  KWKER_DATETIME = 13,
  KWKER_DTYPE_COUNT = 14
} kwker_dtype;

/* Order flags (bitwise or). */
#define KWKER_DESCENDING 1u
#define KWKER_NANS_FIRST 2u
/* torch's order: NaN is the largest value (last ascending, first descending); takes the place of
 * KWKER_NANS_FIRST. Calls that return indices already tie -0.0 with 0.0. */
#define KWKER_NAN_LARGEST 4u

/* Optional algorithm paths for kwker_set_algorithms (the adaptive quicksort is always on). */
#define KWKER_ALGO_RADIX 1u     /* counting / LSD radix where it wins */
#define KWKER_ALGO_PARALLEL 2u  /* multithreaded paths for large inputs */
#define KWKER_ALGO_PRESORTED 4u /* O(n) detection of sorted and reverse-sorted input */
#define KWKER_ALGO_ALL 7u

/* threads argument of every sort call: 0 means "the process budget". */

/* ---- version ---- */
KWKER_API int kwker_abi_version(void);
KWKER_API const char *kwker_version(void);
KWKER_API const char *kwker_last_error(void);

/* ---- sorting ---- */
/* Sort data[0..n) in place by the documented total order. */
KWKER_API int kwker_sort(int dtype, void *data, int64_t n, unsigned flags, int threads);
/* Sorted copy: dst[0..n) = sorted src[0..n). Saves the caller's copy pass; dst may equal src.
 * src and dst must not otherwise overlap. */
KWKER_API int kwker_sort_copy(int dtype, const void *src, void *dst, int64_t n, unsigned flags,
                              int threads);
/* Stable argsort of data[0..n) into out[0..n). data is not modified. */
KWKER_API int kwker_argsort(int dtype, const void *data, int64_t n, int64_t *out,
                            unsigned flags, int threads);
/* Sort each of rows rows of length cols (row-major, contiguous) in place. */
KWKER_API int kwker_sort_rows(int dtype, void *data, int64_t rows, int64_t cols,
                              unsigned flags, int threads);
/* Sorted copy of each row: dst row i = sorted src row i (dst may equal src). */
KWKER_API int kwker_sort_rows_copy(int dtype, const void *src, void *dst, int64_t rows,
                                   int64_t cols, unsigned flags, int threads);
/* Per-row stable argsort; out holds rows*cols column indices. */
KWKER_API int kwker_argsort_rows(int dtype, const void *data, int64_t rows, int64_t cols,
                                 int64_t *out, unsigned flags, int threads);
/* Sort data[offsets[i]:offsets[i+1]] in place for i < noffsets-1. Offsets must be
 * non-decreasing and within [0, n]; elements outside [offsets[0], offsets[-1]) are untouched. */
KWKER_API int kwker_sort_segments(int dtype, void *data, int64_t n, const int64_t *offsets,
                                  int64_t noffsets, unsigned flags, int threads);
/* Stable argsort inside each segment; out[j] for j outside every segment is j. Indices are
 * positions in data (not offsets within the segment). */
KWKER_API int kwker_argsort_segments(int dtype, const void *data, int64_t n,
                                     const int64_t *offsets, int64_t noffsets, int64_t *out,
                                     unsigned flags, int threads);
/* Per-row top-k: the first k entries of the stable argsort of each row (KWKER_DESCENDING
 * for the largest). sorted == 0 returns the same set in index order. out_values is
 * rows*k elements of dtype; out_indices rows*k column indices. */
KWKER_API int kwker_topk_rows(int dtype, const void *data, int64_t rows, int64_t cols,
                              int64_t k, unsigned flags, int sorted, void *out_values,
                              int64_t *out_indices, int threads);
/* Per-column top-k of `outer` C-order matrices of rows x cols (element (a, r, j) at
 * data[(a * rows + r) * cols + j]): for column j of matrix a, the first k entries of the
 * stable argsort of its `rows` keys (KWKER_DESCENDING for the largest), so ties go to the
 * lowest row. Results are laid out (outer, k, cols): out_values[(a * k + q) * cols + j] and its
 * row in out_indices. sorted == 0 returns the same set in row order. The same results as
 * kwker_topk_rows on the transposed matrices, without transposing them (torch.topk along
 * dim 0, kwker.topk along axis 0). */
KWKER_API int kwker_topk_cols(int dtype, const void *data, int64_t outer, int64_t rows,
                              int64_t cols, int64_t k, unsigned flags, int sorted,
                              void *out_values, int64_t *out_indices, int threads);
/* Sort down the columns of `outer` C-order matrices of rows x cols (element (a, r, j) at
 * src[(a * rows + r) * cols + j]), results laid out the same way: vals gets each column's sorted
 * values, idx the rows of each column's stable order (the stable argsort along the axis), so
 * vals[(a * rows + q) * cols + j] == src[(a * rows + idx[...]) * cols + j] bit for bit when both
 * are asked for. Either may be NULL (not both): values alone take the value sort, indices alone
 * the argsort. vals may equal src when idx is NULL (the columns sorted in place). The same results
 * as kwker_sort_rows_copy / kwker_argsort_rows / kwker_sort_pairs_rows on the transposed matrices,
 * without transposing them (kwker.sort and kwker.argsort along an axis before the last,
 * torch.sort along a dim before the last). */
KWKER_API int kwker_sort_cols(int dtype, const void *src, void *vals, int64_t *idx, int64_t outer,
                              int64_t rows, int64_t cols, unsigned flags, int threads);
/* Per-column k-th value of the same matrices: position rank (0-based) of each column's stable
 * order; out_value gets outer * cols elements of dtype and out_index their rows, laid out
 * (outer, cols). 0 <= rank < rows. (torch.kthvalue along a dim before the last.) */
KWKER_API int kwker_kth_cols(int dtype, const void *data, int64_t outer, int64_t rows,
                             int64_t cols, int64_t rank, unsigned flags, void *out_value,
                             int64_t *out_index, int threads);

/* Stable sort of each row returning values AND indices (torch.sort's result): idx holds
 * rows*cols column indices of the stable order, vals (NULL for indices only) rows*cols
 * elements with vals[j] == src[row + idx[j]] bit for bit, NaN payloads and the sign of zero
 * included. With KWKER_NAN_LARGEST this is torch.sort(stable=True) exactly. */
KWKER_API int kwker_sort_pairs_rows(int dtype, const void *src, void *vals, int64_t *idx,
                                    int64_t rows, int64_t cols, unsigned flags, int threads);
/* Per-row k-th value: position rank (0-based) of each row's stable order; out_value gets rows
 * elements of dtype, out_index rows column indices. 0 <= rank < cols. */
KWKER_API int kwker_kth_rows(int dtype, const void *data, int64_t rows, int64_t cols,
                             int64_t rank, unsigned flags, void *out_value, int64_t *out_index,
                             int threads);

/* Output buffers from Kwker's scratch cache (64-byte aligned): released buffers are kept up to
 * the cache limit (kwker_set_scratch_cache, 1 GiB by default) and large ones ask for transparent
 * huge pages, so repeated large results do not page-fault. NULL when the scratch limit
 * (kwker_set_scratch_limit) refuses or memory is exhausted: allocate elsewhere then.
 * kwker.torch_ops allocates its large results here. */
KWKER_API void *kwker_buffer_acquire(int64_t nbytes);
KWKER_API void kwker_buffer_release(void *buffer);

/* ---- runtime controls ---- */
/* Select an engine by name ("portable", "sse4.2", "avx2", "avx512"); NULL restores the best
 * engine this CPU supports and ignores KWKER_ISA from then on. */
KWKER_API int kwker_set_isa(const char *name);
KWKER_API const char *kwker_get_isa(void);
/* 1 when the engine is compiled in and this CPU runs it, else 0. */
KWKER_API int kwker_isa_supported(const char *name);
KWKER_API int kwker_set_max_threads(int n);  /* n >= 1; 0 removes the cap */
KWKER_API int kwker_get_max_threads(void);    /* the effective budget */
KWKER_API int kwker_set_scratch_cache(int64_t cache_bytes);
KWKER_API int kwker_release_scratch(void);
KWKER_API int kwker_set_scratch_limit(int64_t nbytes); /* -1 unlimited, 0 in-place only */
KWKER_API int kwker_set_algorithms(unsigned mask);
KWKER_API unsigned kwker_get_algorithms(void);
KWKER_API int kwker_reset_counters(void);
/* Names the backend the caller uses ("fast", "ctypes", "c"), reported by runtime info. */
KWKER_API int kwker_set_backend_name(const char *name);
/* Tuning knobs: the thresholds at which the engines switch algorithms (names and meaning in
 * docs/design.md). Each engine has measured defaults; set_tuning overrides a knob for every
 * engine (value >= 0) or restores the defaults (-1). Results never depend on a knob, only speed
 * does: they exist for the threshold-measuring script (kwker/bench/thresholds.py). get_tuning
 * writes the value in effect for the current engine. */
KWKER_API int kwker_set_tuning(const char *name, int64_t value);
KWKER_API int kwker_get_tuning(const char *name, int64_t *value);

/* ---- CPU backend: linear layers y = x W^T (+ bias), docs/cpu-backend.md ---- */
/* Modes: float32 weights, bfloat16 weights, int8 per 32-block scale (GGUF Q8_0), int4 per group
 * scale and minimum (GGUF Q4_1; Q4_0 is min = -8 * scale). x, y, bias and scales are float32.
 * Every engine gives identical results bit for bit in a given mode, except the "medium" prompt
 * kernels on AMX / AVX512_BF16 (see kwker_linear_kernel). */
#define KWKER_LINEAR_HIGH 0
#define KWKER_LINEAR_MEDIUM 1
#define KWKER_LINEAR_INT8 2
#define KWKER_LINEAR_INT4 3
/* "high" results from fewer bytes, for float32 weights that are exactly dequantised GGUF blocks
 * (a model transformers loaded from a Q4_1 / Q8_0 file): packed as int4 with group 32 (HIGH_Q4:
 * uint8 q, scales d, mins m with w == (float)(d * q) + m in float32, GGUF's dequantiser) or as
 * int8 (HIGH_Q8: w == (float)(d * q)), they give exactly KWKER_LINEAR_HIGH's results on those
 * float32 weights, bit for bit, reading 24 / 36 bytes per 32 weights instead of 128. k must be a
 * multiple of 32. The caller checks exactness (kwker.cpu_backend does, bit for bit). */
#define KWKER_LINEAR_HIGH_Q4 4
#define KWKER_LINEAR_HIGH_Q8 5
/* int8 / int4 weights (the INT8 / INT4 layouts and packing) with x quantised per 32-block to
 * int8 at every row count (W8A8 / W4A8): the arithmetic of the int8-activation prompt kernels
 * below for the decode step too, so a row's result does not depend on the call's row count, and
 * the inner loops multiply bytes (about 2x INT8 / INT4's decode speed on AVX2). INT8 / INT4 keep
 * float activations below 16 rows. Identical bits on every engine. */
#define KWKER_LINEAR_INT8_A8 6
#define KWKER_LINEAR_INT4_A8 7
/* "high" results from float32 weights that are exactly float16 (a model loaded from an F16 GGUF
 * file, or a float16 checkpoint loaded as float32): packed as their float16 bits (uint16 values)
 * in MEDIUM's 16-bit layout; float16 widens to float32 exactly, so the results are
 * KWKER_LINEAR_HIGH's on those weights, bit for bit, from half the bytes. The caller checks
 * exactness (kwker.cpu_backend does). */
#define KWKER_LINEAR_HIGH_F16 8
/* A flag for KWKER_LINEAR_INT4 and KWKER_LINEAR_INT4_A8 with group 32: GGUF Q4_0's own bytes, 18
 * per 32 weights (float16 scales; every minimum is -8 x scale, not stored) instead of 24. The
 * results are those of the mode without the flag, bit for bit; a Q4_0 model's decode step
 * streams a quarter fewer int4 bytes. kwker_linear_pack takes the same values, scales and mins
 * and fails (writing nothing) where a scale is not a finite float16 value or a min is not
 * exactly -8 x its scale; unpack gives those scales and mins back. Pass the same flagged mode to
 * packed_size, unpack and kwker_linear. */
#define KWKER_LINEAR_Q4_0 16
/* Bytes of the packed weights of an [n, k] matrix (group: int4 group size, a positive multiple of
 * 32; ignored by the other modes), or -1 with the last error set. */
KWKER_API int64_t kwker_linear_packed_size(int mode, int64_t n, int64_t k, int64_t group);
/* Packs row-major values [n, k] (float32 / bfloat16 or float16 bits as uint16 / int8 in -128..127 / uint8 in
 * 0..15) with, for int8 and int4, scales [n, ceil(k / block)] and, for int4, mins of the same
 * shape, into packed (kwker_linear_packed_size bytes). */
KWKER_API int kwker_linear_pack(int mode, int64_t n, int64_t k, int64_t group, const void *values,
                                const float *scales, const float *mins, void *packed);
/* The inverse of kwker_linear_pack (scales / mins may be NULL where the mode has none). */
KWKER_API int kwker_linear_unpack(int mode, int64_t n, int64_t k, int64_t group,
                                  const void *packed, void *values, float *scales, float *mins);
/* y[m, n] = x[m, k] W^T (+ bias[n] when bias is not NULL) on the selected engine. */
KWKER_API int kwker_linear(int mode, const float *x, int64_t m, int64_t k, const void *packed,
                           int64_t n, int64_t group, const float *bias, float *y, int threads);

/* The kernel kwker_linear runs for m rows in this mode on the selected engine, now: "amx-bf16"
 * ("medium", x rounded to bfloat16, AMX tiles), "avx512-bf16" ("medium" without AMX, x rounded to
 * bfloat16, VDPBF16PS; KWKER_AMX=0 turns it off too), "amx-int8", "vnni-int8", "avx2-int8" or
 * "scalar-int8" (int8 / int4 from 16 rows and the A8 modes at any row count, with x quantised per
 * 32-block to int8; all four give the same bits), or the engine's name (float activations,
 * identical on every engine). The prompt kernels start at 16 rows; AMX needs the CPU, Linux's
 * permission (arch_prctl, 5.16+) and KWKER_AMX not 0. NULL for a bad mode. */
KWKER_API const char *kwker_linear_kernel(int mode, int64_t m);

/* Runs fn(ctx, task) for every task in [0, ntasks) on Kwker's thread pool, on at most threads
 * threads (0: the process budget; never more than the budget); the calling thread takes part.
 * Tasks are split into contiguous runs, one per thread. For the CPU backend's decoder packages
 * (compiled against this header at run time), so their attention shares the sorts' pool and
 * budget instead of starting a second pool. fn must not throw. */
KWKER_API int kwker_run_tasks(int ntasks, int threads, void (*fn)(void *ctx, int task), void *ctx);

/* For the calling thread only: hands Kwker's parallel work to runner (which runs fn(ctx, task)
 * for every task in [0, ntasks) on its own threads and returns nonzero, or returns 0 to let
 * Kwker's pool run them); NULL restores the pool. Returns the previous runner. The CPU
 * backend's decode step uses it to run on torch's threads, so that two thread pools do not spin
 * against each other on the same cores. */
typedef int (*kwker_thread_runner)(int ntasks, void (*fn)(void *ctx, int task), void *ctx);
KWKER_API kwker_thread_runner kwker_set_thread_runner(kwker_thread_runner runner);

/* ---- diagnostics (schemas in docs/runtime-info.md) ---- */
/* Writes the runtime-info JSON (NUL-terminated) to buf. If cap is too small returns
 * KWKER_E_BUFFER_TOO_SMALL and sets *needed (bytes including the NUL). */
KWKER_API int kwker_runtime_info(char *buf, size_t cap, size_t *needed);
/* Runs engine `name` on a fixed battery against the scalar reference, without changing the
 * process-wide engine, and writes a JSON report. Returns KWKER_OK when every case matched,
 * KWKER_E_SELF_CHECK_FAILED when one did not, KWKER_E_UNSUPPORTED_ISA when it cannot run. */
KWKER_API int kwker_self_check(const char *name, char *buf, size_t cap, size_t *needed);

#ifdef __cplusplus
}
#endif
#endif /* KWKER_H_ */
