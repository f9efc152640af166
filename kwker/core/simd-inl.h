// simd-inl.h: the small per-ISA "vector ops" layer under the vectorised quicksort
// (vqsort-inl.h) and the sorting networks (network-inl.h).
//
// This header is compiled once per engine, each time with different -m flags and a
// different KWKER_ENGINE_NS. Everything here therefore lives in
// kwker::KWKER_ENGINE_NS::vq, so that no inline function or template instantiation
// of one engine can be merged by the linker with another engine's (which could run
// AVX-512 code on a CPU without it). No std templates are instantiated here.
//
// Each Ops<T> provides, for W = lanes per vector:
//   V, W, kUnroll (vectors per partition step), kMaxVecs (vectors in the largest
//   sorting network; the quicksort leaf size is W * kMaxVecs)
//   load/store (unaligned), set1, load_partial/store_partial (first n < W lanes,
//   unread lanes read as the type's maximum), minmax(a, b, mn, mx),
//   perm_xor<M>(v): lane l receives lane l ^ M,
//   cx_lanes<M>(v): compare-exchange lane l with lane l ^ M inside v; of each pair
//     the higher lane takes the maximum,
//   partition_store(v, pivot, wl, wr): writes the lanes <= pivot at wl (advancing it)
//     and the lanes > pivot just below wr (moving it down). It may write garbage
//     anywhere in [wl, wl + W) and [wr - W, wr); the caller guarantees that space
//     is free, or that wr - wl == W exactly (both footprints then coincide and the
//     result is still right).
//   above(v, mask, lim): nonzero when some lane has (lane & mask) > lim (signed), the
//     test the guarded partition (vqsort-inl.h) runs on every vector it loads.
#ifndef KWKER_CORE_SIMD_INL_H_
#define KWKER_CORE_SIMD_INL_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__SSE4_2__)
// GCC 12 reports its own _mm512_undefined_epi32() as "used uninitialized" once the
// AVX-512 intrinsics are inlined (GCC bug 105593, fixed in 13); silence only that.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#ifndef KWKER_ENGINE_NS
#error "KWKER_ENGINE_NS must be defined (n_portable, n_sse42, n_avx2, n_avx512)"
#endif

#define KWKER_VQ_INLINE inline __attribute__((always_inline))

namespace kwker {
namespace KWKER_ENGINE_NS {
namespace vq {

template <class T> struct Limits;
template <> struct Limits<int16_t> {
  static constexpr int16_t kMin = INT16_MIN, kMax = INT16_MAX;
};
template <> struct Limits<int32_t> {
  static constexpr int32_t kMin = INT32_MIN, kMax = INT32_MAX;
};
template <> struct Limits<int64_t> {
  static constexpr int64_t kMin = INT64_MIN, kMax = INT64_MAX;
};
// Float keys (the FOps sorts below): never NaN there, so the infinities bound every key.
template <> struct Limits<float> {
  static constexpr float kMin = -__builtin_inff(), kMax = __builtin_inff();
};
template <> struct Limits<double> {
  static constexpr double kMin = -__builtin_inf(), kMax = __builtin_inf();
};

// The float keys' transposes (FOps below) are the integer ones on the same bits: I is the
// integer register type the transpose takes.
template <size_t N, class V, class I>
KWKER_VQ_INLINE void transpose_bits(V* v, void (*transpose)(I*)) {
  I r[N];
#pragma GCC unroll 16
  for (size_t i = 0; i < N; ++i) r[i] = (I)v[i];
  transpose(r);
#pragma GCC unroll 16
  for (size_t i = 0; i < N; ++i) v[i] = (V)r[i];
}

// Bit mask of the lanes l < lanes with (l & H) != 0: the "upper" lane of every pair
// (l, l ^ M) when H is the highest set bit of M.
constexpr uint32_t upper_lanes(unsigned lanes, unsigned H) {
  uint32_t m = 0;
  for (unsigned l = 0; l < lanes; ++l)
    if (l & H) m |= 1u << l;
  return m;
}
constexpr unsigned highest_bit(unsigned m) {
  unsigned h = 1;
  while (h * 2 <= m) h *= 2;
  return h;
}
// upper_lanes for 64-bit lanes expressed as a 32-bit-lane mask (each lane doubled).
constexpr uint32_t upper_lanes_x2(unsigned lanes, unsigned H) {
  uint32_t m = 0;
  for (unsigned l = 0; l < lanes; ++l)
    if (l & H) m |= 3u << (2 * l);
  return m;
}

// ---------------------------------------------------------------------------
// Scalar "vectors" (W = 1). Used by the portable engine and for int16 everywhere.
// With one lane, partition_store is the branchless "write to both ends" step.
template <class T> struct ScalarOps {
  using V = T;
  using Key = T;
  static constexpr size_t W = 1;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T* p) { return *p; }
  static KWKER_VQ_INLINE void store(T* p, V v) { *p = v; }
  static KWKER_VQ_INLINE V set1(T x) { return x; }
  static KWKER_VQ_INLINE V load_partial(const T* p, size_t) { return *p; }
  static KWKER_VQ_INLINE void store_partial(T* p, V v, size_t) { *p = v; }
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {
    mn = b < a ? b : a;
    mx = b < a ? a : b;
  }
  static KWKER_VQ_INLINE unsigned above(V v, V mask, V lim) { return unsigned((v & mask) > lim); }
  static KWKER_VQ_INLINE void partition_store(V v, V pivot, T*& wl, T*& wr) {
    const size_t gt = v > pivot;
    *wl = v;
    wr[-1] = v;
    wl += 1 - gt;
    wr -= gt;
  }
};

// Compile-time table of "lanes <= pivot first, then lanes > pivot" permutations for
// an 8-lane (AVX2 int32) or 4-lane (AVX2 int64, as pairs of 32-bit lanes) vector,
// packed as eight 4-bit source indices per entry (nibble i = source of lane i).
struct PackedPermTable {
  uint32_t e[256];
};
constexpr PackedPermTable make_perm_table8(unsigned lanes, unsigned scale) {
  PackedPermTable t{};
  for (unsigned m = 0; m < (1u << lanes); ++m) {
    unsigned out = 0;
    uint32_t packed = 0;
    for (int pass = 0; pass < 2; ++pass)
      for (unsigned l = 0; l < lanes; ++l)
        if (((m >> l) & 1u) == unsigned(pass))
          for (unsigned s = 0; s < scale; ++s, ++out)
            packed |= uint32_t(l * scale + s) << (4 * out);
    t.e[m] = packed;
  }
  return t;
}

// Same idea for SSE: a pshufb control per mask, for 4 (int32) or 2 (int64) lanes.
struct ByteShuffleTable {
  uint8_t e[16][16];
};
constexpr ByteShuffleTable make_byte_shuffle_table(unsigned lanes, unsigned bytes) {
  ByteShuffleTable t{};
  for (unsigned m = 0; m < (1u << lanes); ++m) {
    unsigned out = 0;
    for (int pass = 0; pass < 2; ++pass)
      for (unsigned l = 0; l < lanes; ++l)
        if (((m >> l) & 1u) == unsigned(pass))
          for (unsigned b = 0; b < bytes; ++b, ++out) t.e[m][out] = uint8_t(l * bytes + b);
  }
  return t;
}

#if defined(__AVX2__)
// 8 x 8 32-bit and 4 x 4 64-bit transposes of 256-bit registers, in place: the avx2 engine's
// transposed networks (Ops<T>::transpose_square below), and on both engines the columns' blocks
// narrower than a register (core/columns-inl.h).
KWKER_VQ_INLINE void transpose_8x8_epi32(__m256i* r) {
  __m256i t[8], u[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {  // u[4i + j], 128-bit lane q: rows 4i..4i+3 of column 4q + j
    u[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x20);
    r[4 + j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x31);
  }
}
KWKER_VQ_INLINE void transpose_4x4_epi64(__m256i* r) {
  const __m256i t0 = _mm256_unpacklo_epi64(r[0], r[1]), t1 = _mm256_unpackhi_epi64(r[0], r[1]);
  const __m256i t2 = _mm256_unpacklo_epi64(r[2], r[3]), t3 = _mm256_unpackhi_epi64(r[2], r[3]);
  r[0] = _mm256_permute2x128_si256(t0, t2, 0x20);
  r[1] = _mm256_permute2x128_si256(t1, t3, 0x20);
  r[2] = _mm256_permute2x128_si256(t0, t2, 0x31);
  r[3] = _mm256_permute2x128_si256(t1, t3, 0x31);
}
#endif

#if defined(__AVX512F__)
// ---------------------------------------------------------------------------
// AVX-512: native min/max, compare into mask registers, compress into registers.
// (Compress straight to memory is microcoded and slow on Zen 4, so the left side is a
// full store of the compressed register and the right side a masked store.)

// For 8 lanes: per mask of lanes > pivot, the source lane of each output lane, one byte each:
// the lanes <= pivot in order, then the others in order.
struct ByteIndexTable {
  uint64_t e[256];
};
constexpr ByteIndexTable make_split_table8() {
  ByteIndexTable t{};
  for (unsigned m = 0; m < 256; ++m) {
    unsigned out = 0;
    uint64_t packed = 0;
    for (int pass = 0; pass < 2; ++pass)
      for (unsigned l = 0; l < 8; ++l)
        if (((m >> l) & 1u) == unsigned(pass)) packed |= uint64_t(l) << (8 * out++);
    t.e[m] = packed;
  }
  return t;
}
alignas(64) constexpr ByteIndexTable kSplit64x8 = make_split_table8();

template <class T> struct Ops;

// In-place transposes of a square of registers, for the transposed networks of network-inl.h:
// 16 x 16 32-bit lanes and 8 x 8 64-bit lanes. Unpacks make 4 x 4 (2 x 2) blocks inside each
// 128-bit lane, then two rounds of 128-bit lane shuffles gather the blocks of one column.
KWKER_VQ_INLINE void transpose_16x16_epi32(__m512i* r) {
  __m512i t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // u[4i + j], 128-bit lane q: rows 4i..4i+3 of column 4q + j
    u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512i s0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);
    const __m512i s1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);
    const __m512i s2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
    const __m512i s3 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
    r[j] = _mm512_shuffle_i32x4(s0, s2, 0x88);
    r[4 + j] = _mm512_shuffle_i32x4(s1, s3, 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(s0, s2, 0xDD);
    r[12 + j] = _mm512_shuffle_i32x4(s1, s3, 0xDD);
  }
}
KWKER_VQ_INLINE void transpose_8x8_epi64(__m512i* r) {
  __m512i t[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // t[2i + j], 128-bit lane q: rows 2i, 2i+1 of column 2q + j
    t[2 * i] = _mm512_unpacklo_epi64(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi64(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 2
  for (int j = 0; j < 2; ++j) {
    const __m512i s0 = _mm512_shuffle_i64x2(t[j], t[2 + j], 0x88);
    const __m512i s1 = _mm512_shuffle_i64x2(t[j], t[2 + j], 0xDD);
    const __m512i s2 = _mm512_shuffle_i64x2(t[4 + j], t[6 + j], 0x88);
    const __m512i s3 = _mm512_shuffle_i64x2(t[4 + j], t[6 + j], 0xDD);
    r[j] = _mm512_shuffle_i64x2(s0, s2, 0x88);
    r[2 + j] = _mm512_shuffle_i64x2(s1, s3, 0x88);
    r[4 + j] = _mm512_shuffle_i64x2(s0, s2, 0xDD);
    r[6 + j] = _mm512_shuffle_i64x2(s1, s3, 0xDD);
  }
}

// Half squares: 8 registers of 16 32-bit lanes (4 of 8 64-bit lanes), transposed into the
// plain layout: output vector u holds column 2u, then column 2u + 1.
KWKER_VQ_INLINE void transpose_8x16_epi32(__m512i* r) {
  __m512i t[8], u[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {  // u[4i + j], 128-bit lane q: rows 4i..4i+3 of column 4q + j
    u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
#pragma GCC unroll 2
  for (int j = 0; j < 4; j += 2) {  // columns 4q + j and 4q + j + 1 make output 2q + j / 2
    const __m512i a = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);
    const __m512i b = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);
    const __m512i c = _mm512_shuffle_i32x4(u[j + 1], u[5 + j], 0x88);
    const __m512i d = _mm512_shuffle_i32x4(u[j + 1], u[5 + j], 0xDD);
    r[j / 2] = _mm512_shuffle_i32x4(a, c, 0x88);
    r[4 + j / 2] = _mm512_shuffle_i32x4(a, c, 0xDD);
    r[2 + j / 2] = _mm512_shuffle_i32x4(b, d, 0x88);
    r[6 + j / 2] = _mm512_shuffle_i32x4(b, d, 0xDD);
  }
}
// Quarter squares: 4 registers of 16 32-bit lanes (2 of 8 64-bit lanes) into the plain layout,
// output vector u lane m = input vector m % K, lane 4u + m / K.
struct LaneIndex16 {
  int32_t e[16];
};
constexpr LaneIndex16 quarter_index(int u, int first) {  // lanes m % 4 in {first, first + 1}
  LaneIndex16 x{};
  for (int m = 0; m < 16; ++m) x.e[m] = 4 * u + m / 4 + ((m % 4) == first + 1 ? 16 : 0);
  return x;
}
alignas(64) constexpr LaneIndex16 kQuarterIndex[2][4] = {
    {quarter_index(0, 0), quarter_index(1, 0), quarter_index(2, 0), quarter_index(3, 0)},
    {quarter_index(0, 2), quarter_index(1, 2), quarter_index(2, 2), quarter_index(3, 2)}};
KWKER_VQ_INLINE void transpose_4x16_epi32(__m512i* r) {
  __m512i out[4];
#pragma GCC unroll 4
  for (int u = 0; u < 4; ++u) {
    const __m512i lo = _mm512_permutex2var_epi32(
        r[0], _mm512_load_si512(kQuarterIndex[0][u].e), r[1]);  // lanes m % 4 = 0, 1
    const __m512i hi = _mm512_permutex2var_epi32(
        r[2], _mm512_load_si512(kQuarterIndex[1][u].e), r[3]);  // lanes m % 4 = 2, 3
    out[u] = _mm512_mask_blend_epi32(__mmask16(0xCCCC), lo, hi);
  }
#pragma GCC unroll 4
  for (int u = 0; u < 4; ++u) r[u] = out[u];
}
KWKER_VQ_INLINE void transpose_2x8_epi64(__m512i* r) {
  const __m512i a = _mm512_permutex2var_epi64(r[0], _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11),
                                              r[1]);
  r[1] = _mm512_permutex2var_epi64(r[0], _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15), r[1]);
  r[0] = a;
}
KWKER_VQ_INLINE void transpose_4x8_epi64(__m512i* r) {
  const __m512i t0 = _mm512_unpacklo_epi64(r[0], r[1]), t1 = _mm512_unpackhi_epi64(r[0], r[1]);
  const __m512i t2 = _mm512_unpacklo_epi64(r[2], r[3]), t3 = _mm512_unpackhi_epi64(r[2], r[3]);
  const __m512i a = _mm512_shuffle_i64x2(t0, t2, 0x88), b = _mm512_shuffle_i64x2(t0, t2, 0xDD);
  const __m512i c = _mm512_shuffle_i64x2(t1, t3, 0x88), d = _mm512_shuffle_i64x2(t1, t3, 0xDD);
  r[0] = _mm512_shuffle_i64x2(a, c, 0x88);
  r[1] = _mm512_shuffle_i64x2(b, d, 0x88);
  r[2] = _mm512_shuffle_i64x2(a, c, 0xDD);
  r[3] = _mm512_shuffle_i64x2(b, d, 0xDD);
}

template <> struct Ops<int32_t> {
  using T = int32_t;
  using Key = T;
  using V = __m512i;
  static constexpr size_t W = 16;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T* p) { return _mm512_loadu_si512(p); }
  static KWKER_VQ_INLINE void store(T* p, V v) { _mm512_storeu_si512(p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm512_set1_epi32(x); }
  static KWKER_VQ_INLINE V load_partial(const T* p, size_t n) {
    return _mm512_mask_loadu_epi32(set1(Limits<T>::kMax), __mmask16((1u << n) - 1), p);
  }
  static KWKER_VQ_INLINE void store_partial(T* p, V v, size_t n) {
    _mm512_mask_storeu_epi32(p, __mmask16((1u << n) - 1), v);
  }
  // max = a ^ b ^ min(a, b): one vpternlogd, which issues on two ports of Intel cores where the
  // 512-bit vpmaxsd would queue behind vpminsd on the one port both use (measured on an Intel
  // Xeon: int32 sorts of 64-5,000 keys 1.15-1.3x, int64 1.3-1.5x; bit-exact by construction).
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {
    mn = _mm512_min_epi32(a, b);
    mx = _mm512_ternarylogic_epi32(a, b, mn, 0x96);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 1) return _mm512_shuffle_epi32(v, _MM_PERM_ENUM(0xB1));
    else if constexpr (M == 2) return _mm512_shuffle_epi32(v, _MM_PERM_ENUM(0x4E));
    else if constexpr (M == 3) return _mm512_shuffle_epi32(v, _MM_PERM_ENUM(0x1B));
    else if constexpr (M == 4) return _mm512_shuffle_i32x4(v, v, 0xB1);
    else if constexpr (M == 8) return _mm512_shuffle_i32x4(v, v, 0x4E);
    else
      return _mm512_permutexvar_epi32(
          _mm512_set_epi32(15 ^ M, 14 ^ M, 13 ^ M, 12 ^ M, 11 ^ M, 10 ^ M, 9 ^ M, 8 ^ M,
                           7 ^ M, 6 ^ M, 5 ^ M, 4 ^ M, 3 ^ M, 2 ^ M, 1 ^ M, 0 ^ M),
          v);
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);  // min everywhere, then max merged into upper lanes
    return _mm512_mask_ternarylogic_epi32(_mm512_min_epi32(v, w),
                                          __mmask16(upper_lanes(16, highest_bit(M))), v, w, 0x96);
  }
  static constexpr bool kTransposedNetwork = true;
  static KWKER_VQ_INLINE void transpose_square(V* v) { transpose_16x16_epi32(v); }
  static KWKER_VQ_INLINE void transpose_half(V* v) { transpose_8x16_epi32(v); }
  static KWKER_VQ_INLINE void transpose_quarter(V* v) { transpose_4x16_epi32(v); }
  // a keeps the minima in its lower lanes and the maxima in its upper ones (against b's lanes
  // permuted by M); b gets the rest, permuted back. The second result is a ^ b ^ the first.
  template <unsigned M> static KWKER_VQ_INLINE void cx_flip(V& a, V& b) {
    const V bp = perm_xor<M>(b);
    const V na = _mm512_mask_ternarylogic_epi32(
        _mm512_min_epi32(a, bp), __mmask16(upper_lanes(16, highest_bit(M))), a, bp, 0x96);
    b = perm_xor<M>(_mm512_ternarylogic_epi32(a, bp, na, 0x96));
    a = na;
  }
  static KWKER_VQ_INLINE unsigned above(V v, V mask, V lim) {
    return unsigned(_mm512_cmpgt_epi32_mask(_mm512_and_si512(v, mask), lim));
  }
  // Compress into registers (two per vector). Splitting the vector into two 8-lane halves
  // permuted by a table, as Ops<int64_t> does, was measured 13% slower for 32-bit keys.
  static KWKER_VQ_INLINE void partition_store(V v, V pivot, T*& wl, T*& wr) {
    const __mmask16 gt = _mm512_cmpgt_epi32_mask(v, pivot);
    const unsigned nr = unsigned(__builtin_popcount(unsigned(gt)));
    _mm512_storeu_si512(wl, _mm512_maskz_compress_epi32(__mmask16(~gt), v));
    wl += W - nr;
    wr -= nr;
    _mm512_mask_storeu_epi32(wr, __mmask16((1u << nr) - 1), _mm512_maskz_compress_epi32(gt, v));
  }
};

template <> struct Ops<int64_t> {
  using T = int64_t;
  using Key = T;
  using V = __m512i;
  static constexpr size_t W = 8;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T* p) { return _mm512_loadu_si512(p); }
  static KWKER_VQ_INLINE void store(T* p, V v) { _mm512_storeu_si512(p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm512_set1_epi64(x); }
  static KWKER_VQ_INLINE V load_partial(const T* p, size_t n) {
    return _mm512_mask_loadu_epi64(set1(Limits<T>::kMax), __mmask8((1u << n) - 1), p);
  }
  static KWKER_VQ_INLINE void store_partial(T* p, V v, size_t n) {
    _mm512_mask_storeu_epi64(p, __mmask8((1u << n) - 1), v);
  }
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {  // max: see Ops<int32_t>
    mn = _mm512_min_epi64(a, b);
    mx = _mm512_ternarylogic_epi64(a, b, mn, 0x96);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 1) return _mm512_shuffle_epi32(v, _MM_PERM_ENUM(0x4E));
    else if constexpr (M == 2) return _mm512_permutex_epi64(v, 0x4E);
    else if constexpr (M == 3) return _mm512_permutex_epi64(v, 0x1B);
    else if constexpr (M == 4) return _mm512_shuffle_i64x2(v, v, 0x4E);
    else
      return _mm512_permutexvar_epi64(
          _mm512_set_epi64(7 ^ M, 6 ^ M, 5 ^ M, 4 ^ M, 3 ^ M, 2 ^ M, 1 ^ M, 0 ^ M), v);
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);
    return _mm512_mask_ternarylogic_epi64(_mm512_min_epi64(v, w),
                                          __mmask8(upper_lanes(8, highest_bit(M))), v, w, 0x96);
  }
  static constexpr bool kTransposedNetwork = true;
  static KWKER_VQ_INLINE void transpose_square(V* v) { transpose_8x8_epi64(v); }
  static KWKER_VQ_INLINE void transpose_half(V* v) { transpose_4x8_epi64(v); }
  static KWKER_VQ_INLINE void transpose_quarter(V* v) { transpose_2x8_epi64(v); }
  template <unsigned M> static KWKER_VQ_INLINE void cx_flip(V& a, V& b) {  // see Ops<int32_t>
    const V bp = perm_xor<M>(b);
    const V na = _mm512_mask_ternarylogic_epi64(
        _mm512_min_epi64(a, bp), __mmask8(upper_lanes(8, highest_bit(M))), a, bp, 0x96);
    b = perm_xor<M>(_mm512_ternarylogic_epi64(a, bp, na, 0x96));
    a = na;
  }
  static KWKER_VQ_INLINE unsigned above(V v, V mask, V lim) {
    return unsigned(_mm512_cmpgt_epi64_mask(_mm512_and_si512(v, mask), lim));
  }
  // One permutation puts the lanes <= pivot first and the others last, and the whole vector is
  // stored at both ends (the AVX2 scheme): two compresses per vector, each 2 cycles on Zen 4,
  // were the partition's bottleneck for 8-byte keys.
  static KWKER_VQ_INLINE void partition_store(V v, V pivot, T*& wl, T*& wr) {
    const unsigned gt = unsigned(_mm512_cmpgt_epi64_mask(v, pivot));
    const __m512i idx =
        _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&kSplit64x8.e[gt])));
    const V p = _mm512_permutexvar_epi64(idx, v);
    const unsigned nr = unsigned(__builtin_popcount(gt));
    _mm512_storeu_si512(wl, p);
    _mm512_storeu_si512(wr - W, p);
    wl += W - nr;
    wr -= nr;
  }
};

// ---------------------------------------------------------------------------
// Float keys compared as floats (vminps / vmaxps), for the register networks of short float
// sorts: the values go in and out as they are, with no encoding to integer keys and back, which
// is most of what short float64 sorts gain (1.1-1.2x at 33-256 keys on an Intel Xeon). Only for
// values whose float order is the total order: no NaN, no -0.0 (equal to +0.0 as a float) and
// denormals compared as they are (MXCSR's DAZ clear); see floats_plain() in coded-inl.h.
template <class T> struct FOps;

template <> struct FOps<float> {
  using T = float;
  using Key = T;
  using V = __m512;
  static constexpr size_t W = 16;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T* p) { return _mm512_loadu_ps(p); }
  static KWKER_VQ_INLINE void store(T* p, V v) { _mm512_storeu_ps(p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm512_set1_ps(x); }
  static KWKER_VQ_INLINE V load_partial(const T* p, size_t n) {
    return _mm512_mask_loadu_ps(set1(Limits<T>::kMax), __mmask16((1u << n) - 1), p);
  }
  static KWKER_VQ_INLINE void store_partial(T* p, V v, size_t n) {
    _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1), v);
  }
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {
    mn = _mm512_min_ps(a, b);
    mx = _mm512_max_ps(a, b);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 1) return _mm512_permute_ps(v, 0xB1);
    else if constexpr (M == 2) return _mm512_permute_ps(v, 0x4E);
    else if constexpr (M == 3) return _mm512_permute_ps(v, 0x1B);
    else if constexpr (M == 4) return _mm512_shuffle_f32x4(v, v, 0xB1);
    else if constexpr (M == 8) return _mm512_shuffle_f32x4(v, v, 0x4E);
    else
      return _mm512_permutexvar_ps(
          _mm512_set_epi32(15 ^ M, 14 ^ M, 13 ^ M, 12 ^ M, 11 ^ M, 10 ^ M, 9 ^ M, 8 ^ M,
                           7 ^ M, 6 ^ M, 5 ^ M, 4 ^ M, 3 ^ M, 2 ^ M, 1 ^ M, 0 ^ M),
          v);
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);
    return _mm512_mask_max_ps(_mm512_min_ps(v, w), __mmask16(upper_lanes(16, highest_bit(M))),
                              v, w);
  }
  static constexpr bool kTransposedNetwork = true;
  static KWKER_VQ_INLINE void transpose_square(V* v) {
    transpose_bits<16>(v, transpose_16x16_epi32);
  }
  static KWKER_VQ_INLINE void transpose_half(V* v) { transpose_bits<8>(v, transpose_8x16_epi32); }
  static KWKER_VQ_INLINE void transpose_quarter(V* v) {
    transpose_bits<4>(v, transpose_4x16_epi32);
  }
  template <unsigned M> static KWKER_VQ_INLINE void cx_flip(V& a, V& b) {  // see Ops<int32_t>
    constexpr __mmask16 up = __mmask16(upper_lanes(16, highest_bit(M)));
    const V bp = perm_xor<M>(b);
    const V na = _mm512_mask_max_ps(_mm512_min_ps(a, bp), up, a, bp);
    b = perm_xor<M>(_mm512_mask_min_ps(_mm512_max_ps(a, bp), up, a, bp));
    a = na;
  }
};

template <> struct FOps<double> {
  using T = double;
  using Key = T;
  using V = __m512d;
  static constexpr size_t W = 8;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T* p) { return _mm512_loadu_pd(p); }
  static KWKER_VQ_INLINE void store(T* p, V v) { _mm512_storeu_pd(p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm512_set1_pd(x); }
  static KWKER_VQ_INLINE V load_partial(const T* p, size_t n) {
    return _mm512_mask_loadu_pd(set1(Limits<T>::kMax), __mmask8((1u << n) - 1), p);
  }
  static KWKER_VQ_INLINE void store_partial(T* p, V v, size_t n) {
    _mm512_mask_storeu_pd(p, __mmask8((1u << n) - 1), v);
  }
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {
    mn = _mm512_min_pd(a, b);
    mx = _mm512_max_pd(a, b);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 1) return _mm512_permute_pd(v, 0x55);
    else if constexpr (M == 2) return _mm512_permutex_pd(v, 0x4E);
    else if constexpr (M == 3) return _mm512_permutex_pd(v, 0x1B);
    else if constexpr (M == 4) return _mm512_shuffle_f64x2(v, v, 0x4E);
    else
      return _mm512_permutexvar_pd(
          _mm512_set_epi64(7 ^ M, 6 ^ M, 5 ^ M, 4 ^ M, 3 ^ M, 2 ^ M, 1 ^ M, 0 ^ M), v);
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);
    return _mm512_mask_max_pd(_mm512_min_pd(v, w), __mmask8(upper_lanes(8, highest_bit(M))),
                              v, w);
  }
  static constexpr bool kTransposedNetwork = true;
  static KWKER_VQ_INLINE void transpose_square(V* v) { transpose_bits<8>(v, transpose_8x8_epi64); }
  static KWKER_VQ_INLINE void transpose_half(V* v) { transpose_bits<4>(v, transpose_4x8_epi64); }
  static KWKER_VQ_INLINE void transpose_quarter(V* v) {
    transpose_bits<2>(v, transpose_2x8_epi64);
  }
  template <unsigned M> static KWKER_VQ_INLINE void cx_flip(V& a, V& b) {  // see Ops<int32_t>
    constexpr __mmask8 up = __mmask8(upper_lanes(8, highest_bit(M)));
    const V bp = perm_xor<M>(b);
    const V na = _mm512_mask_max_pd(_mm512_min_pd(a, bp), up, a, bp);
    b = perm_xor<M>(_mm512_mask_min_pd(_mm512_max_pd(a, bp), up, a, bp));
    a = na;
  }
};

#elif defined(__AVX2__)
// ---------------------------------------------------------------------------
// AVX2: the partition permutes each vector with vpermd so that lanes <= pivot come
// first, then stores the whole vector at both ends (a 1 KiB table of packed indices;
// vpermd only reads the low 3 bits of each index, so a variable shift unpacks it).

constexpr PackedPermTable kPerm32x8 = make_perm_table8(8, 1);
constexpr PackedPermTable kPerm64x4 = make_perm_table8(4, 2);
alignas(64) constexpr int32_t kLaneMaskWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                     0,  0,  0,  0,  0,  0,  0,  0};

KWKER_VQ_INLINE __m256i unpack_perm(uint32_t packed) {
  return _mm256_srlv_epi32(_mm256_set1_epi32(int32_t(packed)),
                           _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
}

// The 16 permutations of four 64-bit lanes unpacked (512 bytes): the 64-bit partition loads its
// control instead of broadcasting and shifting a packed one, two fewer instructions in a loop of
// about nine per vector (float64 / int64 sorts, whose partition is over half their time on AVX2).
struct PermVectors64x4 {
  alignas(32) int32_t e[16][8];
};
constexpr PermVectors64x4 make_perm_vectors64x4() {
  PermVectors64x4 t{};
  for (unsigned m = 0; m < 16; ++m)
    for (unsigned j = 0; j < 8; ++j) t.e[m][j] = int32_t((kPerm64x4.e[m] >> (4 * j)) & 7u);
  return t;
}
alignas(64) constexpr PermVectors64x4 kPermVec64x4 = make_perm_vectors64x4();

// Transposes for the transposed networks of network-inl.h (see the AVX-512 ones; the 8 x 8
// 32-bit and 4 x 4 64-bit squares are above, shared with the avx512 engine): the half squares
// (4 x 8, 2 x 4) whose output vector u holds column 2u, then column 2u + 1.
KWKER_VQ_INLINE void transpose_4x8_epi32(__m256i* r) {
  const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
  // u_j, 128-bit lane q: column 4q + j
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  r[0] = _mm256_permute2x128_si256(u0, u1, 0x20);
  r[1] = _mm256_permute2x128_si256(u2, u3, 0x20);
  r[2] = _mm256_permute2x128_si256(u0, u1, 0x31);
  r[3] = _mm256_permute2x128_si256(u2, u3, 0x31);
}
KWKER_VQ_INLINE void transpose_2x4_epi64(__m256i* r) {
  const __m256i lo = _mm256_unpacklo_epi64(r[0], r[1]), hi = _mm256_unpackhi_epi64(r[0], r[1]);
  r[0] = _mm256_permute2x128_si256(lo, hi, 0x20);
  r[1] = _mm256_permute2x128_si256(lo, hi, 0x31);
}

template <class T> struct Ops;

template <> struct Ops<int32_t> {
  using T = int32_t;
  using Key = T;
  using V = __m256i;
  static constexpr size_t W = 8;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T* p) { return _mm256_loadu_si256((const __m256i*)p); }
  static KWKER_VQ_INLINE void store(T* p, V v) { _mm256_storeu_si256((__m256i*)p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm256_set1_epi32(x); }
  static KWKER_VQ_INLINE V first_lanes(size_t n) {  // -1 in lanes < n (n < 8)
    return _mm256_loadu_si256((const __m256i*)(kLaneMaskWindow + 8 - n));
  }
  static KWKER_VQ_INLINE V load_partial(const T* p, size_t n) {
    const V m = first_lanes(n);
    return _mm256_blendv_epi8(set1(Limits<T>::kMax), _mm256_maskload_epi32(p, m), m);
  }
  static KWKER_VQ_INLINE void store_partial(T* p, V v, size_t n) {
    _mm256_maskstore_epi32(p, first_lanes(n), v);
  }
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {
    mn = _mm256_min_epi32(a, b);
    mx = _mm256_max_epi32(a, b);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 1) return _mm256_shuffle_epi32(v, 0xB1);
    else if constexpr (M == 2) return _mm256_shuffle_epi32(v, 0x4E);
    else if constexpr (M == 3) return _mm256_shuffle_epi32(v, 0x1B);
    else if constexpr (M == 4) return _mm256_permute4x64_epi64(v, 0x4E);
    else
      return _mm256_permutevar8x32_epi32(
          v, _mm256_setr_epi32(0 ^ M, 1 ^ M, 2 ^ M, 3 ^ M, 4 ^ M, 5 ^ M, 6 ^ M, 7 ^ M));
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);
    return _mm256_blend_epi32(_mm256_min_epi32(v, w), _mm256_max_epi32(v, w),
                              int(upper_lanes(8, highest_bit(M))));
  }
  static constexpr bool kTransposedNetwork = true;
  static KWKER_VQ_INLINE void transpose_square(V* v) { transpose_8x8_epi32(v); }
  static KWKER_VQ_INLINE void transpose_half(V* v) { transpose_4x8_epi32(v); }
  template <unsigned M> static KWKER_VQ_INLINE void cx_flip(V& a, V& b) {  // see AVX-512
    constexpr int up = int(upper_lanes(8, highest_bit(M)));
    const V bp = perm_xor<M>(b);
    const V mn = _mm256_min_epi32(a, bp), mx = _mm256_max_epi32(a, bp);
    a = _mm256_blend_epi32(mn, mx, up);
    b = perm_xor<M>(_mm256_blend_epi32(mx, mn, up));
  }
  static KWKER_VQ_INLINE unsigned above(V v, V mask, V lim) {
    return unsigned(_mm256_movemask_epi8(_mm256_cmpgt_epi32(_mm256_and_si256(v, mask), lim)));
  }
  static KWKER_VQ_INLINE void partition_store(V v, V pivot, T*& wl, T*& wr) {
    const unsigned m =
        unsigned(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(v, pivot))));
    const V p = _mm256_permutevar8x32_epi32(v, unpack_perm(kPerm32x8.e[m]));
    const unsigned nr = unsigned(__builtin_popcount(m));
    store(wl, p);
    store(wr - W, p);
    wl += W - nr;
    wr -= nr;
  }
};

template <> struct Ops<int64_t> {
  using T = int64_t;
  using Key = T;
  using V = __m256i;
  static constexpr size_t W = 4;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T* p) { return _mm256_loadu_si256((const __m256i*)p); }
  static KWKER_VQ_INLINE void store(T* p, V v) { _mm256_storeu_si256((__m256i*)p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm256_set1_epi64x(x); }
  static KWKER_VQ_INLINE V first_lanes(size_t n) {  // -1 in 64-bit lanes < n (n < 4)
    return _mm256_loadu_si256((const __m256i*)(kLaneMaskWindow + 8 - 2 * n));
  }
  static KWKER_VQ_INLINE V load_partial(const T* p, size_t n) {
    const V m = first_lanes(n);
    return _mm256_blendv_epi8(set1(Limits<T>::kMax),
                              _mm256_maskload_epi64((const long long*)p, m), m);
  }
  static KWKER_VQ_INLINE void store_partial(T* p, V v, size_t n) {
    _mm256_maskstore_epi64((long long*)p, first_lanes(n), v);
  }
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {
    const V gt = _mm256_cmpgt_epi64(a, b);
    mn = _mm256_blendv_epi8(a, b, gt);
    mx = _mm256_blendv_epi8(b, a, gt);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 1) return _mm256_shuffle_epi32(v, 0x4E);
    else if constexpr (M == 2) return _mm256_permute4x64_epi64(v, 0x4E);
    else return _mm256_permute4x64_epi64(v, 0x1B);  // M == 3
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    // No 64-bit min/max: a lower lane takes w where v > w, an upper lane where not.
    constexpr unsigned H = highest_bit(M);
    const V upper = _mm256_setr_epi64x((0 & H) ? -1 : 0, (1 & H) ? -1 : 0,
                                       (2 & H) ? -1 : 0, (3 & H) ? -1 : 0);
    const V w = perm_xor<M>(v);
    return _mm256_blendv_epi8(v, w, _mm256_xor_si256(_mm256_cmpgt_epi64(v, w), upper));
  }
  static constexpr bool kTransposedNetwork = true;
  static KWKER_VQ_INLINE void transpose_square(V* v) { transpose_4x4_epi64(v); }
  static KWKER_VQ_INLINE void transpose_half(V* v) { transpose_2x4_epi64(v); }
  template <unsigned M> static KWKER_VQ_INLINE void cx_flip(V& a, V& b) {  // see AVX-512
    // a's lower lanes take bp where a > bp (the minimum), its upper lanes where not; b's lanes
    // take the other value, permuted back.
    constexpr unsigned H = highest_bit(M);
    const V upper = _mm256_setr_epi64x((0 & H) ? -1 : 0, (1 & H) ? -1 : 0,
                                       (2 & H) ? -1 : 0, (3 & H) ? -1 : 0);
    const V bp = perm_xor<M>(b);
    const V take = _mm256_xor_si256(_mm256_cmpgt_epi64(a, bp), upper);
    const V na = _mm256_blendv_epi8(a, bp, take);
    b = perm_xor<M>(_mm256_blendv_epi8(bp, a, take));
    a = na;
  }
  static KWKER_VQ_INLINE unsigned above(V v, V mask, V lim) {
    return unsigned(_mm256_movemask_epi8(_mm256_cmpgt_epi64(_mm256_and_si256(v, mask), lim)));
  }
  static KWKER_VQ_INLINE void partition_store(V v, V pivot, T*& wl, T*& wr) {
    const unsigned m =
        unsigned(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(v, pivot))));
    const V p = _mm256_permutevar8x32_epi32(
        v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kPermVec64x4.e[m])));
    const unsigned nr = unsigned(__builtin_popcount(m));
    store(wl, p);
    store(wr - W, p);
    wl += W - nr;
    wr -= nr;
  }
};

// Float keys compared as floats (see the AVX-512 FOps). float64: vminpd / vmaxpd are one
// instruction each, where the int64 keys' min / max take a vpcmpgtq and two blends on AVX2.
// float32: the min / max cost what vpminsd / vpmaxsd cost, but the register sorts of short
// inputs then skip the keys' encoding and decoding (the knobs sort_float_min/max_32 say where).
template <class T> struct FOps;
template <> struct FOps<float> {
  using T = float;
  using Key = T;
  using V = __m256;
  static constexpr size_t W = 8;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T* p) { return _mm256_loadu_ps(p); }
  static KWKER_VQ_INLINE void store(T* p, V v) { _mm256_storeu_ps(p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm256_set1_ps(x); }
  static KWKER_VQ_INLINE V load_partial(const T* p, size_t n) {
    const __m256i m = Ops<int32_t>::first_lanes(n);
    return _mm256_blendv_ps(set1(Limits<T>::kMax), _mm256_maskload_ps(p, m),
                            _mm256_castsi256_ps(m));
  }
  static KWKER_VQ_INLINE void store_partial(T* p, V v, size_t n) {
    _mm256_maskstore_ps(p, Ops<int32_t>::first_lanes(n), v);
  }
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {
    mn = _mm256_min_ps(a, b);
    mx = _mm256_max_ps(a, b);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 1) return _mm256_permute_ps(v, 0xB1);
    else if constexpr (M == 2) return _mm256_permute_ps(v, 0x4E);
    else if constexpr (M == 3) return _mm256_permute_ps(v, 0x1B);
    else if constexpr (M == 4) return _mm256_permute2f128_ps(v, v, 0x01);
    else
      return _mm256_permutevar8x32_ps(
          v, _mm256_setr_epi32(0 ^ M, 1 ^ M, 2 ^ M, 3 ^ M, 4 ^ M, 5 ^ M, 6 ^ M, 7 ^ M));
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);
    return _mm256_blend_ps(_mm256_min_ps(v, w), _mm256_max_ps(v, w),
                           int(upper_lanes(8, highest_bit(M))));
  }
  static constexpr bool kTransposedNetwork = true;
  static KWKER_VQ_INLINE void transpose_square(V* v) { transpose_bits<8>(v, transpose_8x8_epi32); }
  static KWKER_VQ_INLINE void transpose_half(V* v) { transpose_bits<4>(v, transpose_4x8_epi32); }
  template <unsigned M> static KWKER_VQ_INLINE void cx_flip(V& a, V& b) {  // see Ops<int32_t>
    constexpr int up = int(upper_lanes(8, highest_bit(M)));
    const V bp = perm_xor<M>(b);
    const V mn = _mm256_min_ps(a, bp), mx = _mm256_max_ps(a, bp);
    a = _mm256_blend_ps(mn, mx, up);
    b = perm_xor<M>(_mm256_blend_ps(mx, mn, up));
  }
};
template <> struct FOps<double> {
  using T = double;
  using Key = T;
  using V = __m256d;
  static constexpr size_t W = 4;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T* p) { return _mm256_loadu_pd(p); }
  static KWKER_VQ_INLINE void store(T* p, V v) { _mm256_storeu_pd(p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm256_set1_pd(x); }
  static KWKER_VQ_INLINE V load_partial(const T* p, size_t n) {
    const __m256i m = Ops<int64_t>::first_lanes(n);
    return _mm256_blendv_pd(set1(Limits<T>::kMax), _mm256_maskload_pd(p, m),
                            _mm256_castsi256_pd(m));
  }
  static KWKER_VQ_INLINE void store_partial(T* p, V v, size_t n) {
    _mm256_maskstore_pd(p, Ops<int64_t>::first_lanes(n), v);
  }
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {
    mn = _mm256_min_pd(a, b);
    mx = _mm256_max_pd(a, b);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 1) return _mm256_permute_pd(v, 0x5);
    else if constexpr (M == 2) return _mm256_permute4x64_pd(v, 0x4E);
    else return _mm256_permute4x64_pd(v, 0x1B);  // M == 3
  }
  // Lanes whose index has bit H set (the upper lane of each compared pair), as a blend mask.
  template <unsigned M> static constexpr int upper_imm() {
    constexpr unsigned H = highest_bit(M);
    return ((0 & H) ? 1 : 0) | ((1 & H) ? 2 : 0) | ((2 & H) ? 4 : 0) | ((3 & H) ? 8 : 0);
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);
    return _mm256_blend_pd(_mm256_min_pd(v, w), _mm256_max_pd(v, w), upper_imm<M>());
  }
  static constexpr bool kTransposedNetwork = true;
  static KWKER_VQ_INLINE void transpose_square(V* v) { transpose_bits<4>(v, transpose_4x4_epi64); }
  static KWKER_VQ_INLINE void transpose_half(V* v) { transpose_bits<2>(v, transpose_2x4_epi64); }
  template <unsigned M> static KWKER_VQ_INLINE void cx_flip(V& a, V& b) {  // see Ops<int64_t>
    const V bp = perm_xor<M>(b);
    const V mn = _mm256_min_pd(a, bp), mx = _mm256_max_pd(a, bp);
    a = _mm256_blend_pd(mn, mx, upper_imm<M>());
    b = perm_xor<M>(_mm256_blend_pd(mx, mn, upper_imm<M>()));
  }
};

#elif defined(__SSE4_2__)
// ---------------------------------------------------------------------------
// SSE4.2: 128-bit vectors; pshufb with a 16-entry table for the partition; int64
// min/max from pcmpgtq + pblendvb.

alignas(16) constexpr ByteShuffleTable kShuf32x4 = make_byte_shuffle_table(4, 4);
alignas(16) constexpr ByteShuffleTable kShuf64x2 = make_byte_shuffle_table(2, 8);

template <class T> struct SseCommon {
  using V = __m128i;
  static constexpr size_t W = 16 / sizeof(T);
  static KWKER_VQ_INLINE V load(const T* p) { return _mm_loadu_si128((const __m128i*)p); }
  static KWKER_VQ_INLINE void store(T* p, V v) { _mm_storeu_si128((__m128i*)p, v); }
  // No cheap masked integer load/store on SSE: go through a small buffer.
  static KWKER_VQ_INLINE V load_partial(const T* p, size_t n) {
    T buf[W];
    for (size_t i = 0; i < W; ++i) buf[i] = Limits<T>::kMax;
    memcpy(buf, p, n * sizeof(T));
    return load(buf);
  }
  static KWKER_VQ_INLINE void store_partial(T* p, V v, size_t n) {
    T buf[W];
    store(buf, v);
    memcpy(p, buf, n * sizeof(T));
  }
  static KWKER_VQ_INLINE void store_split(V p, unsigned nr, T*& wl, T*& wr) {
    store(wl, p);
    store(wr - W, p);
    wl += W - nr;
    wr -= nr;
  }
};

template <class T> struct Ops;

template <> struct Ops<int32_t> : SseCommon<int32_t> {
  using T = int32_t;
  using Key = T;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;
  static KWKER_VQ_INLINE V set1(T x) { return _mm_set1_epi32(x); }
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {
    mn = _mm_min_epi32(a, b);
    mx = _mm_max_epi32(a, b);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 1) return _mm_shuffle_epi32(v, 0xB1);
    else if constexpr (M == 2) return _mm_shuffle_epi32(v, 0x4E);
    else return _mm_shuffle_epi32(v, 0x1B);  // M == 3
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);
    return _mm_blend_epi16(_mm_min_epi32(v, w), _mm_max_epi32(v, w),
                           int(upper_lanes_x2(4, highest_bit(M))));
  }
  static KWKER_VQ_INLINE unsigned above(V v, V mask, V lim) {
    return unsigned(_mm_movemask_epi8(_mm_cmpgt_epi32(_mm_and_si128(v, mask), lim)));
  }
  static KWKER_VQ_INLINE void partition_store(V v, V pivot, T*& wl, T*& wr) {
    const unsigned m = unsigned(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(v, pivot))));
    const V p = _mm_shuffle_epi8(v, _mm_load_si128((const __m128i*)kShuf32x4.e[m]));
    store_split(p, unsigned(__builtin_popcount(m)), wl, wr);
  }
};

template <> struct Ops<int64_t> : SseCommon<int64_t> {
  using T = int64_t;
  using Key = T;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;
  static KWKER_VQ_INLINE V set1(T x) { return _mm_set1_epi64x(x); }
  static KWKER_VQ_INLINE void minmax(V a, V b, V& mn, V& mx) {
    const V gt = _mm_cmpgt_epi64(a, b);
    mn = _mm_blendv_epi8(a, b, gt);
    mx = _mm_blendv_epi8(b, a, gt);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    return _mm_shuffle_epi32(v, 0x4E);  // M == 1
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {  // M == 1
    const V w = perm_xor<M>(v);
    return _mm_blendv_epi8(v, w, _mm_xor_si128(_mm_cmpgt_epi64(v, w), _mm_set_epi64x(-1, 0)));
  }
  static KWKER_VQ_INLINE unsigned above(V v, V mask, V lim) {
    return unsigned(_mm_movemask_epi8(_mm_cmpgt_epi64(_mm_and_si128(v, mask), lim)));
  }
  static KWKER_VQ_INLINE void partition_store(V v, V pivot, T*& wl, T*& wr) {
    const unsigned m = unsigned(_mm_movemask_pd(_mm_castsi128_pd(_mm_cmpgt_epi64(v, pivot))));
    const V p = _mm_shuffle_epi8(v, _mm_load_si128((const __m128i*)kShuf64x2.e[m]));
    store_split(p, unsigned(__builtin_popcount(m)), wl, wr);
  }
};

#else
// ---------------------------------------------------------------------------
// Portable (baseline x86-64 / any CPU): scalar lanes.
template <class T> struct Ops : ScalarOps<T> {};
#endif

}  // namespace vq
}  // namespace KWKER_ENGINE_NS
}  // namespace kwker

#endif  // KWKER_CORE_SIMD_INL_H_
