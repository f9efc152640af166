// simd16-inl.h: vector ops on 16-bit keys for the sorting networks; a partition step only where
// compiled with AVX512-VBMI2 (16-bit compress: engines/avx512/sort16.cc, core/sort16_compress.h),
// elsewhere the 16-bit quicksort keeps the scalar lanes of ScalarOps. Twice the lanes of the
// 32-bit networks, so short rows of 8/16-bit dtypes sort in half the steps. Same contract as the
// Ops<T> of simd-inl.h (load/store, set1, partial load/store, minmax, perm_xor<M>,
// cx_lanes<M>); the portable engine keeps ScalarOps.
#ifndef KWKER_CORE_SIMD16_INL_H_
#define KWKER_CORE_SIMD16_INL_H_

#include "simd-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {
namespace vq {

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__SSE4_2__)
// pshufb control that moves 16-bit lane l ^ M (M < 8) into lane l of every 128-bit block.
struct Shuf16 {
  int8_t b[16];
};
constexpr Shuf16 make_shuf16(unsigned m) {
  Shuf16 s{};
  for (unsigned j = 0; j < 16; ++j) s.b[j] = int8_t((((j >> 1) ^ m) << 1) | (j & 1));
  return s;
}
template <unsigned M> struct Shuf16Table {
  static constexpr Shuf16 value = make_shuf16(M);
};
KWKER_VQ_INLINE __m128i shuf16_128(const Shuf16 &s) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i *>(s.b));
}

// Partial access through a small buffer: no 16-bit masked load/store below AVX-512BW.
#define KWKER_PARTIAL16_VIA_BUFFER                                  \
  static KWKER_VQ_INLINE V load_partial(const T *p, size_t n) {    \
    T buf[W];                                                      \
    for (size_t i = 0; i < W; ++i) buf[i] = Limits<T>::kMax;       \
    memcpy(buf, p, n * sizeof(T));                                 \
    return load(buf);                                              \
  }                                                                \
  static KWKER_VQ_INLINE void store_partial(T *p, V v, size_t n) { \
    T buf[W];                                                      \
    store(buf, v);                                                 \
    memcpy(p, buf, n * sizeof(T));                                 \
  }
#endif

#if defined(__AVX2__)
// Transposes of 16-bit lanes in 256-bit registers: the avx2 engine's transposed network on
// 16-bit keys (network-inl.h; as on AVX-512, an 8 x 8 transpose inside each 128-bit half, then
// the halves recombined), and on both engines the columns' blocks (core/columns-inl.h).
// r[0..8): afterwards half b of r[p] holds lane 8b + p of the eight inputs, input j in lane j.
KWKER_VQ_INLINE void transpose_8x8_halves_epi16(__m256i *r) {
  __m256i a[8], b[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    a[i] = _mm256_unpacklo_epi16(r[2 * i], r[2 * i + 1]);      // lanes 0-3 of inputs 2i, 2i+1
    a[i + 4] = _mm256_unpackhi_epi16(r[2 * i], r[2 * i + 1]);  // lanes 4-7
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    b[4 * h + 0] = _mm256_unpacklo_epi32(a[4 * h + 0], a[4 * h + 1]);  // lanes 4h+0,1; inputs 0-3
    b[4 * h + 1] = _mm256_unpackhi_epi32(a[4 * h + 0], a[4 * h + 1]);  // lanes 4h+2,3; inputs 0-3
    b[4 * h + 2] = _mm256_unpacklo_epi32(a[4 * h + 2], a[4 * h + 3]);  // lanes 4h+0,1; inputs 4-7
    b[4 * h + 3] = _mm256_unpackhi_epi32(a[4 * h + 2], a[4 * h + 3]);  // lanes 4h+2,3; inputs 4-7
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    r[4 * h + 0] = _mm256_unpacklo_epi64(b[4 * h + 0], b[4 * h + 2]);
    r[4 * h + 1] = _mm256_unpackhi_epi64(b[4 * h + 0], b[4 * h + 2]);
    r[4 * h + 2] = _mm256_unpacklo_epi64(b[4 * h + 1], b[4 * h + 3]);
    r[4 * h + 3] = _mm256_unpackhi_epi64(b[4 * h + 1], b[4 * h + 3]);
  }
}
// 16 x 16: lane l of register j  ->  lane j of register l.
KWKER_VQ_INLINE void transpose_16x16_epi16(__m256i *r) {
  transpose_8x8_halves_epi16(r);
  transpose_8x8_halves_epi16(r + 8);
  __m256i o[16];
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) {
    o[p] = _mm256_permute2x128_si256(r[p], r[8 + p], 0x20);
    o[8 + p] = _mm256_permute2x128_si256(r[p], r[8 + p], 0x31);
  }
#pragma GCC unroll 16
  for (int u = 0; u < 16; ++u) r[u] = o[u];
}
#endif

#if defined(__AVX512F__)
// Transposes for the network's transposed layout on 16-bit keys (network-inl.h), built from an
// 8 x 8 transpose inside every 128-bit block (three rounds of unpacks) and a 4 x 4 transpose of
// 128-bit blocks across four registers.
// r[0..8): afterwards block b of r[p] holds lane 8b + p of the eight inputs, input j in lane j.
KWKER_VQ_INLINE void transpose_8x8_blocks_epi16(__m512i *r) {
  __m512i a[8], b[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    a[i] = _mm512_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
    a[i + 4] = _mm512_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
  }
  // a[i] (i < 4): lanes 0-3 of inputs 2i, 2i+1 interleaved; a[i + 4]: lanes 4-7.
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    b[4 * h + 0] = _mm512_unpacklo_epi32(a[4 * h + 0], a[4 * h + 1]);  // lanes 4h+0,1; inputs 0-3
    b[4 * h + 1] = _mm512_unpackhi_epi32(a[4 * h + 0], a[4 * h + 1]);  // lanes 4h+2,3; inputs 0-3
    b[4 * h + 2] = _mm512_unpacklo_epi32(a[4 * h + 2], a[4 * h + 3]);  // lanes 4h+0,1; inputs 4-7
    b[4 * h + 3] = _mm512_unpackhi_epi32(a[4 * h + 2], a[4 * h + 3]);  // lanes 4h+2,3; inputs 4-7
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    r[4 * h + 0] = _mm512_unpacklo_epi64(b[4 * h + 0], b[4 * h + 2]);
    r[4 * h + 1] = _mm512_unpackhi_epi64(b[4 * h + 0], b[4 * h + 2]);
    r[4 * h + 2] = _mm512_unpacklo_epi64(b[4 * h + 1], b[4 * h + 3]);
    r[4 * h + 3] = _mm512_unpackhi_epi64(b[4 * h + 1], b[4 * h + 3]);
  }
}
// y[b] = block b of x0, x1, x2, x3 in that order.
KWKER_VQ_INLINE void transpose_4x4_blocks(__m512i x0, __m512i x1, __m512i x2, __m512i x3,
                                          __m512i &y0, __m512i &y1, __m512i &y2, __m512i &y3) {
  const __m512i p0 = _mm512_shuffle_i64x2(x0, x1, 0x44), p1 = _mm512_shuffle_i64x2(x2, x3, 0x44);
  const __m512i p2 = _mm512_shuffle_i64x2(x0, x1, 0xEE), p3 = _mm512_shuffle_i64x2(x2, x3, 0xEE);
  y0 = _mm512_shuffle_i64x2(p0, p1, 0x88);
  y1 = _mm512_shuffle_i64x2(p0, p1, 0xDD);
  y2 = _mm512_shuffle_i64x2(p2, p3, 0x88);
  y3 = _mm512_shuffle_i64x2(p2, p3, 0xDD);
}
// 8 registers, key l * 8 + j in lane l of register j  ->  key i in lane i % 32 of register i / 32.
KWKER_VQ_INLINE void transpose_8x32_epi16(__m512i *r) {
  transpose_8x8_blocks_epi16(r);
  // Output register u, block q = column 4u + q = block u / 2 of r[4 (u % 2) + q].
  __m512i o[8];
  transpose_4x4_blocks(r[0], r[1], r[2], r[3], o[0], o[2], o[4], o[6]);
  transpose_4x4_blocks(r[4], r[5], r[6], r[7], o[1], o[3], o[5], o[7]);
#pragma GCC unroll 8
  for (int u = 0; u < 8; ++u) r[u] = o[u];
}
// 16 registers, key l * 16 + j in lane l of register j  ->  key i in lane i % 32 of register i / 32.
KWKER_VQ_INLINE void transpose_16x32_epi16(__m512i *r) {
  transpose_8x8_blocks_epi16(r);
  transpose_8x8_blocks_epi16(r + 8);
  // Output register u = columns 2u, 2u + 1 (block u / 4, positions p = 2 (u % 4), p + 1), each
  // as inputs 0-7 (r[p]) then 8-15 (r[8 + p]).
  __m512i o[16];
#pragma GCC unroll 4
  for (int p = 0; p < 8; p += 2)
    transpose_4x4_blocks(r[p], r[8 + p], r[p + 1], r[9 + p], o[p / 2], o[4 + p / 2],
                         o[8 + p / 2], o[12 + p / 2]);
#pragma GCC unroll 16
  for (int u = 0; u < 16; ++u) r[u] = o[u];
}

template <> struct Ops<int16_t> {
  using T = int16_t;
  using Key = T;
  using V = __m512i;
  static constexpr size_t W = 32;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T *p) { return _mm512_loadu_si512(p); }
  static KWKER_VQ_INLINE void store(T *p, V v) { _mm512_storeu_si512(p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm512_set1_epi16(x); }
  static KWKER_VQ_INLINE __mmask32 first(size_t n) { return __mmask32((1u << n) - 1); }
  static KWKER_VQ_INLINE V load_partial(const T *p, size_t n) {
    return _mm512_mask_loadu_epi16(set1(Limits<T>::kMax), first(n), p);
  }
  static KWKER_VQ_INLINE void store_partial(T *p, V v, size_t n) {
    _mm512_mask_storeu_epi16(p, first(n), v);
  }
  static KWKER_VQ_INLINE void minmax(V a, V b, V &mn, V &mx) {
    mn = _mm512_min_epi16(a, b);
    mx = _mm512_ternarylogic_epi32(a, b, mn, 0x96);  // a ^ b ^ min: see Ops<int32_t>
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 2) return _mm512_shuffle_epi32(v, _MM_PERM_ENUM(0xB1));
    else if constexpr (M == 4) return _mm512_shuffle_epi32(v, _MM_PERM_ENUM(0x4E));
    else if constexpr (M < 8)
      return _mm512_shuffle_epi8(v, _mm512_broadcast_i32x4(shuf16_128(Shuf16Table<M>::value)));
    else if constexpr (M == 8) return _mm512_shuffle_i32x4(v, v, 0xB1);
    else if constexpr (M == 16) return _mm512_shuffle_i32x4(v, v, 0x4E);
    else if constexpr (M == 24) return _mm512_shuffle_i32x4(v, v, 0x1B);
    else {
      alignas(64) int16_t idx[32] = {};
      for (unsigned l = 0; l < 32; ++l) idx[l] = int16_t(l ^ M);
      return _mm512_permutexvar_epi16(_mm512_load_si512(idx), v);
    }
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);
    return _mm512_mask_max_epi16(_mm512_min_epi16(v, w),
                                 __mmask32(upper_lanes(32, highest_bit(M))), v, w);
  }
  // The transposed network (network-inl.h): 8 and 16 registers, 256 and 512 keys. Rows of 256
  // int16 on Zen 4: see the decision row in design.md.
  static constexpr bool kTransposedNetwork = true;
  static KWKER_VQ_INLINE void transpose_half(V *v) { transpose_16x32_epi16(v); }
  static KWKER_VQ_INLINE void transpose_quarter(V *v) { transpose_8x32_epi16(v); }
  // As Ops<int32_t>::cx_flip; the lane blend needs 16-bit masking, so the maxima come from a
  // masked vpmaxsw rather than the ternary-logic form.
  template <unsigned M> static KWKER_VQ_INLINE void cx_flip(V &a, V &b) {
    const V bp = perm_xor<M>(b);
    const V na = _mm512_mask_max_epi16(_mm512_min_epi16(a, bp),
                                       __mmask32(upper_lanes(32, highest_bit(M))), a, bp);
    b = perm_xor<M>(_mm512_ternarylogic_epi32(a, bp, na, 0x96));
    a = na;
  }
#if defined(__AVX512VBMI2__)
  // The quicksort's partition step on 32 lanes (only engines/avx512/sort16.cc is compiled with
  // VBMI2, core/sort16_compress.h). As Ops<int32_t>: compressed in registers, then stored; a
  // VPCOMPRESSW straight to memory is microcoded on Zen 4.
  static KWKER_VQ_INLINE void partition_store(V v, V pivot, T *&wl, T *&wr) {
    const __mmask32 gt = _mm512_cmpgt_epi16_mask(v, pivot);
    const unsigned nr = unsigned(__builtin_popcount(unsigned(gt)));
    _mm512_storeu_si512(wl, _mm512_maskz_compress_epi16(__mmask32(~gt), v));
    wl += W - nr;
    wr -= nr;
    _mm512_mask_storeu_epi16(wr, __mmask32(_bzhi_u32(~0u, nr)),
                             _mm512_maskz_compress_epi16(gt, v));
  }
#endif
};

#elif defined(__AVX2__)
// 8 registers, key l * 8 + j in lane l of register j  ->  key i in lane i % 16 of register i / 16.
KWKER_VQ_INLINE void transpose_8x16_epi16(__m256i *r) {
  transpose_8x8_halves_epi16(r);
  // Output u = lanes 2u, 2u + 1 (half u / 4, positions p = 2 (u % 4), p + 1).
  __m256i o[8];
#pragma GCC unroll 4
  for (int p = 0; p < 8; p += 2) {
    o[p / 2] = _mm256_permute2x128_si256(r[p], r[p + 1], 0x20);
    o[4 + p / 2] = _mm256_permute2x128_si256(r[p], r[p + 1], 0x31);
  }
#pragma GCC unroll 8
  for (int u = 0; u < 8; ++u) r[u] = o[u];
}
// 4 registers, key l * 4 + j in lane l of register j  ->  key i in lane i % 16 of register i / 16.
KWKER_VQ_INLINE void transpose_4x16_epi16(__m256i *r) {
  const __m256i a0 = _mm256_unpacklo_epi16(r[0], r[1]), a1 = _mm256_unpackhi_epi16(r[0], r[1]);
  const __m256i a2 = _mm256_unpacklo_epi16(r[2], r[3]), a3 = _mm256_unpackhi_epi16(r[2], r[3]);
  const __m256i b0 = _mm256_unpacklo_epi32(a0, a2), b1 = _mm256_unpackhi_epi32(a0, a2);  // lanes 0-3
  const __m256i b2 = _mm256_unpacklo_epi32(a1, a3), b3 = _mm256_unpackhi_epi32(a1, a3);  // lanes 4-7
  r[0] = _mm256_permute2x128_si256(b0, b1, 0x20);
  r[1] = _mm256_permute2x128_si256(b2, b3, 0x20);
  r[2] = _mm256_permute2x128_si256(b0, b1, 0x31);
  r[3] = _mm256_permute2x128_si256(b2, b3, 0x31);
}

template <> struct Ops<int16_t> {
  using T = int16_t;
  using Key = T;
  using V = __m256i;
  static constexpr size_t W = 16;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T *p) { return _mm256_loadu_si256((const __m256i *)p); }
  static KWKER_VQ_INLINE void store(T *p, V v) { _mm256_storeu_si256((__m256i *)p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm256_set1_epi16(x); }
  KWKER_PARTIAL16_VIA_BUFFER
  static KWKER_VQ_INLINE void minmax(V a, V b, V &mn, V &mx) {
    mn = _mm256_min_epi16(a, b);
    mx = _mm256_max_epi16(a, b);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M >= 8) v = _mm256_permute4x64_epi64(v, 0x4E);
    constexpr unsigned m = M & 7;
    if constexpr (m == 0) return v;
    else if constexpr (m == 2) return _mm256_shuffle_epi32(v, 0xB1);
    else if constexpr (m == 4) return _mm256_shuffle_epi32(v, 0x4E);
    else {
      const __m128i s = shuf16_128(Shuf16Table<m>::value);
      return _mm256_shuffle_epi8(v, _mm256_broadcastsi128_si256(s));
    }
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);
    constexpr unsigned H = highest_bit(M);
    alignas(32) int16_t up[16] = {};
    for (unsigned l = 0; l < 16; ++l) up[l] = (l & H) ? int16_t(-1) : int16_t(0);
    return _mm256_blendv_epi8(_mm256_min_epi16(v, w), _mm256_max_epi16(v, w),
                              _mm256_load_si256((const __m256i *)up));
  }
  // The transposed network (network-inl.h) for 4, 8 and 16 registers (64-256 keys).
  static constexpr bool kTransposedNetwork = true;
  static KWKER_VQ_INLINE void transpose_square(V *v) { transpose_16x16_epi16(v); }
  static KWKER_VQ_INLINE void transpose_half(V *v) { transpose_8x16_epi16(v); }
  static KWKER_VQ_INLINE void transpose_quarter(V *v) { transpose_4x16_epi16(v); }
  template <unsigned M> static KWKER_VQ_INLINE void cx_flip(V &a, V &b) {  // see Ops<int32_t>
    const V bp = perm_xor<M>(b);
    constexpr unsigned H = highest_bit(M);
    alignas(32) int16_t up[16] = {};
    for (unsigned l = 0; l < 16; ++l) up[l] = (l & H) ? int16_t(-1) : int16_t(0);
    const V mask = _mm256_load_si256((const __m256i *)up);
    const V mn = _mm256_min_epi16(a, bp), mx = _mm256_max_epi16(a, bp);
    a = _mm256_blendv_epi8(mn, mx, mask);
    b = perm_xor<M>(_mm256_blendv_epi8(mx, mn, mask));
  }
};

#elif defined(__SSE4_2__)
template <> struct Ops<int16_t> {
  using T = int16_t;
  using Key = T;
  using V = __m128i;
  static constexpr size_t W = 8;
  static constexpr size_t kUnroll = 6;
  static constexpr size_t kMaxVecs = 16;

  static KWKER_VQ_INLINE V load(const T *p) { return _mm_loadu_si128((const __m128i *)p); }
  static KWKER_VQ_INLINE void store(T *p, V v) { _mm_storeu_si128((__m128i *)p, v); }
  static KWKER_VQ_INLINE V set1(T x) { return _mm_set1_epi16(x); }
  KWKER_PARTIAL16_VIA_BUFFER
  static KWKER_VQ_INLINE void minmax(V a, V b, V &mn, V &mx) {
    mn = _mm_min_epi16(a, b);
    mx = _mm_max_epi16(a, b);
  }
  template <unsigned M> static KWKER_VQ_INLINE V perm_xor(V v) {
    if constexpr (M == 2) return _mm_shuffle_epi32(v, 0xB1);
    else if constexpr (M == 4) return _mm_shuffle_epi32(v, 0x4E);
    else return _mm_shuffle_epi8(v, shuf16_128(Shuf16Table<M>::value));
  }
  template <unsigned M> static KWKER_VQ_INLINE V cx_lanes(V v) {
    const V w = perm_xor<M>(v);
    constexpr unsigned H = highest_bit(M);
    constexpr int mask = int(upper_lanes(8, H));
    return _mm_blend_epi16(_mm_min_epi16(v, w), _mm_max_epi16(v, w), mask);
  }
};
#endif

#if defined(KWKER_PARTIAL16_VIA_BUFFER)
#undef KWKER_PARTIAL16_VIA_BUFFER
#endif

}  // namespace vq
}  // namespace KWKER_ENGINE_NS
}  // namespace kwker

#endif  // KWKER_CORE_SIMD16_INL_H_
