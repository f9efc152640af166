// The int8-activation kernels: prompt rows (m >= kLinPromptRows) in int8 / int4 on every engine,
// and every call of the A8 modes (core/linear_layout.h). x is quantised per row and 32-block to
// int8, each block's dot products are exact int32, then the fixed float steps of
// core/linear_prompt.h follow, so these kernels give the bits of the avx512 engine's AMX / VNNI
// prompt kernels (engines/avx512/linear_prompt.cc), which take prompts where the CPU has them.
// Prompts relay the weights into strips (below); the A8 decode step (fewer rows) streams the
// packed panels once (decode_row).
//
// AVX2 (the avx2 engine, and the avx512 engine on a CPU without VNNI): byte multiply-adds.
// int8: VPMADDUBSW wants one unsigned operand and saturates its 16-bit pair sums, so it takes
// |w| (0..128 as an unsigned byte) and x with w's sign (|x| <= 127): a pair sums to at most
// 2 x 128 x 127 = 32,512, exact; VPMADDWD by ones widens each block slice to int32. int4 (w in
// 0..15) feeds w and x straight in, and a block's eight slices add up in 16 bits (at most
// 8 x 2 x 15 x 127 = 30,480) before one widening. Other engines: the same integers in scalar
// code (sse4.2 and portable run prompts rarely; their float kernels were scalar too).
//
// Included inside namespace lin by core/linear-inl.h.

namespace intp {

constexpr int kCols = 16;                       // output columns per strip (4 panels)
constexpr int kPanels = kCols / NR;
constexpr int kSlices = kLinQ8Block / 4;        // 4-byte k slices per 32-block
constexpr int64_t kPlane = kSlices * kCols * 4; // one block's bytes of one plane (512)

// A strip's block b: int8 holds two planes, |w| as unsigned bytes then w itself; int4 one plane
// of w (0..15). In a plane, slice s (k = 4s..4s+3) of column c sits at (s * kCols + c) * 4, so
// 8 columns' slice is one 32-byte vector.
inline int64_t block_bytes(int mode) { return mode == kLinInt8 ? 2 * kPlane : kPlane; }

struct IJob {
  int mode;
  bool q40;     // int4 in the Q4_0 layout (float16 scales, min = -8 d; group 32)
  int64_t hdr;  // int4: bytes of a group's header (lin_int4_header)
  int64_t m, n, kp, nb, group, panel_bytes, npanels, nstrips;
  const int8_t *qx;    // m x kp
  const float *dx;     // m x nb
  const int32_t *qs;   // m x nb
  const uint8_t *packed;
  const float *bias;
  float *y;
  int ntasks;  // tasks the strips (prompts) or panels (the A8 decode step) are split into
  bool failed;
};

// ---- activations: Q8_0 blocks (dx = max|x| / 127, q = round-to-nearest-even(x * 127 / max|x|),
// clamped to +-127). max|x| is an integer max over the bit patterns, so a NaN or infinity is
// seen in any order: such a block gets dx = NaN (its outputs are NaN, as in float arithmetic);
// a block below 1e-30 in magnitude counts as zero (127 / max|x| would overflow).
inline bool block_scale(uint32_t bits, float &amax, float &dx) {
  std::memcpy(&amax, &bits, 4);
  if (bits >= 0x7F800000u || amax < 1e-30f) {
    dx = bits >= 0x7F800000u ? __builtin_nanf("") : 0.0f;
    return false;
  }
  dx = amax / 127.0f;
  return true;
}

inline void quantise_block_scalar(const float *x, int64_t valid, int8_t *q, float &dx,
                                  int32_t &qs) {
  float v[kLinQ8Block];
  uint32_t bits = 0;
  for (int i = 0; i < kLinQ8Block; ++i) {
    v[i] = i < valid ? x[i] : 0.0f;
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    u &= 0x7FFFFFFFu;
    if (u > bits) bits = u;
  }
  float amax;
  qs = 0;
  if (!block_scale(bits, amax, dx)) {
    std::memset(q, 0, kLinQ8Block);
    return;
  }
  const float id = 127.0f / amax;
  for (int i = 0; i < kLinQ8Block; ++i) {
    int r = int(std::nearbyint(v[i] * id));  // the default rounding: to nearest even
    r = r < -127 ? -127 : (r > 127 ? 127 : r);
    q[i] = int8_t(r);
    qs += r;
  }
}

#if defined(__AVX2__)
inline int32_t hsum_epi32(__m256i v) {
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
  return _mm_cvtsi128_si32(t);
}

inline void quantise_block(const float *x, int64_t valid, int8_t *q, float &dx, int32_t &qs) {
  if (valid < kLinQ8Block) return quantise_block_scalar(x, valid, q, dx, qs);
  __m256 v[4];
  const __m256i absm = _mm256_set1_epi32(0x7FFFFFFF);
  __m256i a = _mm256_setzero_si256();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    a = _mm256_max_epu32(a, _mm256_and_si256(_mm256_castps_si256(v[i]), absm));
  }
  __m128i t = _mm_max_epu32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  t = _mm_max_epu32(t, _mm_shuffle_epi32(t, 0x4E));
  t = _mm_max_epu32(t, _mm_shuffle_epi32(t, 0xB1));
  float amax;
  qs = 0;
  if (!block_scale(uint32_t(_mm_cvtsi128_si32(t)), amax, dx)) {
    std::memset(q, 0, kLinQ8Block);
    return;
  }
  const __m256 id = _mm256_set1_ps(127.0f / amax);
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  __m256i iv[4];
  for (int i = 0; i < 4; ++i)  // cvtps rounds to nearest even, as nearbyint above
    iv[i] = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v[i], id)), lo), hi);
  qs = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(iv[0], iv[1]), _mm256_add_epi32(iv[2], iv[3])));
  // packs interleave the 128-bit lanes: dwords come out as elements 0,8,16,24,4,12,20,28 (x4).
  const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(iv[0], iv[1]), _mm256_packs_epi32(iv[2], iv[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(q),
                      _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}
#else
inline void quantise_block(const float *x, int64_t valid, int8_t *q, float &dx, int32_t &qs) {
  quantise_block_scalar(x, valid, q, dx, qs);
}
#endif

struct QuantRows {
  const float *x;
  int64_t k, kp, nb, m;
  int8_t *qx;
  float *dx;
  int32_t *qs;
  int ntasks;
};

inline void quantise_task(void *ctx, int task) {
  const QuantRows &q = *static_cast<const QuantRows *>(ctx);
  const int64_t r0 = q.m * task / q.ntasks, r1 = q.m * (task + 1) / q.ntasks;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t b = 0; b < q.nb; ++b)
      quantise_block(q.x + r * q.k + b * kLinQ8Block, q.k - b * kLinQ8Block,
                     q.qx + r * q.kp + b * kLinQ8Block, q.dx[r * q.nb + b], q.qs[r * q.nb + b]);
}

// ---- weights: panels [4 strip, 4 strip + 4) into the strip layout above, with each block's
// scales (int4: its group's scale and minimum) per column; columns past n are zero.
// w[j][i]: element i of panel column j in block b (int4 unpacked to 0..15).
inline void block_values(const IJob &jb, int64_t p, int64_t b, int w[NR][kLinQ8Block], float sc[NR],
                         float mn[NR]) {
  if (jb.mode == kLinInt8) {
    const uint8_t *pb = jb.packed + p * jb.panel_bytes + b * kLinQ8PanelBlockBytes;
    std::memcpy(sc, pb, 4 * NR);
    const int8_t *q = reinterpret_cast<const int8_t *>(pb + NR * 4);
    for (int j = 0; j < NR; ++j)
      for (int i = 0; i < kLinQ8Block; ++i) w[j][i] = q[j * kLinQ8Block + i];
    return;
  }
  const int64_t g = b * kLinQ8Block / jb.group, in = b * kLinQ8Block % jb.group;
  const uint8_t *gp = jb.packed + p * jb.panel_bytes + g * (jb.hdr + NR * jb.group / 2);
  lin_int4_scales(gp, jb.q40, sc, mn);
  for (int j = 0; j < NR; ++j) {
    const uint8_t *q = gp + jb.hdr + j * (jb.group / 2) + in / 2;
    for (int i = 0; i < 16; ++i) {
      w[j][i] = q[i] & 15;
      w[j][i + 16] = q[i] >> 4;
    }
  }
}

#if defined(__AVX2__)
// Four columns' 32 bytes of a block (c[j], 8 dwords each) to slices: dword s of every column,
// 16 bytes, at dst + s * kCols * 4 (a 4 x 8 transpose of dwords).
inline void put_panel(const __m256i c[NR], uint8_t *dst) {
  const __m256i t0 = _mm256_unpacklo_epi32(c[0], c[1]), t1 = _mm256_unpackhi_epi32(c[0], c[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(c[2], c[3]), t3 = _mm256_unpackhi_epi32(c[2], c[3]);
  const __m256i u[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2),
                        _mm256_unpacklo_epi64(t1, t3), _mm256_unpackhi_epi64(t1, t3)};
  for (int i = 0; i < 4; ++i) {  // u[i]: slice i in the low 128 bits, slice i + 4 in the high
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i * kCols * 4), _mm256_castsi256_si128(u[i]));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + (i + 4) * kCols * 4),
                     _mm256_extracti128_si256(u[i], 1));
  }
}

inline void load_panel_block(const IJob &jb, int64_t p, int64_t b, uint8_t *blk, float *sc, float *mn) {
  __m256i c[NR];
  if (jb.mode == kLinInt8) {
    const uint8_t *pb = jb.packed + p * jb.panel_bytes + b * kLinQ8PanelBlockBytes;
    std::memcpy(sc, pb, 4 * NR);
    for (int j = 0; j < NR; ++j) c[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(pb + NR * 4 + j * kLinQ8Block));
    put_panel(c, blk + kPlane);
    for (int j = 0; j < NR; ++j) c[j] = _mm256_abs_epi8(c[j]);  // -128 -> 0x80, 128 unsigned
    put_panel(c, blk);
    return;
  }
  const int64_t g = b * kLinQ8Block / jb.group, in = b * kLinQ8Block % jb.group;
  const uint8_t *gp = jb.packed + p * jb.panel_bytes + g * (jb.hdr + NR * jb.group / 2);
  if (jb.q40) int4_scales<true>(gp, sc, mn);
  else int4_scales<false>(gp, sc, mn);
  const __m128i low = _mm_set1_epi8(15);
  for (int j = 0; j < NR; ++j) {  // 16 bytes: elements 0-15 in the low nibbles, 16-31 high
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i *>(gp + jb.hdr + j * (jb.group / 2) + in / 2));
    c[j] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low), _mm_and_si128(q, low));
  }
  put_panel(c, blk);
}
#else
inline void load_panel_block(const IJob &jb, int64_t p, int64_t b, uint8_t *blk, float *sc, float *mn) {
  int w[NR][kLinQ8Block];
  block_values(jb, p, b, w, sc, mn);
  for (int j = 0; j < NR; ++j)
    for (int s = 0; s < kSlices; ++s)
      for (int t = 0; t < 4; ++t) {
        const int v = w[j][4 * s + t];
        const int64_t at = (s * kCols + j) * 4 + t;
        if (jb.mode == kLinInt8) {
          blk[at] = uint8_t(v < 0 ? -v : v);  // |-128| = 128 fits an unsigned byte
          blk[kPlane + at] = uint8_t(int8_t(v));
        } else {
          blk[at] = uint8_t(v);
        }
      }
}
#endif

inline void load_strip(const IJob &jb, int64_t strip, uint8_t *sb, float *scale, float *mins) {
  const int64_t bb = block_bytes(jb.mode);
  for (int64_t b = 0; b < jb.nb; ++b) {
    uint8_t *blk = sb + b * bb;
    for (int pp = 0; pp < kPanels; ++pp) {
      const int64_t p = strip * kPanels + pp;
      float sc[NR] = {0, 0, 0, 0}, mn[NR] = {0, 0, 0, 0};
      if (p < jb.npanels) {
        load_panel_block(jb, p, b, blk + pp * NR * 4, sc, mn);
      } else {  // zero columns past n
        for (int s = 0; s < kSlices; ++s)
          for (int64_t pl = 0; pl < bb; pl += kPlane)
            std::memset(blk + pl + (s * kCols + pp * NR) * 4, 0, NR * 4);
      }
      std::memcpy(scale + b * kCols + pp * NR, sc, sizeof(sc));
      if (mins) std::memcpy(mins + b * kCols + pp * NR, mn, sizeof(mn));
    }
  }
}

// y[row, c0 .. c0 + width) = acc + bias, within y's n columns.
inline void store(const IJob &jb, int64_t c0, int width, int64_t row, const float *acc) {
  const int nc = int(jb.n - c0 < width ? jb.n - c0 : width);
  float *yr = jb.y + row * jb.n + c0;
  if (jb.bias)
    for (int c = 0; c < nc; ++c) yr[c] = acc[c] + jb.bias[c0 + c];
  else
    for (int c = 0; c < nc; ++c) yr[c] = acc[c];
}

#if defined(__AVX2__)
// R rows (r0 ..) of one strip: per block, the exact int32 dot products of 16 columns (two
// 8-lane vectors), then acc = fma(float(isum), scale * dx, acc) (int4: + fma(float(qs),
// min * dx, acc)), as the VNNI kernel's combine().
template <int MODE, int R>
void strip_rows(const IJob &jb, const uint8_t *sb, const float *scale, const float *mins,
                int64_t strip, int64_t r0) {
  constexpr int64_t bb = MODE == kLinInt8 ? 2 * kPlane : kPlane;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const int8_t *xr[R];
  for (int r = 0; r < R; ++r) xr[r] = jb.qx + (r0 + r) * jb.kp;
  for (int64_t b = 0; b < jb.nb; ++b) {
    const uint8_t *blk = sb + b * bb;
    __m256i is[R][2];
    for (int r = 0; r < R; ++r) is[r][0] = is[r][1] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int s = 0; s < kSlices; ++s) {
      const __m256i *pl = reinterpret_cast<const __m256i *>(blk + s * kCols * 4);
      const __m256i w0 = _mm256_load_si256(pl), w1 = _mm256_load_si256(pl + 1);
      if constexpr (MODE == kLinInt8) {
        const __m256i *ps = reinterpret_cast<const __m256i *>(blk + kPlane + s * kCols * 4);
        const __m256i sw0 = _mm256_load_si256(ps), sw1 = _mm256_load_si256(ps + 1);
        for (int r = 0; r < R; ++r) {
          int32_t x4;
          std::memcpy(&x4, xr[r] + b * kLinQ8Block + 4 * s, 4);
          const __m256i xb = _mm256_set1_epi32(x4);
          is[r][0] = _mm256_add_epi32(
              is[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(w0, _mm256_sign_epi8(xb, sw0)), ones));
          is[r][1] = _mm256_add_epi32(
              is[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(w1, _mm256_sign_epi8(xb, sw1)), ones));
        }
      } else {  // 16-bit sums over the block's slices
        for (int r = 0; r < R; ++r) {
          int32_t x4;
          std::memcpy(&x4, xr[r] + b * kLinQ8Block + 4 * s, 4);
          const __m256i xb = _mm256_set1_epi32(x4);
          is[r][0] = _mm256_add_epi16(is[r][0], _mm256_maddubs_epi16(w0, xb));
          is[r][1] = _mm256_add_epi16(is[r][1], _mm256_maddubs_epi16(w1, xb));
        }
      }
    }
    const __m256 sc0 = _mm256_load_ps(scale + b * kCols), sc1 = _mm256_load_ps(scale + b * kCols + 8);
    for (int r = 0; r < R; ++r) {
      const int64_t row = r0 + r;
      const __m256 vdx = _mm256_set1_ps(jb.dx[row * jb.nb + b]);
      if constexpr (MODE != kLinInt8) {
        is[r][0] = _mm256_madd_epi16(is[r][0], ones);
        is[r][1] = _mm256_madd_epi16(is[r][1], ones);
      }
      acc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[r][0]), _mm256_mul_ps(sc0, vdx), acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[r][1]), _mm256_mul_ps(sc1, vdx), acc[r][1]);
      if constexpr (MODE != kLinInt8) {
        const __m256 q = _mm256_set1_ps(float(jb.qs[row * jb.nb + b]));
        acc[r][0] = _mm256_fmadd_ps(q, _mm256_mul_ps(_mm256_load_ps(mins + b * kCols), vdx), acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(q, _mm256_mul_ps(_mm256_load_ps(mins + b * kCols + 8), vdx), acc[r][1]);
      }
    }
  }
  for (int r = 0; r < R && r0 + r < jb.m; ++r) {
    alignas(32) float out[kCols];
    _mm256_store_ps(out, acc[r][0]);
    _mm256_store_ps(out + 8, acc[r][1]);
    store(jb, strip * kCols, kCols, r0 + r, out);
  }
}
constexpr int kRows = 2;  // 2 rows x 2 vectors: 4 int32 sums and 4 float accumulators in 16 ymm
#else
template <int MODE, int R>
void strip_rows(const IJob &jb, const uint8_t *sb, const float *scale, const float *mins,
                int64_t strip, int64_t r0) {
  constexpr int64_t bb = MODE == kLinInt8 ? 2 * kPlane : kPlane;
  constexpr int64_t wplane = MODE == kLinInt8 ? kPlane : 0;  // the signed plane for int8
  const int8_t *xr = jb.qx + r0 * jb.kp;
  float acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = 0.0f;
  for (int64_t b = 0; b < jb.nb; ++b) {
    const uint8_t *w = sb + b * bb + wplane;
    const int8_t *xb = xr + b * kLinQ8Block;
    const float dx = jb.dx[r0 * jb.nb + b];
    for (int c = 0; c < kCols; ++c) {
      int32_t isum = 0;
      for (int s = 0; s < kSlices; ++s)
        for (int t = 0; t < 4; ++t) {
          const uint8_t v = w[(s * kCols + c) * 4 + t];
          isum += (MODE == kLinInt8 ? int32_t(int8_t(v)) : int32_t(v)) * int32_t(xb[4 * s + t]);
        }
      const float sdx = scale[b * kCols + c] * dx;
      acc[c] = std::fma(float(isum), sdx, acc[c]);
      if (MODE != kLinInt8) {
        const float mdx = mins[b * kCols + c] * dx;
        acc[c] = std::fma(float(jb.qs[r0 * jb.nb + b]), mdx, acc[c]);
      }
    }
  }
  store(jb, strip * kCols, kCols, r0, acc);
}
constexpr int kRows = 1;
#endif

template <int MODE>
void strip_all_rows(const IJob &jb, const uint8_t *sb, const float *scale, const float *mins,
                    int64_t strip) {
  int64_t r = 0;
  for (; r + kRows <= jb.m; r += kRows) strip_rows<MODE, kRows>(jb, sb, scale, mins, strip, r);
  for (; r < jb.m; ++r) strip_rows<MODE, 1>(jb, sb, scale, mins, strip, r);
}

inline void int_task(void *ctx, int task) {
  IJob &jb = *static_cast<IJob *>(ctx);
  const int64_t s0 = jb.nstrips * task / jb.ntasks, s1 = jb.nstrips * (task + 1) / jb.ntasks;
  if (s0 >= s1) return;
  const int64_t wbytes = jb.nb * block_bytes(jb.mode), fbytes = jb.nb * kCols * 4;
  uint8_t *mem = static_cast<uint8_t *>(std::aligned_alloc(64, size_t(wbytes + 2 * fbytes)));
  if (!mem) {
    jb.failed = true;
    return;
  }
  float *scale = reinterpret_cast<float *>(mem + wbytes);
  float *mins = jb.mode == kLinInt4 ? scale + jb.nb * kCols : nullptr;
  for (int64_t st = s0; st < s1; ++st) {
    load_strip(jb, st, mem, scale, mins);
    if (jb.mode == kLinInt8) strip_all_rows<kLinInt8>(jb, mem, scale, mins, st);
    else strip_all_rows<kLinInt4>(jb, mem, scale, mins, st);
  }
  std::free(mem);
}

// ---- the A8 modes' decode step (fewer than kLinPromptRows rows): the weights streamed once
// from their packed panels (no strip), each panel's 4 columns per block reduced to 4 exact int32
// sums, then the same float steps as strip_rows, so a row gets the same bits at any row count.
#if defined(__AVX2__)
// int4: two columns' 16 bytes of one 32-block (wb: one column per 128-bit lane) against x's two
// halves, as 16-bit sums of 4 products each (at most 4 x 15 x 127).
inline __m256i int4_pair16(__m256i wb, __m256i xlo, __m256i xhi) {
  const __m256i low = _mm256_set1_epi8(15);
  const __m256i lo = _mm256_and_si256(wb, low), hi = _mm256_and_si256(_mm256_srli_epi16(wb, 4), low);
  return _mm256_add_epi16(_mm256_maddubs_epi16(lo, xlo), _mm256_maddubs_epi16(hi, xhi));
}

// int4: the 16-bit pair sums of columns 2h and 2h + 1 of one 32-block, widened to int32: column
// 2h in the low 128-bit lane, 2h + 1 in the high one (gp: the panel's group, in: the block in it).
inline __m256i int4_column_pair(const IJob &jb, const uint8_t *gp, int64_t in, int h, __m256i xlo,
                                __m256i xhi) {
  const uint8_t *qb = gp + jb.hdr + 2 * h * (jb.group / 2) + in * 16;
  const __m256i wb = _mm256_loadu2_m128i(reinterpret_cast<const __m128i *>(qb + jb.group / 2),
                                         reinterpret_cast<const __m128i *>(qb));
  return _mm256_madd_epi16(int4_pair16(wb, xlo, xhi), _mm256_set1_epi16(1));
}

// int4_header4 (core/linear-inl.h) with the layout known at run time.
inline void int4_header4(const IJob &jb, const uint8_t *gp, __m128 &sc, __m128 &mn) {
  if (jb.q40) lin::int4_header4<true>(gp, sc, mn);
  else lin::int4_header4<false>(gp, sc, mn);
}

// One row of NP panels (4 NP columns) over all blocks. int8: one column's 32 bytes per vector,
// |w| x sign(x, w) as in strip_rows. int4: two columns per vector, column j's low nibbles
// (elements 0-15) and high nibbles (16-31) in 128-bit lane j % 2 of two vectors against x's
// two halves broadcast to both lanes (half the instructions of one column per vector); their
// 16-bit sums (at most 2 x 2 x 15 x 127) add before widening. Rows past the first re-read the
// panel's weights from L1 / L2. NP panels at once (two independent float chains per block) was
// measured slower where the weights come from memory (int8 8,192 x 4,096: 1.5 -> 1.1x the float
// kernels), so the kernel runs NP = 1.
template <int MODE, int NP>
void decode_row(const IJob &jb, int64_t p, int64_t r) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t bpg = MODE == kLinInt8 ? 1 : jb.group / kLinQ8Block;  // blocks per group
  const int64_t gbytes = MODE == kLinInt8 ? kLinQ8PanelBlockBytes : jb.hdr + NR * jb.group / 2;
  const int8_t *xrow = jb.qx + r * jb.kp;
  const float *dxr = jb.dx + r * jb.nb;
  const int32_t *qsr = jb.qs + r * jb.nb;
  __m128 acc[NP];
  for (int q = 0; q < NP; ++q) acc[q] = _mm_setzero_ps();
  for (int64_t g = 0, b = 0; g < jb.nb / bpg; ++g) {
    const uint8_t *gp[NP];
    __m128 sc[NP], mn[NP];
    for (int q = 0; q < NP; ++q) {
      gp[q] = jb.packed + (p + q) * jb.panel_bytes + g * gbytes;
      if (r == 0) prefetch_ahead<kLinPrefetchQuant>(gp[q], gbytes, lin_stream_once(jb.m));
      if constexpr (MODE == kLinInt8) sc[q] = _mm_loadu_ps(reinterpret_cast<const float *>(gp[q]));
      else int4_header4(jb, gp[q], sc[q], mn[q]);
    }
    for (int64_t in = 0; in < bpg; ++in, ++b) {
      const int8_t *xr = xrow + b * kLinQ8Block;
      const __m128 vdx = _mm_set1_ps(dxr[b]);
      if constexpr (MODE == kLinInt8) {
        const __m256i xb = _mm256_load_si256(reinterpret_cast<const __m256i *>(xr));
        for (int q = 0; q < NP; ++q) {
          __m256i v[NR];
          for (int j = 0; j < NR; ++j) {
            const __m256i w = _mm256_loadu_si256(
                reinterpret_cast<const __m256i *>(gp[q] + NR * 4 + j * kLinQ8Block));
            // abs: -128 -> 0x80, 128 as an unsigned byte
            v[j] = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(xb, w)), ones);
          }
          // Each column's 8 partial sums to one (integer adds: any order gives the same sum).
          const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
          const __m128i isum = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
          acc[q] = _mm_fmadd_ps(_mm_cvtepi32_ps(isum), _mm_mul_ps(sc[q], vdx), acc[q]);
        }
      } else {
        const __m256i xlo = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i *>(xr)));
        const __m256i xhi = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i *>(xr + 16)));
        const __m128 qs = _mm_set1_ps(float(qsr[b]));
        for (int q = 0; q < NP; ++q) {
          __m256i v[2];
          for (int h = 0; h < 2; ++h) v[h] = int4_column_pair(jb, gp[q], in, h, xlo, xhi);
          // lane 0: columns 0 and 2, lane 1: columns 1 and 3 -> [c0, c2, ..] / [c1, c3, ..]
          const __m256i t = _mm256_hadd_epi32(v[0], v[1]);
          const __m256i u = _mm256_hadd_epi32(t, t);
          const __m128i isum = _mm_unpacklo_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
          acc[q] = _mm_fmadd_ps(_mm_cvtepi32_ps(isum), _mm_mul_ps(sc[q], vdx), acc[q]);
          acc[q] = _mm_fmadd_ps(qs, _mm_mul_ps(mn[q], vdx), acc[q]);
        }
      }
    }
  }
  for (int q = 0; q < NP; ++q) {
    alignas(16) float out[NR];
    _mm_store_ps(out, acc[q]);
    store(jb, (p + q) * NR, NR, r, out);
  }
}

// The float steps of one block for 8 columns (two panels), isum in column order: each column's
// as decode_row's (scale, then the min term).
inline __m256 int4_combine8(__m256 acc, __m256i isum, __m256 sc, __m256 mn, __m256 vdx, int32_t qs) {
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(sc, vdx), acc);
  return _mm256_fmadd_ps(_mm256_set1_ps(float(qs)), _mm256_mul_ps(mn, vdx), acc);
}

// Row r's outputs of panels p and p + 1.
inline void store_pair8(const IJob &jb, int64_t p, int64_t r, __m256 acc) {
  alignas(32) float out[2 * NR];
  _mm256_store_ps(out, acc);
  store(jb, p * NR, NR, r, out);
  store(jb, (p + 1) * NR, NR, r, out + NR);
}

// Two adjacent int4 panels (8 columns) of one row with their float steps in 256-bit vectors: per
// block one reduction and one combine for 8 columns instead of two of each for 4, and half the
// dependent multiply-adds per weight byte. Each column's float operations, and so its bits, are
// decode_row's; only the lanes that hold them change (2-vCPU AMD EPYC Zen 3, 1,536 x 576 and
// 2,816 x 1,024 from cache, one thread: 1.10-1.13x, builds alternating in separate processes).
// int8 paired measured 0.91-0.95x streaming from memory (its wider blocks keep 2 x 4 + 2 vectors
// of products live, and its float steps were a smaller share), so it keeps NP = 1.
inline void decode_row_pair_int4(const IJob &jb, int64_t p, int64_t r) {
  const int64_t bpg = jb.group / kLinQ8Block;
  const int64_t gbytes = jb.hdr + NR * jb.group / 2;
  const int8_t *xrow = jb.qx + r * jb.kp;
  const float *dxr = jb.dx + r * jb.nb;
  const int32_t *qsr = jb.qs + r * jb.nb;
  // The last reduction leaves [P0 P2 Q0 Q2 | P1 P3 Q1 Q3]; this puts the columns in order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t g = 0, b = 0; g < jb.nb / bpg; ++g) {
    const uint8_t *gp[2];
    for (int q = 0; q < 2; ++q) {
      gp[q] = jb.packed + (p + q) * jb.panel_bytes + g * gbytes;
      if (r == 0) prefetch_ahead<kLinPrefetchQuant>(gp[q], gbytes, lin_stream_once(jb.m));
    }
    __m128 s0, m0, s1, m1;
    int4_header4(jb, gp[0], s0, m0);
    int4_header4(jb, gp[1], s1, m1);
    const __m256 sc = _mm256_set_m128(s1, s0), mn = _mm256_set_m128(m1, m0);
    for (int64_t in = 0; in < bpg; ++in, ++b) {
      const int8_t *xr = xrow + b * kLinQ8Block;
      const __m256 vdx = _mm256_set1_ps(dxr[b]);
      const __m256i xlo = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i *>(xr)));
      const __m256i xhi = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i *>(xr + 16)));
      __m256i t[2];
      for (int q = 0; q < 2; ++q)
        t[q] = _mm256_hadd_epi32(int4_column_pair(jb, gp[q], in, 0, xlo, xhi),
                                 int4_column_pair(jb, gp[q], in, 1, xlo, xhi));
      const __m256i isum = _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(t[0], t[1]), order);
      acc = int4_combine8(acc, isum, sc, mn, vdx, qsr[b]);
    }
  }
  store_pair8(jb, p, r, acc);
}

// decode_row_pair_int4 for group 32 (GGUF's Q4_0 / Q4_1 blocks): a group is one block, 96 bytes
// per panel (4 scales, 4 mins, 4 columns x 16 bytes; Q40: 72, 4 float16 scales), so columns 2h
// and 2h + 1 are one 32-byte load and the loop walks both panels with two pointers. The general kernel's per-group set-up
// (group and panel offsets, a prefetch loop, the inner loop over one block) ran once per block
// here and spilled its pointers to the stack: about 40 cycles per 8 columns x 32 weights on a
// Zen 3. The same operations per column in the same order, so the same bits.
template <bool Q40>
void decode_row_pair_int4_g32(const IJob &jb, int64_t p, int64_t r) {
  constexpr int64_t kHdr = lin_int4_header(Q40), kBytes = kHdr + NR * kLinQ8Block / 2;  // one block of one panel
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const uint8_t *a = jb.packed + p * jb.panel_bytes, *b = a + jb.panel_bytes;
  const int8_t *xr = jb.qx + r * jb.kp;
  const float *dxr = jb.dx + r * jb.nb;
  const int32_t *qsr = jb.qs + r * jb.nb;
  const bool first = r == 0, once = lin_stream_once(jb.m);
  // Columns 2h, 2h + 1 of the block at q: one 32-byte load.
  auto pair = [](const uint8_t *q, __m256i xlo, __m256i xhi) {
    return int4_pair16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(q)), xlo, xhi);
  };
  __m256 acc = _mm256_setzero_ps();
  for (int64_t blk = 0; blk < jb.nb; ++blk, a += kBytes, b += kBytes, xr += kLinQ8Block) {
    if (first) {
      prefetch_ahead<kLinPrefetchQuant>(a, kBytes, once);
      prefetch_ahead<kLinPrefetchQuant>(b, kBytes, once);
    }
    const __m256 vdx = _mm256_set1_ps(dxr[blk]);
    const __m256i xlo = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i *>(xr)));
    const __m256i xhi = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i *>(xr + 16)));
    __m256 sc, mn;
    if constexpr (Q40) {  // both panels' 4 float16 scales: one 16-byte conversion
      const __m128i h = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(a)),
                                           _mm_loadl_epi64(reinterpret_cast<const __m128i *>(b)));
      sc = _mm256_cvtph_ps(h);
      mn = _mm256_mul_ps(sc, _mm256_set1_ps(-8.0f));
    } else {
      sc = _mm256_loadu2_m128(reinterpret_cast<const float *>(b), reinterpret_cast<const float *>(a));
      mn = _mm256_loadu2_m128(reinterpret_cast<const float *>(b + NR * 4),
                              reinterpret_cast<const float *>(a + NR * 4));
    }
    // Two 16-bit pairwise adds leave each column's 32 products in two lanes of at most 16
    // (30,480: no wrap), one widening adds those: three adds and one widening for 8 columns
    // where widening each pair first took four and three.
    const __m256i ta = _mm256_hadd_epi16(pair(a + kHdr, xlo, xhi), pair(a + kHdr + 32, xlo, xhi));
    const __m256i tb = _mm256_hadd_epi16(pair(b + kHdr, xlo, xhi), pair(b + kHdr + 32, xlo, xhi));
    const __m256i isum =
        _mm256_permutevar8x32_epi32(_mm256_madd_epi16(_mm256_hadd_epi16(ta, tb), ones), order);
    acc = int4_combine8(acc, isum, sc, mn, vdx, qsr[blk]);
  }
  store_pair8(jb, p, r, acc);
}

template <int MODE>
void decode_panels(const IJob &jb, int64_t p0, int64_t p1) {
  int64_t p = p0;
  if constexpr (MODE != kLinInt8) {
    if (jb.q40)
      for (; p + 1 < p1; p += 2)
        for (int64_t r = 0; r < jb.m; ++r) decode_row_pair_int4_g32<true>(jb, p, r);
    else if (jb.group == kLinQ8Block)
      for (; p + 1 < p1; p += 2)
        for (int64_t r = 0; r < jb.m; ++r) decode_row_pair_int4_g32<false>(jb, p, r);
    for (; p + 1 < p1; p += 2)
      for (int64_t r = 0; r < jb.m; ++r) decode_row_pair_int4(jb, p, r);
  }
  for (; p < p1; ++p)
    for (int64_t r = 0; r < jb.m; ++r) decode_row<MODE, 1>(jb, p, r);
}
#else
template <int MODE>
void decode_panel(const IJob &jb, int64_t p) {
  float acc[kLinPromptRows][NR] = {};
  for (int64_t b = 0; b < jb.nb; ++b) {
    int w[NR][kLinQ8Block];
    float sc[NR], mn[NR] = {0, 0, 0, 0};
    block_values(jb, p, b, w, sc, mn);
    for (int64_t r = 0; r < jb.m; ++r) {
      const int8_t *xb = jb.qx + r * jb.kp + b * kLinQ8Block;
      const float dx = jb.dx[r * jb.nb + b];
      for (int j = 0; j < NR; ++j) {
        int32_t isum = 0;
        for (int i = 0; i < kLinQ8Block; ++i) isum += w[j][i] * int32_t(xb[i]);
        const float sdx = sc[j] * dx;
        acc[r][j] = std::fma(float(isum), sdx, acc[r][j]);
        if (MODE != kLinInt8) {
          const float mdx = mn[j] * dx;
          acc[r][j] = std::fma(float(jb.qs[r * jb.nb + b]), mdx, acc[r][j]);
        }
      }
    }
  }
  for (int64_t r = 0; r < jb.m; ++r) store(jb, p * NR, NR, r, acc[r]);
}

template <int MODE>
void decode_panels(const IJob &jb, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) decode_panel<MODE>(jb, p);
}
#endif

inline void decode_task(void *ctx, int task) {
  const IJob &jb = *static_cast<const IJob *>(ctx);
  const int64_t p0 = jb.npanels * task / jb.ntasks, p1 = jb.npanels * (task + 1) / jb.ntasks;
  if (jb.mode == kLinInt8) decode_panels<kLinInt8>(jb, p0, p1);
  else decode_panels<kLinInt4>(jb, p0, p1);
}

// mode: kLinInt8 or kLinInt4 (the layout; int4 may carry the Q4_0 flag). Fewer than kLinPromptRows rows (the A8 modes' decode
// step) stream the panels; more go through strips. 0 done, -1 out of memory.
inline int run(CallCtx &ctx, int mode, const float *x, int64_t m, int64_t k, const void *packed,
               int64_t n, int64_t group, const float *bias, float *y) {
  IJob jb;
  jb.q40 = lin_q40(mode);
  jb.hdr = lin_int4_header(jb.q40);
  jb.kp = lin_padded_k(mode, k, group);
  jb.panel_bytes = lin_panel_bytes(mode, jb.kp, group);  // before the flag is stripped
  mode = lin_mode(mode);
  jb.mode = mode;
  jb.m = m;
  jb.n = n;
  jb.nb = jb.kp / kLinQ8Block;
  jb.group = group;
  jb.npanels = (n + NR - 1) / NR;
  jb.nstrips = (jb.npanels + kPanels - 1) / kPanels;
  jb.packed = static_cast<const uint8_t *>(packed);
  jb.bias = bias;
  jb.y = y;
  jb.failed = false;
  const size_t qbytes = size_t(lin_round_up(m * jb.kp, 64));
  uint8_t *mem = static_cast<uint8_t *>(std::aligned_alloc(64, qbytes + size_t(m * jb.nb * 8)));
  if (!mem) return -1;
  int8_t *qx = reinterpret_cast<int8_t *>(mem);
  float *dx = reinterpret_cast<float *>(mem + qbytes);
  int32_t *qs = reinterpret_cast<int32_t *>(dx + m * jb.nb);
  // Quantising x is about a tenth of a small prompt call: the threads share it from 64 rows.
  QuantRows qr{x, k, jb.kp, jb.nb, m, qx, dx, qs, 1};
  const int64_t qt = m / 64;
  qr.ntasks = int(qt < 1 ? 1 : (qt < ctx.threads ? qt : ctx.threads));
  if (qr.ntasks > 1) rt::run_parallel(qr.ntasks, quantise_task, &qr);
  else quantise_task(&qr, 0);
  jb.qx = qx;
  jb.dx = dx;
  jb.qs = qs;
  // Threads and chunks by the flagless layout's bytes: the Q4_0 layout streams fewer bytes for
  // the same multiply-adds, and by its own bytes SmolLM2's 576 x 576 layers ran on one thread
  // (120 layers, one row, two threads: 0.93x the flagless layout's time; by these 1.0x+).
  const int64_t work_panel = lin_panel_bytes(mode, jb.kp, group);
  if (m < kLinPromptRows) {
    const int64_t work = work_panel * jb.npanels;
    const int threads = lin_threads(ctx.threads, work, jb.npanels);
    jb.ntasks = int(lin_chunks(threads, work, jb.npanels));
    ctx.used_threads = threads;
    rt::run_parallel_shared(threads, jb.ntasks, decode_task, &jb);
    std::free(mem);
    return 0;
  }
  // Strips in chunks taken as threads come free (rt::run_parallel_shared), up to
  // kLinChunksPerThread per thread: beside a busy process a fixed half per thread left the
  // call waiting for the preempted half (2 threads no faster than 1, 2816 x 1024, 16-256 rows).
  const int threads = lin_threads(ctx.threads, work_panel * jb.npanels * (m / 16), jb.nstrips);
  const int64_t chunks = threads * int64_t(kLinChunksPerThread);
  jb.ntasks = threads <= 1 ? 1 : int(chunks < jb.nstrips ? chunks : jb.nstrips);
  ctx.used_threads = threads;
  rt::run_parallel_shared(threads, jb.ntasks, int_task, &jb);
  std::free(mem);
  return jb.failed ? -1 : 0;
}

#if defined(__AVX2__)
constexpr const char *kName = "avx2-int8";
#else
constexpr const char *kName = "scalar-int8";
#endif

}  // namespace intp
