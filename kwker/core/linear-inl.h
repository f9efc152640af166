// The CPU backend's linear kernels y = x W^T (+ bias), compiled once per engine like the sorts
// (engines/<name>/linear.cc). Weights arrive packed by linear/pack.cc into panels of kLinNR
// output columns (core/linear_layout.h); x and y are float32.
//
// Every engine computes exactly the same float operations in the same order, so results are
// identical bit for bit across engines in a given mode (the kernels are compiled with
// -ffp-contract=off, and every multiply-add is an explicit fused one):
//   - per output (m, n), 16 lane accumulators; lane l takes the K positions k = 16 t + l;
//   - "high"/"medium": acc[l] = fma(w, x, acc[l]) per 16-wide step (bf16 widens exactly);
//   - int8: per block of 32, s = fma(w0, x0, 0); s = fma(w1, x1, s); acc = fma(d, s, acc);
//   - int4: per group, s accumulates q * x (q in 0..15) over the group's 32-blocks (low nibbles
//     then high nibbles), then acc = fma(d, s, acc); the minimums go to one scalar chain per
//     output, mt = fma(min, X, mt) over the groups in order, where X is the group's sum of x (its
//     lane-wise sums, adds in K order, reduced as below), and y = reduce(acc) + mt. (Per lane,
//     the minimum cost two more multiply-adds per 32 weights: on AVX2, where this loop is
//     bound by its vector instructions, 12% of the decode call.)
//   - "high" from exact Q4_1 / Q8_0 blocks (kLinF32Q4 / kLinF32Q8): each 16-lane half of a
//     32-block is rebuilt as w = add(mul(d, q), min) / mul(d, q) (GGUF's dequantiser, so the
//     float32 weights themselves), then acc[l] = fma(w, x, acc[l]) as "high": the same bits;
//   - "high" from float16 bits (kLinF32F16): each weight widened exactly, then as "high";
//   - the 16 lanes reduce as l + (l+8), then + (l+4), + (l+2), + (l+1); the bias is added last.
// Activations stay float32 (weight-only quantisation), except in int8 / int4 prompt rows
// (core/linear_prompt.h: from kLinPromptRows rows, x quantised to int8 on every engine; AMX /
// VNNI on the avx512 engine, core/linear_int-inl.h elsewhere, the same bits).
#include <sched.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "core/engine.h"
#include "core/engine_ns-inl.h"
#include "core/linear_layout.h"
#include "core/linear_prompt.h"
#include "core/memory-inl.h"
#include "runtime/threads.h"
#include "runtime/tuning.h"

namespace kwker {
namespace KWKER_ENGINE_NS {
namespace lin {

#if defined(__AVX512F__)
struct V {
  __m512 v;
  static V zero() { return {_mm512_setzero_ps()}; }
  static V set1(float a) { return {_mm512_set1_ps(a)}; }
  static V load(const float *p) { return {_mm512_loadu_ps(p)}; }
  static V load_bf16(const uint16_t *p) {
    __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return {_mm512_castsi512_ps(_mm512_slli_epi32(w, 16))};
  }
  static V load_f16(const uint16_t *p) {
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)))};
  }
  static V load_i8(const int8_t *p) {
    return {_mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))))};
  }
  // 16 bytes: low nibbles are elements 0..15, high nibbles 16..31.
  static void load_nibbles(const uint8_t *p, V &lo, V &hi) {
    __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    lo.v = _mm512_cvtepi32_ps(_mm512_and_si512(b, _mm512_set1_epi32(15)));
    hi.v = _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4));
  }
  void store(float *p) const { _mm512_storeu_ps(p, v); }
};
inline V fma(V a, V b, V c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline V add(V a, V b) { return {_mm512_add_ps(a.v, b.v)}; }
inline V mul(V a, V b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline float reduce(V a) {
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a.v),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a.v), 1)));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}
#elif defined(__AVX2__)
struct V {
  __m256 a, b;  // lanes 0..7, 8..15
  static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static V set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
  static V load(const float *p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static __m256 widen_bf16(const uint16_t *p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static V load_bf16(const uint16_t *p) { return {widen_bf16(p), widen_bf16(p + 8)}; }
  static V load_f16(const uint16_t *p) {  // F16C: every AVX2 CPU has it (the engine requires it)
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 8)))};
  }
  static __m256 widen_i8(const int8_t *p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))));
  }
  static V load_i8(const int8_t *p) { return {widen_i8(p), widen_i8(p + 8)}; }
  static void load_nibbles(const uint8_t *p, V &lo, V &hi) {
    const __m256i m = _mm256_set1_epi32(15);
    __m256i b0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
    __m256i b1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p + 8)));
    lo.a = _mm256_cvtepi32_ps(_mm256_and_si256(b0, m));
    lo.b = _mm256_cvtepi32_ps(_mm256_and_si256(b1, m));
    hi.a = _mm256_cvtepi32_ps(_mm256_srli_epi32(b0, 4));
    hi.b = _mm256_cvtepi32_ps(_mm256_srli_epi32(b1, 4));
  }
  void store(float *p) const {
    _mm256_storeu_ps(p, a);
    _mm256_storeu_ps(p + 8, b);
  }
};
inline V fma(V x, V y, V z) { return {_mm256_fmadd_ps(x.a, y.a, z.a), _mm256_fmadd_ps(x.b, y.b, z.b)}; }
inline V add(V x, V y) { return {_mm256_add_ps(x.a, y.a), _mm256_add_ps(x.b, y.b)}; }
inline V mul(V x, V y) { return {_mm256_mul_ps(x.a, y.a), _mm256_mul_ps(x.b, y.b)}; }
inline float reduce(V x) {
  __m256 h = _mm256_add_ps(x.a, x.b);
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}
#else
// Portable and sse4.2: the same lanes in scalar code. std::fma is the fused operation (glibc
// uses the FMA instruction where the CPU has one, an exact software routine elsewhere).
struct V {
  float l[kLinLanes];
  static V zero() {
    V r;
    for (int i = 0; i < kLinLanes; ++i) r.l[i] = 0.0f;
    return r;
  }
  static V set1(float a) {
    V r;
    for (int i = 0; i < kLinLanes; ++i) r.l[i] = a;
    return r;
  }
  static V load(const float *p) {
    V r;
    std::memcpy(r.l, p, sizeof(r.l));
    return r;
  }
  static V load_bf16(const uint16_t *p) {
    V r;
    for (int i = 0; i < kLinLanes; ++i) {
      uint32_t b = uint32_t(p[i]) << 16;
      std::memcpy(&r.l[i], &b, 4);
    }
    return r;
  }
  static V load_f16(const uint16_t *p) {
    V r;
    for (int i = 0; i < kLinLanes; ++i) r.l[i] = lin_half_to_float(p[i]);
    return r;
  }
  static V load_i8(const int8_t *p) {
    V r;
    for (int i = 0; i < kLinLanes; ++i) r.l[i] = float(p[i]);
    return r;
  }
  static void load_nibbles(const uint8_t *p, V &lo, V &hi) {
    for (int i = 0; i < kLinLanes; ++i) {
      lo.l[i] = float(p[i] & 15);
      hi.l[i] = float(p[i] >> 4);
    }
  }
  void store(float *p) const { std::memcpy(p, l, sizeof(l)); }
};
inline V fma(V a, V b, V c) {
  V r;
  for (int i = 0; i < kLinLanes; ++i) r.l[i] = std::fma(a.l[i], b.l[i], c.l[i]);
  return r;
}
inline V add(V a, V b) {
  V r;
  for (int i = 0; i < kLinLanes; ++i) r.l[i] = a.l[i] + b.l[i];
  return r;
}
inline V mul(V a, V b) {
  V r;
  for (int i = 0; i < kLinLanes; ++i) r.l[i] = a.l[i] * b.l[i];
  return r;
}
inline float reduce(V a) {
  float h[8], q[4], d[2];
  for (int i = 0; i < 8; ++i) h[i] = a.l[i] + a.l[i + 8];
  for (int i = 0; i < 4; ++i) q[i] = h[i] + h[i + 4];
  for (int i = 0; i < 2; ++i) d[i] = q[i] + q[i + 2];
  return d[0] + d[1];
}
#endif

constexpr int NR = kLinNR;

// A call's float buffer from the scratch cache (64-byte aligned, so every x vector a kernel
// loads is one cache line, and reused between calls: a fresh megabyte per call page-faulted in
// every time, a [256, 1024] x [1024, 1024] prompt call 1.9 -> 2.3 ms with two of them). Where the
// scratch limit refuses it, plain aligned memory: a linear call has no in-place variant to fall
// back to. ptr is null only when that fails too.
struct LinBuffer {
  Scratch<float> cached;
  float *own = nullptr;
  float *ptr;
  explicit LinBuffer(int64_t count) : cached(size_t(count)), ptr(cached.ptr) {
    if (!ptr)
      ptr = own = static_cast<float *>(std::aligned_alloc(64, size_t(lin_round_up(count * 4, 64))));
  }
  ~LinBuffer() { std::free(own); }
  LinBuffer(const LinBuffer &) = delete;
  LinBuffer &operator=(const LinBuffer &) = delete;
};

// Software prefetch of the weight stream ahead of the panel loops. With one row of x the int8 /
// int4 loops issue their loads too slowly for one core's hardware prefetchers to keep enough
// lines in flight (a 2-core Xeon's decode step read int4 weights at 20 GB/s on two threads,
// 32 GB/s asking for the lines 4 KiB ahead; int8 16 -> 37, bf16 19 -> 22 at 1 KiB). 16-bit
// panels (bf16, float16) ask 8 KiB ahead since a 2-vCPU Zen 5 (16 layers 1,024 x 2,816, one
// row, interleaved builds: 42-47 GB/s at 1 KiB, 47-60 at 8 KiB, the same at 16 KiB; one thread
// 3.3 -> 2.3 ms). float32 panels streamed slower with it on the Xeon (29 -> 26 GB/s): none there.
// At one row (the decode step) the lines are asked for as non-temporal: a token's weights then
// leave the caches to what runs between the calls (design.md). Speed only: no arithmetic moves.
// float32 panels ask 8 KiB ahead on AMD only: a 2-vCPU Zen 5 (the same 16 layers, one row, builds
// alternating in 8 pairs of processes) ran them 1.04-1.05x faster with it on avx2 and avx512, one
// thread and two, where the Xeon lost (above).
// AMD without AVX-512 (tune::g_amd_avx2_cpu; measured on a 2-vCPU Zen 3): 16-bit panels 2 KiB
// ahead, float32 panels none. SmolLM2's 121 projections streamed from memory, one row, every
// distance in one process, alternating, 30 passes each, against 8 KiB: float16 2 KiB 1.07x (two
// threads) / 1.10x (one), bfloat16 1.08x / 1.12x, 4 KiB 1.02x, none 0.93-0.99x; float32 none
// 1.10x / 1.12x, 2 KiB 1.01x / 0.99x.
constexpr int64_t kLinPrefetchQuant = 4096, kLinPrefetchBf16 = 8192, kLinPrefetchF32Amd = 8192,
                  kLinPrefetch16AmdAvx2 = 2048;

// Whether a call of m rows asks for its weights as non-temporal (prefetch_ahead's once): at one
// row, except on Intel. On a 2-vCPU Xeon with AMX (family 6 model 167, 480 MB of L3; 2026-12-07)
// `prefetchnta` ran the decode 2.6-4x slower than `prefetcht0` at the same distances: 16 layers
// of 1,024 x 2,816, one row, median ms, one / two threads: float16 13.8-14.6 / 7.6-8.0 against
// 3.6-6.1 / 1.9-2.0, bfloat16 12.8-13.5 / 7.0-7.6 against 3.7-5.9 / 1.9-2.0, int8 7.9-8.0 /
// 4.2-4.6 against 2.3-2.6 / 1.3-1.4, int4 5.5-5.6 / 3.1-3.2 against 2.1-2.3 / 1.2-1.2 (no software
// prefetch: in between; the VM has no performance counters to say which cache level lost the
// lines).
inline bool lin_stream_once(int64_t m) { return m == 1 && !tune::g_intel_cpu; }

// One panel (NR columns) for MR rows. xs[i] is row i padded to kp; sums[i] its int4 group sums.
// float32, bf16 and float16 panels differ only in how a vector of weights is loaded.
struct Half {  // a float16 weight's bits (high_f16), a type of its own for load_weights
  uint16_t bits;
};
inline V load_weights(const float *w) { return V::load(w); }
inline V load_weights(const uint16_t *w) { return V::load_bf16(w); }
inline V load_weights(const Half *w) { return V::load_f16(&w->bits); }

template <int MR, class W, int64_t kAhead>
void panel_dense(const float *const *xs, const uint8_t *panel, int64_t kp, float (*out)[NR],
                 bool once) {
  const W *w = reinterpret_cast<const W *>(panel);
  V acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = V::zero();
  for (int64_t k = 0; k < kp; k += kLinLanes, w += NR * kLinLanes) {
    prefetch_ahead<kAhead>(w, NR * kLinLanes * sizeof(W), once);
    V xv[MR];
    for (int i = 0; i < MR; ++i) xv[i] = V::load(xs[i] + k);
    for (int j = 0; j < NR; ++j) {
      V wv = load_weights(w + j * kLinLanes);
      for (int i = 0; i < MR; ++i) acc[i][j] = fma(wv, xv[i], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) out[i][j] = reduce(acc[i][j]);
}

template <int MR>
void panel_f32(const float *const *xs, const uint8_t *panel, int64_t kp, float (*out)[NR],
               bool once) {
  if (tune::g_intel_cpu || tune::g_amd_avx2_cpu) panel_dense<MR, float, 0>(xs, panel, kp, out, once);
  else panel_dense<MR, float, kLinPrefetchF32Amd>(xs, panel, kp, out, once);
}

template <int MR>
void panel_bf16(const float *const *xs, const uint8_t *panel, int64_t kp, float (*out)[NR],
                bool once) {
  if (tune::g_amd_avx2_cpu) panel_dense<MR, uint16_t, kLinPrefetch16AmdAvx2>(xs, panel, kp, out, once);
  else panel_dense<MR, uint16_t, kLinPrefetchBf16>(xs, panel, kp, out, once);
}

template <int MR>
void panel_f16(const float *const *xs, const uint8_t *panel, int64_t kp, float (*out)[NR],
               bool once) {
  if (tune::g_amd_avx2_cpu) panel_dense<MR, Half, kLinPrefetch16AmdAvx2>(xs, panel, kp, out, once);
  else panel_dense<MR, Half, kLinPrefetchBf16>(xs, panel, kp, out, once);
}

template <int MR>
void panel_q8(const float *const *xs, const uint8_t *panel, int64_t kp, float (*out)[NR],
              bool once) {
  V acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = V::zero();
  const uint8_t *p = panel;
  for (int64_t k = 0; k < kp; k += kLinQ8Block, p += kLinQ8PanelBlockBytes) {
    prefetch_ahead<kLinPrefetchQuant>(p, kLinQ8PanelBlockBytes, once);
    float scale[NR];
    std::memcpy(scale, p, sizeof(scale));
    const int8_t *q = reinterpret_cast<const int8_t *>(p + NR * 4);
    V x0[MR], x1[MR];
    for (int i = 0; i < MR; ++i) {
      x0[i] = V::load(xs[i] + k);
      x1[i] = V::load(xs[i] + k + kLinLanes);
    }
    for (int j = 0; j < NR; ++j) {
      V w0 = V::load_i8(q + j * kLinQ8Block), w1 = V::load_i8(q + j * kLinQ8Block + kLinLanes);
      V d = V::set1(scale[j]);
      for (int i = 0; i < MR; ++i) {
        V s = fma(w0, x0[i], V::zero());
        s = fma(w1, x1[i], s);
        acc[i][j] = fma(d, s, acc[i][j]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) out[i][j] = reduce(acc[i][j]);
}

// int4's minimum term of one row's NR outputs: t[j] = fma(min[j], X, t[j]) per group, one
// 4-lane multiply-add where the engine has one.
static_assert(NR == 4, "MinTerm holds one 128-bit vector of outputs");
#if defined(__AVX512F__) || defined(__AVX2__)
struct MinTerm {
  __m128 t = _mm_setzero_ps();
  void add(const float *mins, float x) { t = _mm_fmadd_ps(_mm_loadu_ps(mins), _mm_set1_ps(x), t); }
  void store(float *out) const { _mm_storeu_ps(out, t); }
};
#else
struct MinTerm {
  float t[NR] = {};
  void add(const float *mins, float x) {
    for (int j = 0; j < NR; ++j) t[j] = std::fma(mins[j], x, t[j]);
  }
  void store(float *out) const { std::memcpy(out, t, sizeof(t)); }
};
#endif

#if defined(__AVX512F__) || defined(__AVX2__)
// The scales and minimums of an int4 group header at gp as 4 lanes (Q40: float16 scales widened
// by F16C, min = -8 d: the values lin_int4_scales gives, so the same bits after).
template <bool Q40>
inline void int4_header4(const uint8_t *gp, __m128 &sc, __m128 &mn) {
  if constexpr (Q40) {
    sc = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(gp)));
    mn = _mm_mul_ps(sc, _mm_set1_ps(-8.0f));
  } else {
    sc = _mm_loadu_ps(reinterpret_cast<const float *>(gp));
    mn = _mm_loadu_ps(reinterpret_cast<const float *>(gp + NR * 4));
  }
}
#endif

// An int4 group header's scales and minimums into arrays (lin_int4_scales; F16C where the engine
// has it).
template <bool Q40>
inline void int4_scales(const uint8_t *gp, float *scale, float *mins) {
#if defined(__AVX512F__) || defined(__AVX2__)
  __m128 sc, mn;
  int4_header4<Q40>(gp, sc, mn);
  _mm_storeu_ps(scale, sc);
  _mm_storeu_ps(mins, mn);
#else
  lin_int4_scales(gp, Q40, scale, mins);
#endif
}

// GS: the group size when known at compile time (32, the GGUF size), 0 for any multiple of 32.
// Q40: the Q4_0 layout (group 32). sums[i][g]: row i's sum of x over group g (linear_run).
template <int MR, int GS, bool Q40 = false>
void panel_q4(const float *const *xs, const float *const *sums, const uint8_t *panel,
              int64_t kp, int64_t group_rt, float (*out)[NR], bool once) {
  static_assert(!Q40 || GS == kLinQ8Block, "the Q4_0 layout has groups of 32");
  const int64_t group = GS ? GS : group_rt;
  constexpr int64_t hdr = lin_int4_header(Q40);
  V acc[MR][NR];
  MinTerm mt[MR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = V::zero();
  const int64_t qbytes = group / 2;
  const uint8_t *p = panel;
  for (int64_t g0 = 0, gi = 0; g0 < kp; g0 += group, ++gi) {
    prefetch_ahead<kLinPrefetchQuant>(p, hdr + NR * qbytes, once);
    float scale[NR], mins[NR];
    int4_scales<Q40>(p, scale, mins);
    const uint8_t *q = p + hdr;
    V s[MR][NR];
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) s[i][j] = V::zero();
    for (int64_t b = 0; b < group; b += kLinQ8Block) {
      V x0[MR], x1[MR];
      for (int i = 0; i < MR; ++i) {
        x0[i] = V::load(xs[i] + g0 + b);
        x1[i] = V::load(xs[i] + g0 + b + kLinLanes);
      }
      for (int j = 0; j < NR; ++j) {
        V lo, hi;
        V::load_nibbles(q + j * qbytes + b / 2, lo, hi);
        for (int i = 0; i < MR; ++i) {
          s[i][j] = fma(lo, x0[i], s[i][j]);
          s[i][j] = fma(hi, x1[i], s[i][j]);
        }
      }
    }
    for (int j = 0; j < NR; ++j) {
      V d = V::set1(scale[j]);
      for (int i = 0; i < MR; ++i) acc[i][j] = fma(d, s[i][j], acc[i][j]);
    }
    for (int i = 0; i < MR; ++i) mt[i].add(mins, sums[i][gi]);
    p += hdr + NR * qbytes;
  }
  for (int i = 0; i < MR; ++i) {
    float m[NR];
    mt[i].store(m);
    for (int j = 0; j < NR; ++j) out[i][j] = reduce(acc[i][j]) + m[j];
  }
}

// The two 16-lane halves of 32-block b of column j, rebuilt exactly (exact-block "high" modes).
// panel points at the panel; the layouts are int4's with group 32 and int8's.
template <int MODE>
inline void exact_halves(const uint8_t *panel, int64_t b, int j, V &w0, V &w1) {
  if constexpr (MODE == kLinF32Q4) {
    const uint8_t *p = panel + b * (NR * 8 + NR * 16);
    float d, mn;
    std::memcpy(&d, p + j * 4, 4);
    std::memcpy(&mn, p + NR * 4 + j * 4, 4);
    V lo, hi;
    V::load_nibbles(p + NR * 8 + j * 16, lo, hi);
    const V dv = V::set1(d), mv = V::set1(mn);
    w0 = add(mul(dv, lo), mv);
    w1 = add(mul(dv, hi), mv);
  } else {
    const uint8_t *p = panel + b * kLinQ8PanelBlockBytes;
    float d;
    std::memcpy(&d, p + j * 4, 4);
    const int8_t *q = reinterpret_cast<const int8_t *>(p + NR * 4) + j * kLinQ8Block;
    const V dv = V::set1(d);
    w0 = mul(dv, V::load_i8(q));
    w1 = mul(dv, V::load_i8(q + kLinLanes));
  }
}

template <int MR, int MODE>
void panel_exact(const float *const *xs, const uint8_t *panel, int64_t kp, float (*out)[NR],
                 bool once) {
  constexpr int64_t block_bytes = MODE == kLinF32Q4 ? NR * 8 + NR * 16 : kLinQ8PanelBlockBytes;
  V acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = V::zero();
  for (int64_t k = 0, b = 0; k < kp; k += kLinQ8Block, ++b) {
    prefetch_ahead<kLinPrefetchQuant>(panel + b * block_bytes, block_bytes, once);
    V x0[MR], x1[MR];
    for (int i = 0; i < MR; ++i) {
      x0[i] = V::load(xs[i] + k);
      x1[i] = V::load(xs[i] + k + kLinLanes);
    }
    for (int j = 0; j < NR; ++j) {
      V w0, w1;
      exact_halves<MODE>(panel, b, j, w0, w1);
      for (int i = 0; i < MR; ++i) {
        acc[i][j] = fma(w0, x0[i], acc[i][j]);
        acc[i][j] = fma(w1, x1[i], acc[i][j]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) out[i][j] = reduce(acc[i][j]);
}

// ---- Prompt rows (m >= kLinPromptRows) in "high" and "medium": one fused multiply-add chain
// per output over k in order, y = (((w0 x0 + 0) + w1 x1) + ...) + bias, the same on every
// engine. Vectorised across rows: x is transposed once into slabs of 16 rows (PJob::xt), each
// weight is broadcast from its panel, so no horizontal sums are needed and a block of RV x 16
// rows by NC columns keeps RV * NC accumulators in registers (the block shape changes only the
// speed: 32 zmm registers hold 3 x 8 accumulators beside 3 x vectors and a broadcast weight,
// 3-5% faster than 2 x 8 on the Xeon with AMX, whose broadcast loads it cuts from 1/2 to 1/3 per
// FMA).
// AVX2: groups of 12 columns, run as two blocks of 6 (12 accumulators beside 2 x vectors and a
// broadcast weight: 15 of the 16 registers). 1 x 4 kept 8 FMA chains in flight, just the
// latency of two FMA pipes, and streamed x three times per 12 columns.
#if defined(__AVX512F__)
constexpr int kPromptRV = 3, kPromptNC = 8, kPromptNB = 8;
#elif defined(__AVX2__)
constexpr int kPromptRV = 1, kPromptNC = 12, kPromptNB = 6;
#else
constexpr int kPromptRV = 1, kPromptNC = 4, kPromptNB = 4;
#endif
static_assert(kPromptNB == kPromptNC || 2 * kPromptNB == kPromptNC, "a group is one or two blocks");

inline float widen(float w) { return w; }

// A panel's work for the thread count: its bytes, or for the exact-block modes (fewer bytes, but
// every weight rebuilt and multiplied as in "high") those of its float32 panel.
inline int64_t work_panel_bytes(int mode, int64_t kp, int64_t group) {
  return lin_panel_bytes(lin_rebuilds(mode) ? kLinF32 : mode, kp, group);
}

struct PJob {
  int mode;
  int64_t m, mpad, n, k, kp, panel_bytes, npanels, ngroups;
  const float *x;   // the input rows, m x k
  float *xt;        // slabs of 16 rows: xt[(row / 16) * k * 16 + c * 16 + row % 16]
  int nbands;       // row bands (one per thread, or 1: the threads then share the columns)
  int64_t chunks, kc;  // K chunks (prompt_chunks) and their length
  float *part;      // K-chunk partial sums between chunks (mpad x npanels * NR), slab layout:
                    // part[((row / 16) * ncols + col) * 16 + row % 16]; null with one chunk
  const uint8_t *packed;
  const float *bias;
  float *y;
  int ntasks;
  float *rebuilt;   // exact-block modes: ntasks buffers of kPromptNC x kp floats
  int32_t *sync;    // prompt_task's per-band states and counters and per-group chunk counts
  static constexpr int kLine = 16;  // int32s per cache line
};

#if defined(__AVX512F__)
// a[c] holds column c of 16 rows; writes the 16 rows of 8 outputs (+ bias[c], one rounding, as
// the scalar path) at y, y + ld, ... Transposed in registers: the scalar path's 128 loads and
// stores per 16 rows were 6-8% of a K = 1,024 call on the Xeon with AMX.
inline void store_rows8(const __m512 a[8], float *y, int64_t ld, const float *bias) {
  __m512 t[8], u[8];
  for (int i = 0; i < 4; ++i) {  // pairs of columns interleaved: lane L = rows 4L..4L+3
    t[2 * i] = _mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // u[4h + j]: in lane L, row 4L + j, columns 4h..4h+3
    const __m512d x0 = _mm512_castps_pd(t[4 * h]), x1 = _mm512_castps_pd(t[4 * h + 1]);
    const __m512d x2 = _mm512_castps_pd(t[4 * h + 2]), x3 = _mm512_castps_pd(t[4 * h + 3]);
    u[4 * h + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(x0, x2));
    u[4 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x0, x2));
    u[4 * h + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(x1, x3));
    u[4 * h + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(x1, x3));
  }
  // Rows j and 4 + j (lanes 0, 1), 8 + j and 12 + j (lanes 2, 3): each row's two halves side by side.
  const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  __m512 b = _mm512_setzero_ps();
  if (bias) b = _mm512_broadcast_f32x8(_mm256_loadu_ps(bias));
  for (int j = 0; j < 4; ++j) {
    __m512 p = _mm512_permutex2var_ps(u[j], lo, u[4 + j]), q = _mm512_permutex2var_ps(u[j], hi, u[4 + j]);
    if (bias) {
      p = _mm512_add_ps(p, b);
      q = _mm512_add_ps(q, b);
    }
    _mm256_storeu_ps(y + j * ld, _mm512_castps512_ps256(p));
    _mm256_storeu_ps(y + (4 + j) * ld, _mm512_extractf32x8_ps(p, 1));
    _mm256_storeu_ps(y + (8 + j) * ld, _mm512_castps512_ps256(q));
    _mm256_storeu_ps(y + (12 + j) * ld, _mm512_extractf32x8_ps(q, 1));
  }
}
#endif

#if defined(__AVX2__) && !defined(__AVX512F__)
// a[c] (c < NC <= 8) holds column c of 8 rows; writes those rows' NC outputs (+ bias[c], one
// rounding, as the scalar path) at y, y + ld, ...: an 8 x 8 transpose in registers and a 16- and
// an 8-byte store per row. Through a buffer with scalar loads and stores, the outputs were about
// 3% of a prompt call of 256 x 576 -> 1,536 on one thread (2-vCPU AMD EPYC Zen 3).
template <int NC>
inline void store_rows_nc(const __m256 *a, float *y, int64_t ld, const float *bias) {
  static_assert(NC == 4 || NC == 6 || NC == 8, "16 + 8 (+ 8) bytes per row");
  __m256 r[8], t[8];
  for (int c = 0; c < 8; ++c) r[c] = c < NC ? a[c] : _mm256_setzero_ps();
  for (int c = 0; c < 8; c += 2) {
    t[c] = _mm256_unpacklo_ps(r[c], r[c + 1]);
    t[c + 1] = _mm256_unpackhi_ps(r[c], r[c + 1]);
  }
  for (int h = 0; h < 8; h += 4) {  // r[h + j]: in each 128-bit lane, a row's columns h..h+3
    r[h + 0] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
    r[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
    r[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
    r[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
  }
  alignas(32) float b8[8] = {};
  if (bias) std::memcpy(b8, bias, sizeof(float) * NC);
  const __m256 b = _mm256_load_ps(b8);
  for (int i = 0; i < 8; ++i) {  // row i: lane i / 4 of r[i % 4] (columns 0-3), of r[4 + i % 4]
    __m256 row = _mm256_permute2f128_ps(r[i % 4], r[4 + i % 4], i < 4 ? 0x20 : 0x31);
    if (bias) row = _mm256_add_ps(row, b);
    float *yr = y + i * ld;
    if constexpr (NC == 8) {
      _mm256_storeu_ps(yr, row);
    } else {
      _mm_storeu_ps(yr, _mm256_castps256_ps128(row));
      if constexpr (NC == 6) _mm_storel_pi(reinterpret_cast<__m64 *>(yr + 4), _mm256_extractf128_ps(row, 1));
    }
  }
}
#endif

// Rows [r0, r0 + RV * 16) x columns of panels p0.. over k in [kb, ke): the accumulators start
// at 0 (kb == 0) or at the partial sums the previous K chunk left in jb.part (exact floats, so
// the chain is the same as one pass; whole vectors, where writing them to y and back row by row
// cost about 4% of a K = 1,024 call), and the last chunk writes y and adds the bias.
// base is panel p0's weights and pstride the bytes between panels: the packed buffer, or the
// exact-block modes' float32 panels rebuilt for this column group (prompt_rows).
// CO: the block's first column within the group (a group of kPromptNC columns runs as blocks of
// kPromptNB).
template <int RV, int NC, class W, int CO = 0>
void prompt_block(const PJob &jb, int64_t r0, int64_t p0, int64_t kb, int64_t ke,
                  const uint8_t *base, int64_t pstride, int64_t pf_next = 0) {
  const W *col[NC];
  for (int c = 0; c < NC; ++c)
    col[c] = reinterpret_cast<const W *>(base + ((CO + c) / NR) * pstride) +
             ((CO + c) % NR) * kLinLanes;
  V acc[RV][NC];
  if (kb == 0) {
    for (int r = 0; r < RV; ++r)
      for (int c = 0; c < NC; ++c) acc[r][c] = V::zero();
  } else {  // the previous chunk's partial sums, exact floats, as whole vectors
    const int64_t ncols = jb.npanels * NR, c0 = p0 * NR + CO;
    for (int r = 0; r < RV; ++r)
      for (int c = 0; c < NC; ++c)
        acc[r][c] = V::load(jb.part + ((r0 / kLinLanes + r) * ncols + c0 + c) * kLinLanes);
  }
  for (int64_t k0 = kb; k0 < ke; k0 += kLinLanes) {
    const int64_t step = (k0 / kLinLanes) * NR * kLinLanes;
    const int lmax = int(ke - k0 < kLinLanes ? ke - k0 : kLinLanes);
    if (pf_next)  // the next column group's lines of this k step, into L2 (see prompt_rows)
      for (int q = (CO + NR - 1) / NR; q <= (CO + NC - 1) / NR; ++q)  // each panel once
        for (int b = 0; b < NR * kLinLanes * int(sizeof(W)); b += 64)
          __builtin_prefetch(base + q * pstride + step * int64_t(sizeof(W)) + pf_next + b, 0, 2);
    for (int l = 0; l < lmax; ++l) {
      const float *xk = jb.xt + r0 * jb.k + (k0 + l) * kLinLanes;
      V xv[RV];
      for (int r = 0; r < RV; ++r) xv[r] = V::load(xk + r * kLinLanes * jb.k);
      for (int c = 0; c < NC; ++c) {
        const V w = V::set1(widen(col[c][step + l]));
        for (int r = 0; r < RV; ++r) acc[r][c] = fma(w, xv[r], acc[r][c]);
      }
    }
  }
  const bool last = ke == jb.k;
  if (!last) {  // the next chunk goes on from these sums
    const int64_t ncols = jb.npanels * NR, c0 = p0 * NR + CO;
    for (int r = 0; r < RV; ++r)
      for (int c = 0; c < NC; ++c)
        acc[r][c].store(jb.part + ((r0 / kLinLanes + r) * ncols + c0 + c) * kLinLanes);
    return;
  }
  const int64_t c0 = p0 * NR + CO;
#if defined(__AVX512F__)
  if constexpr (NC == 8) {
    if (c0 + NC <= jb.n && r0 + RV * kLinLanes <= jb.m) {
      for (int r = 0; r < RV; ++r) {
        __m512 a[8];
        for (int c = 0; c < 8; ++c) a[c] = acc[r][c].v;
        store_rows8(a, jb.y + (r0 + r * kLinLanes) * jb.n + c0, jb.n, jb.bias ? jb.bias + c0 : nullptr);
      }
      return;
    }
  }
#elif defined(__AVX2__)
  if constexpr (NC == 4 || NC == 6 || NC == 8) {
    if (c0 + NC <= jb.n && r0 + RV * kLinLanes <= jb.m) {
      for (int r = 0; r < RV; ++r)
        for (int h = 0; h < 2; ++h) {
          __m256 a[NC];
          for (int c = 0; c < NC; ++c) a[c] = h ? acc[r][c].b : acc[r][c].a;
          store_rows_nc<NC>(a, jb.y + (r0 + r * kLinLanes + 8 * h) * jb.n + c0, jb.n,
                            jb.bias ? jb.bias + c0 : nullptr);
        }
      return;
    }
  }
#endif
  // Out through a small transposed buffer, so each row's NC outputs are written side by side.
  float t[NC][RV * kLinLanes];
  for (int c = 0; c < NC; ++c)
    for (int r = 0; r < RV; ++r) acc[r][c].store(t[c] + r * kLinLanes);
  const int nc = int(jb.n - c0 < NC ? jb.n - c0 : NC);
  for (int i = 0; i < RV * kLinLanes; ++i) {
    const int64_t row = r0 + i;
    if (row >= jb.m) break;
    float *yr = jb.y + row * jb.n + c0;
    if (jb.bias)
      for (int c = 0; c < nc; ++c) yr[c] = t[c][i] + jb.bias[c0 + c];
    else
      for (int c = 0; c < nc; ++c) yr[c] = t[c][i];
  }
}

// K in equal chunks of at most kPromptKC, so a column group's weights (8 columns x 768 floats,
// 24 KB) stay in L1 while the rows stream by.
constexpr int64_t kPromptKC = 768;
inline int64_t prompt_chunks(int64_t k) { return (k + kPromptKC - 1) / kPromptKC; }

#if defined(__AVX512F__)
// 16 x 16 floats: src rows of stride ld -> dst[c * 16 + r] (16 contiguous vectors).
inline void transpose16(const float *src, int64_t ld, float *dst) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * ld);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    for (int j = 0; j < 2; ++j) {
      r[i + j] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + j]), _mm512_castps_pd(t[i + j + 2])));
      r[i + j + 2] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + j]), _mm512_castps_pd(t[i + j + 2])));
    }
  }
  for (int i = 0; i < 8; ++i) {
    const int a = (i / 4) * 8 + i % 4;  // rows a (of 0-3 / 8-11) and a + 4
    t[a] = _mm512_shuffle_f32x4(r[a], r[a + 4], 0x88);
    t[a + 4] = _mm512_shuffle_f32x4(r[a], r[a + 4], 0xDD);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
  }
  // r[i] now holds rows 0..15 of column kCol[i] (the unpacks leave columns 1 and 2 swapped).
  static const int kCol[16] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + kCol[i] * 16, r[i]);
}
#elif defined(__AVX2__)
// 8 x 8 floats: src rows of stride ld -> dst[c * 16 + r] (column c of the 8 rows as one vector,
// 16 floats apart: half of a slab's column). In place of the element-by-element transpose, a
// 256 x 576 -> 192 prompt call on two threads ran 1.07x faster (AMD Zen 3; the larger shapes
// 1.00-1.03x).
inline void transpose8_half(const float *src, int64_t ld, float *dst) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ld);
  for (int i = 0; i < 8; i += 2) {  // in each 128-bit lane: rows i, i + 1 interleaved
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int h = 0; h < 8; h += 4) {  // r[h + j]: rows h..h+3 of columns j (low lane), 4 + j (high)
    r[h + 0] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
    r[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
    r[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
    r[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(dst + j * 16, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
    _mm256_storeu_ps(dst + (4 + j) * 16, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
  }
}
#endif

// Slab s of x (rows 16 s .. 16 s + 15) into jb.xt, so a block streams its x front to back;
// rows past m are 0.
inline void transpose_slab(const PJob &jb, int64_t s) {
  const int64_t r0 = s * kLinLanes, k = jb.k, m = jb.m;
  const float *x = jb.x;
  float *slab = jb.xt + r0 * k;
  int64_t c0 = 0;
#if defined(__AVX512F__)
  if (r0 + kLinLanes <= m)
    for (; c0 + 16 <= k; c0 += 16) transpose16(x + r0 * k + c0, k, slab + c0 * kLinLanes);
#elif defined(__AVX2__)
  if (r0 + kLinLanes <= m)
    for (; c0 + 8 <= k; c0 += 8) {
      transpose8_half(x + r0 * k + c0, k, slab + c0 * kLinLanes);
      transpose8_half(x + (r0 + 8) * k + c0, k, slab + c0 * kLinLanes + 8);
    }
#endif
  for (; c0 < k; c0 += 16) {
    const int64_t c1 = c0 + 16 < k ? c0 + 16 : k;
    for (int64_t r = r0; r < r0 + kLinLanes; ++r)
      for (int64_t c = c0; c < c1; ++c) slab[c * kLinLanes + (r - r0)] = r < m ? x[r * k + c] : 0.0f;
  }
}

// Exact-block modes: the float32 weights of panels [p0, p1) over k in [kb, ke) (multiples of
// 16), rebuilt into float32 panels (dst, panel stride NR * kp floats) as the decode kernel
// rebuilds them, so the prompt's chains read the same weights as "high".
template <int MODE>
void rebuild_panels(const PJob &jb, int64_t p0, int64_t p1, int64_t kb, int64_t ke, float *dst) {
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t *panel = jb.packed + p * jb.panel_bytes;
    float *out = dst + (p - p0) * NR * jb.kp;
    for (int64_t b = kb / kLinQ8Block; b * kLinQ8Block < ke; ++b) {
      const int64_t s0 = 2 * b, s1 = 2 * b + 1;  // the block's two 16-wide K steps
      for (int j = 0; j < NR; ++j) {
        V w0, w1;
        exact_halves<MODE>(panel, b, j, w0, w1);
        if (s0 * kLinLanes >= kb) w0.store(out + (s0 * NR + j) * kLinLanes);
        if (s1 * kLinLanes < ke) w1.store(out + (s1 * NR + j) * kLinLanes);
      }
    }
  }
}

// The 16-bit modes (medium, high_f16): the float32 weights of panels [p0, p1) over k in [kb, ke),
// widened exactly into float32 panels as rebuild_panels does for the exact-block modes. The
// prompt kernel broadcasts one weight per multiply-add on AVX2 (a 16-bit one cost a load, a
// shift or conversion and a move besides): widened once per column group and K chunk for all
// of a task's rows, "medium" prompts of 256 x 576 -> 1536 went from 1.18x "high"'s time (2
// threads, AVX2 engine, Zen 4) to 1.03x (one thread: 4.89 vs 4.74 ms; avx512 engine 1.03x).
template <bool F16>
void rebuild_panels_16(const PJob &jb, int64_t p0, int64_t p1, int64_t kb, int64_t ke, float *dst) {
  for (int64_t p = p0; p < p1; ++p) {
    const uint16_t *panel = reinterpret_cast<const uint16_t *>(jb.packed + p * jb.panel_bytes);
    float *out = dst + (p - p0) * NR * jb.kp;
    for (int64_t s = kb / kLinLanes; s * kLinLanes < ke; ++s)
      for (int j = 0; j < NR; ++j) {
        const int64_t at = (s * NR + j) * kLinLanes;
        (F16 ? V::load_f16(panel + at) : V::load_bf16(panel + at)).store(out + at);
      }
  }
}

// Prompt calls whose kernels run on float32 panels rebuilt per column group: the exact-block
// and float16 "high" storages and "medium".
inline bool prompt_rebuilds(int mode) { return lin_rebuilds(mode) || mode == kLinBF16; }

// Slabs [s0, s1) by column group g over k in [kb, ke). AVX-512: blocks of 3 slabs, the last 1-4
// slabs as 2 + 2, 2 or 1 (a block of RV slabs keeps RV x 8 accumulators; 2 x 8 runs nearer 3 x
// 8's speed than 1 x 8, whose 8 chains barely cover the FMA latency); AVX2: one slab at a time.
// rebuilt: the exact-block, float16 and bf16 modes' buffer for one column group's float32 panels
// (else null).
template <class W>
void prompt_unit(const PJob &jb, int64_t s0, int64_t s1, int64_t kb, int64_t ke, int64_t g,
                 float *rebuilt) {
  constexpr int PG = kPromptNC / NR;  // panels per column group
  const int64_t p0 = g * PG;
  const bool full = p0 + PG <= jb.npanels;
  const uint8_t *base = jb.packed + p0 * jb.panel_bytes;
  int64_t pstride = jb.panel_bytes;
  if (rebuilt) {  // once per group and K chunk, for every slab of the band
    const int64_t p1 = full ? p0 + PG : jb.npanels;
    if (jb.mode == kLinF32Q4) rebuild_panels<kLinF32Q4>(jb, p0, p1, kb, ke, rebuilt);
    else if (jb.mode == kLinF32Q8) rebuild_panels<kLinF32Q8>(jb, p0, p1, kb, ke, rebuilt);
    else if (jb.mode == kLinF32F16) rebuild_panels_16<true>(jb, p0, p1, kb, ke, rebuilt);
    else rebuild_panels_16<false>(jb, p0, p1, kb, ke, rebuilt);
    base = reinterpret_cast<const uint8_t *>(rebuilt);
    pstride = NR * jb.kp * int64_t(sizeof(float));
  }
  // The group's first block asks for the next group's weights (kPromptNC / NR panels on) into
  // L2: in a model's prefill they come from memory, and each band streams all of them;
  // SmolLM2's gate / up calls went from 2.0 to 1.7 ms with it. (Not from a rebuilt buffer: the
  // next group is not there.)
  const int64_t pf = !rebuilt && p0 + 2 * PG <= jb.npanels ? PG * jb.panel_bytes : 0;
  auto block = [&](auto rv, int64_t r0, int64_t f) {  // rv: std::integral_constant
    constexpr int R = decltype(rv)::value;
    if (!full) {
      prompt_block<R, NR, W>(jb, r0, p0, kb, ke, base, pstride);
    } else if constexpr (kPromptNB == kPromptNC) {
      prompt_block<R, kPromptNC, W>(jb, r0, p0, kb, ke, base, pstride, f);
    } else {
      prompt_block<R, kPromptNB, W>(jb, r0, p0, kb, ke, base, pstride, f);
      prompt_block<R, kPromptNB, W, kPromptNB>(jb, r0, p0, kb, ke, base, pstride, f);
    }
  };
  for (int64_t s = s0; s < s1;) {
    const int64_t left = s1 - s, r0 = s * kLinLanes, f = s == s0 ? pf : 0;
    int rv = 1;
    if constexpr (kPromptRV >= 3) {
      rv = left >= 5 || left == 3 ? 3 : left >= 2 ? 2 : 1;
      if (rv == 3) block(std::integral_constant<int, 3>(), r0, f);
      if (rv == 2) block(std::integral_constant<int, 2>(), r0, f);
    }
    if (rv == 1) block(std::integral_constant<int, 1>(), r0, f);
    s += rv;
  }
  if (!full)  // the last group's remaining panels, one at a time
    for (int64_t p = p0 + 1; p < jb.npanels; ++p)
      for (int64_t s = s0; s < s1; ++s)
        prompt_block<1, NR, W>(jb, s * kLinLanes, p, kb, ke, base + (p - p0) * pstride, pstride);
}

// Waits until *flag reaches want (acquire). Only ever waits on a thread that is inside a unit
// (transposing a band, or finishing the K chunk before), so the wait ends when that thread runs;
// past a short spin it yields, which hands the CPU to that thread when both share one.
inline void prompt_wait(const int32_t *flag, int32_t want) {
  for (int spin = 0; __atomic_load_n(flag, __ATOMIC_ACQUIRE) < want; ++spin) {
    if (spin < 256) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      sched_yield();
    }
  }
}

// Band b's slabs transposed into jb.xt, once, by whichever thread first takes one of its units.
inline void prompt_band_transposed(const PJob &jb, int b, int64_t s0, int64_t s1) {
  int32_t *state = jb.sync + PJob::kLine * b;  // 0 untouched, 1 being transposed, 2 done
  if (__atomic_load_n(state, __ATOMIC_ACQUIRE) == 2) return;
  int32_t expect = 0;
  if (__atomic_compare_exchange_n(state, &expect, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    for (int64_t s = s0; s < s1; ++s) transpose_slab(jb, s);
    __atomic_store_n(state, 2, __ATOMIC_RELEASE);
    return;
  }
  prompt_wait(state, 2);
}

// Work handed out as threads come free, keeping each band's x in one core's L2 when every thread
// runs. With at least 2 slabs per thread the rows split into one band per thread (each band's x
// transposed by the first thread to reach it, so no serial transpose before the tasks start);
// with fewer rows there is one band, transposed beforehand, and the threads share its columns.
// A band's units are (K chunk, column group) in that order, taken from the band's counter; a
// thread takes its own band's units first, then those left in the other bands. A fixed band per
// thread left the whole call waiting for a preempted thread: beside a busy process, or on a
// 2-vCPU VM whose other vCPU ran at half speed, two threads ran a 256 x 576 -> 1,536 call no
// faster than one (AMD Zen 3; int8's prompt kernels split their strips this way already).
// A unit of K chunk c > 0 waits for the same group's chunk c - 1, whose partial sums it goes on
// from (jb.part); taken in order, that chunk was begun before, so the wait is at most its end.
void prompt_task(void *ctx, int task) {
  const PJob &jb = *static_cast<const PJob *>(ctx);
  float *rebuilt = jb.rebuilt ? jb.rebuilt + int64_t(task) * kPromptNC * jb.kp : nullptr;
  const int64_t nslabs = jb.mpad / kLinLanes, units = jb.chunks * jb.ngroups;
  for (int i = 0; i < jb.nbands; ++i) {
    const int b = (task + i) % jb.nbands;
    const int64_t s0 = nslabs * b / jb.nbands, s1 = nslabs * (b + 1) / jb.nbands;
    int64_t *next = reinterpret_cast<int64_t *>(jb.sync + PJob::kLine * (jb.nbands + b));
    for (;;) {
      const int64_t u = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
      if (u >= units) break;
      const int64_t c = u / jb.ngroups, g = u % jb.ngroups;
      if (jb.nbands > 1) prompt_band_transposed(jb, b, s0, s1);
      int32_t *done = jb.sync + PJob::kLine * 2 * jb.nbands + b * jb.ngroups + g;
      if (c > 0) prompt_wait(done, int32_t(c));
      const int64_t kb = c * jb.kc, ke = kb + jb.kc < jb.k ? kb + jb.kc : jb.k;
      prompt_unit<float>(jb, s0, s1, kb, ke, g, rebuilt);
      __atomic_store_n(done, int32_t(c + 1), __ATOMIC_RELEASE);
    }
  }
}

int prompt_run(CallCtx &ctx, int mode, const float *x, int64_t m, int64_t k, const void *packed,
               int64_t n, int64_t group, const float *bias, float *y) {
  PJob jb;
  jb.mode = mode;
  jb.m = m;
  jb.mpad = lin_round_up(m, kLinLanes);
  jb.n = n;
  jb.k = k;
  jb.kp = lin_padded_k(mode, k, group);
  jb.panel_bytes = lin_panel_bytes(mode, jb.kp, group);
  jb.npanels = (n + NR - 1) / NR;
  jb.ngroups = (jb.npanels + kPromptNC / NR - 1) / (kPromptNC / NR);
  LinBuffer xt_buf(k * jb.mpad);
  if (!xt_buf.ptr) return -1;
  jb.x = x;
  jb.xt = xt_buf.ptr;
  jb.chunks = prompt_chunks(k);
  jb.kc = lin_round_up((k + jb.chunks - 1) / jb.chunks, kLinLanes);
  const bool chunked = jb.chunks > 1;
  LinBuffer part_buf(chunked ? jb.mpad * jb.npanels * NR : 0);
  jb.part = chunked ? part_buf.ptr : nullptr;
  if (chunked && !jb.part) return -1;
  jb.packed = static_cast<const uint8_t *>(packed);
  jb.bias = bias;
  jb.y = y;
  const int64_t nslabs = jb.mpad / kLinLanes;
  jb.ntasks = lin_threads(ctx.threads, work_panel_bytes(mode, jb.kp, group) * jb.npanels * (m / 8),
                          nslabs > jb.ngroups ? nslabs : jb.ngroups);
  jb.nbands = nslabs >= 2 * jb.ntasks ? jb.ntasks : 1;
  LinBuffer rebuilt_buf(prompt_rebuilds(mode) ? int64_t(jb.ntasks) * kPromptNC * jb.kp : 0);
  jb.rebuilt = prompt_rebuilds(mode) ? rebuilt_buf.ptr : nullptr;
  if (prompt_rebuilds(mode) && !jb.rebuilt) return -1;
  // Per band, on lines of their own: its transpose state, then its unit counter; then a
  // finished-chunk count per band and group.
  const size_t sync_ints = size_t(PJob::kLine * 2 * jb.nbands + jb.nbands * jb.ngroups);
  int32_t *sync = static_cast<int32_t *>(std::aligned_alloc(64, lin_round_up(sync_ints * 4, 64)));
  if (!sync) return -1;
  std::memset(sync, 0, sync_ints * 4);
  jb.sync = sync;
  if (jb.nbands == 1)
    for (int64_t s = 0; s < nslabs; ++s) transpose_slab(jb, s);
  ctx.used_threads = jb.ntasks;
  rt::run_parallel_shared(jb.ntasks, jb.ntasks, prompt_task, &jb);
  std::free(sync);
  return 0;
}

struct Job {
  int mode;
  bool q40;  // int4 in the Q4_0 layout
  int64_t m, n, kp, group, panel_bytes, npanels;
  const float *xpad;   // m rows of kp floats
  const float *gsums;  // int4: m rows of kp / group group sums of x
  const uint8_t *packed;
  const float *bias;
  float *y;
  int ntasks;      // threads
  int64_t nchunks; // panel ranges, handed out as threads come free
};

template <int MR>
void rows_panel(const Job &jb, int64_t m0, int64_t p) {
  const float *xs[MR];
  const float *sums[MR];
  const int64_t ng = jb.mode == kLinInt4 ? jb.kp / jb.group : 0;
  for (int i = 0; i < MR; ++i) {
    xs[i] = jb.xpad + (m0 + i) * jb.kp;
    sums[i] = jb.gsums ? jb.gsums + (m0 + i) * ng : nullptr;
  }
  const uint8_t *panel = jb.packed + p * jb.panel_bytes;
  const bool once = lin_stream_once(jb.m);  // the call's only pass over this panel
  float out[MR][NR];
  switch (jb.mode) {
    case kLinF32: panel_f32<MR>(xs, panel, jb.kp, out, once); break;
    case kLinBF16: panel_bf16<MR>(xs, panel, jb.kp, out, once); break;
    case kLinInt8: panel_q8<MR>(xs, panel, jb.kp, out, once); break;
    case kLinF32Q4: panel_exact<MR, kLinF32Q4>(xs, panel, jb.kp, out, once); break;
    case kLinF32Q8: panel_exact<MR, kLinF32Q8>(xs, panel, jb.kp, out, once); break;
    case kLinF32F16: panel_f16<MR>(xs, panel, jb.kp, out, once); break;
    default:
      if (jb.q40) panel_q4<MR, 32, true>(xs, sums, panel, jb.kp, jb.group, out, once);
      else if (jb.group == 32) panel_q4<MR, 32>(xs, sums, panel, jb.kp, jb.group, out, once);
      else panel_q4<MR, 0>(xs, sums, panel, jb.kp, jb.group, out, once);
      break;
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) {
      int64_t col = p * NR + j;
      if (col >= jb.n) break;
      float v = out[i][j];
      if (jb.bias) v = v + jb.bias[col];
      jb.y[(m0 + i) * jb.n + col] = v;
    }
}

void run_task(void *ctx, int task) {
  const Job &jb = *static_cast<const Job *>(ctx);
  const int64_t p0 = jb.npanels * task / jb.nchunks, p1 = jb.npanels * (task + 1) / jb.nchunks;
  // int4 keeps twice the accumulators (group partial sums), so it takes two rows at a time.
  const int64_t mr = jb.mode == kLinInt4 ? 2 : 4;
  for (int64_t p = p0; p < p1; ++p) {
    int64_t m0 = 0;
    for (; m0 + mr <= jb.m; m0 += mr) {
      if (mr == 4) rows_panel<4>(jb, m0, p);
      else rows_panel<2>(jb, m0, p);
    }
    for (; m0 < jb.m; ++m0) rows_panel<1>(jb, m0, p);
  }
}

#include "core/linear_int-inl.h"

// Pads x to kp columns (zeros) and, for int4, computes each group's sum of x (lane-wise adds in
// K order, then reduce: the same float operations on every engine).
// mode may carry the Q4_0 flag (int4 / int4_a8): it is kept as a bool beside the mode.
int linear_run(CallCtx &ctx, int mode, const float *x, int64_t m, int64_t k, const void *packed,
               int64_t n, int64_t group, const float *bias, float *y) {
  const bool q40 = lin_q40(mode);
  const int q40_flag = q40 ? kLinQ4_0 : 0;
  mode = lin_mode(mode);
  // The A8 modes' prompts are int8 / int4's (their decode step quantises x too).
  const int base = lin_base(mode);
#if defined(__AVX512F__)
  // Prompt rows on AMX / VNNI (core/linear_prompt.h); 0 means these kernels take the call.
  if (m >= kLinPromptRows) {
    int rc = linear_prompt_avx512(ctx, base | q40_flag, x, m, k, packed, n, group, bias, y);
    if (rc != 0) return rc < 0 ? -1 : 0;
  }
#endif
  if ((mode == kLinF32 || mode == kLinBF16 || lin_rebuilds(mode)) && m >= kLinPromptRows)
    return prompt_run(ctx, mode, x, m, k, packed, n, group, bias, y);
  if (lin_int_activations(mode, m))
    return intp::run(ctx, base | q40_flag, x, m, k, packed, n, group, bias, y);
  const int64_t kp = lin_padded_k(mode, k, group);
  const int64_t ng = mode == kLinInt4 ? kp / group : 0;
  // Decode-sized (a few KiB): plain aligned memory, reused hot by malloc; 64-byte aligned so
  // each x vector is one cache line.
  float *xpad = static_cast<float *>(std::aligned_alloc(
      64, lin_round_up(int64_t(sizeof(float)) * (m * kp + m * ng + 1), 64)));
  if (!xpad) return -1;
  float *gsums = mode == kLinInt4 ? xpad + m * kp : nullptr;
  for (int64_t r = 0; r < m; ++r) {
    float *dst = xpad + r * kp;
    std::memcpy(dst, x + r * k, sizeof(float) * size_t(k));
    for (int64_t c = k; c < kp; ++c) dst[c] = 0.0f;
    if (gsums) {
      for (int64_t g = 0; g < ng; ++g) {
        V s = V::zero();
        for (int64_t c = g * group; c < (g + 1) * group; c += kLinLanes) s = add(s, V::load(dst + c));
        gsums[r * ng + g] = reduce(s);
      }
    }
  }
  Job jb;
  jb.mode = mode;
  jb.m = m;
  jb.n = n;
  jb.kp = kp;
  jb.q40 = q40;
  jb.group = group;
  jb.panel_bytes = lin_panel_bytes(mode | q40_flag, kp, group);
  jb.npanels = (n + NR - 1) / NR;
  jb.xpad = xpad;
  jb.gsums = gsums;
  jb.packed = static_cast<const uint8_t *>(packed);
  jb.bias = bias;
  jb.y = y;
  const int64_t work = work_panel_bytes(mode, kp, group) * jb.npanels * (m < 8 ? 1 : m / 8);
  jb.ntasks = lin_threads(ctx.threads, work, jb.npanels);
  jb.nchunks = lin_chunks(jb.ntasks, work, jb.npanels);
  ctx.used_threads = jb.ntasks;
  rt::run_parallel_shared(jb.ntasks, int(jb.nchunks), run_task, &jb);
  std::free(xpad);
  return 0;
}

inline const LinearTable &make_linear_table(const char *name) {
  static const LinearTable t = {name, intp::kName, linear_run};
  return t;
}

}  // namespace lin
}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
