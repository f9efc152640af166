// The CPU backend's prompt kernels (many rows at once) on the avx512 engine: AMX tiles where the
// CPU has them and Linux grants them, AVX-512 VNNI otherwise. The decode step (a few rows) keeps
// the weight-streaming kernels of core/linear-inl.h; kwker_linear comes here from
// kLinPromptRows rows up (core/linear_prompt.h says what each kernel computes).
//
// int8 and int4 ("dynamic int8 activations"): each row of x is quantised per 32-block like a
// GGUF Q8_0 block, every block's dot product is an exact int32 (AMX TDPBSSD or VNNI VPDPBUSD:
// the same integer), and the float steps after it are fixed, so the AMX and the VNNI kernels give
// the same bits. "medium" on AMX rounds x to bfloat16 and runs TDPBF16PS: its summation order is
// the tile unit's own, so these results differ in the last bits from the float kernels; KWKER_AMX=0
// gives those back. Without AMX, "medium" runs VDPBF16PS (AVX512_BF16, e.g. AMD Zen 4/5) on the
// same bfloat16 x: two bf16 products added to each float32 lane per instruction, twice the float
// FMA's work, in an order no other kernel reproduces either; KWKER_AMX=0 turns it off too, so
// that one setting gives the reproducible float kernels back on every CPU.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/engine.h"
#include "core/linear_layout.h"
#include "core/linear_prompt.h"
#include "dispatch/cpu.h"
#include "runtime/threads.h"

namespace kwker {
namespace {

constexpr int kBlk = kLinQ8Block;  // 32
constexpr int kStrip = 16;         // output columns per tile / per VNNI register
constexpr int kPanelsPerStrip = kStrip / kLinNR;

// ---------------------------------------------------------------- AMX permission and choice
int amx_permission() {  // 1 granted, 0 refused; asked once per process (Linux 5.16+)
  static int granted = -1;
  static std::once_flag once;
  std::call_once(once, [] {
    const CpuInfo &c = cpu_info();
    // The bf16 kernel also rounds x with AVX512_BF16 (every AMX CPU so far has it).
    if (!(c.amx_int8 && c.amx_bf16 && c.avx512_bf16)) {
      granted = 0;
      return;
    }
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    granted = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0 ? 1 : 0;
  });
  return granted;
}

// KWKER_AMX read at each prompt call (cheap beside a prompt GEMM), so a test can switch it.
// Unset, "" and "1" allow the kernels whose bits no other engine reproduces (AMX, VDPBF16PS);
// "0" and anything else (which kwker.cpu_backend rejects) keep them off.
bool unreproducible_allowed() {
  const char *e = std::getenv("KWKER_AMX");
  return !(e && *e && std::strcmp(e, "1") != 0);
}

bool amx_allowed() { return unreproducible_allowed() && amx_permission() == 1; }

// ---------------------------------------------------------------- activations
// The 32 floats at p of which the first `valid` exist (valid may be <= 0 or > 32); the others
// read as 0 and nothing past them is touched.
inline void load32(const float *p, int64_t valid, __m512 &lo, __m512 &hi) {
  const int64_t v = valid < 0 ? 0 : (valid > 32 ? 32 : valid);
  const __mmask16 m0 = v >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << v) - 1);
  const __mmask16 m1 = v >= 32 ? __mmask16(0xFFFF) : v > 16 ? __mmask16((1u << (v - 16)) - 1)
                                                            : __mmask16(0);
  lo = _mm512_maskz_loadu_ps(m0, p);
  hi = _mm512_maskz_loadu_ps(m1, p + 16);
}

// Q8_0-style quantisation of one row (kp a multiple of 32; x has k valid columns, the rest 0).
// amax is found on the bit patterns (an integer max, so NaN and inf are seen in any order): a
// block with a non-finite value gets dx = NaN, so the outputs it feeds are NaN as in float
// arithmetic; a block below 1e-30 in magnitude counts as zero (127 / amax would overflow).
void quantise_row(const float *x, int64_t k, int64_t kp, int8_t *q, float *dx, int32_t *qs) {
  for (int64_t b = 0; b < kp / kBlk; ++b) {
    const int64_t c0 = b * kBlk;
    __m512 v0, v1;
    load32(x + c0, k - c0, v0, v1);
    const __m512i absm = _mm512_set1_epi32(0x7FFFFFFF);
    __m512i a = _mm512_max_epu32(_mm512_and_si512(_mm512_castps_si512(v0), absm),
                                 _mm512_and_si512(_mm512_castps_si512(v1), absm));
    uint32_t bits = uint32_t(_mm512_reduce_max_epu32(a));
    float amax;
    std::memcpy(&amax, &bits, 4);
    if (bits >= 0x7F800000u || amax < 1e-30f) {
      std::memset(q + c0, 0, kBlk);
      dx[b] = bits >= 0x7F800000u ? __builtin_nanf("") : 0.0f;
      qs[b] = 0;
      continue;
    }
    const __m512 id = _mm512_set1_ps(127.0f / amax);
    __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, id));  // round to nearest even
    __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, id));
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
    i0 = _mm512_min_epi32(_mm512_max_epi32(i0, lo), hi);
    i1 = _mm512_min_epi32(_mm512_max_epi32(i1, lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + c0), _mm512_cvtepi32_epi8(i0));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + c0 + 16), _mm512_cvtepi32_epi8(i1));
    dx[b] = amax / 127.0f;
    qs[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
  }
}

// ---------------------------------------------------------------- weight strips
// Four panels' [4 columns x 8 dwords] (128 bytes each, column-major: a column's 8 dwords in a
// row) become the tile unit's B layout for 16 columns: 8 rows of 16 dwords (row r holds dword r
// of every column). Two steps: each panel to [rows 0-3 | rows 4-7] x 4 columns (a two-source
// permute), then a 4 x 4 transpose of 128-bit chunks across the four panels.
inline void transpose_16x8(const uint8_t *const src[4], uint8_t *dst, uint32_t xor_mask) {
  alignas(64) static const int32_t kLo[16] = {0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27};
  alignas(64) static const int32_t kHi[16] = {4, 12, 20, 28, 5, 13, 21, 29, 6, 14, 22, 30, 7, 15, 23, 31};
  const __m512i lo_idx = _mm512_load_si512(kLo), hi_idx = _mm512_load_si512(kHi);
  __m512i lo[4], hi[4];
  for (int a = 0; a < 4; ++a) {
    __m512i z0 = _mm512_loadu_si512(src[a]), z1 = _mm512_loadu_si512(src[a] + 64);
    lo[a] = _mm512_permutex2var_epi32(z0, lo_idx, z1);  // lane r*4 + j: column j, dword r < 4
    hi[a] = _mm512_permutex2var_epi32(z0, hi_idx, z1);  // dwords 4..7
  }
  const __m512i x = _mm512_set1_epi32(int32_t(xor_mask));
  for (int h = 0; h < 2; ++h) {
    const __m512i *p = h ? hi : lo;
    __m512i t0 = _mm512_shuffle_i32x4(p[0], p[1], 0x44), t1 = _mm512_shuffle_i32x4(p[0], p[1], 0xEE);
    __m512i t2 = _mm512_shuffle_i32x4(p[2], p[3], 0x44), t3 = _mm512_shuffle_i32x4(p[2], p[3], 0xEE);
    uint8_t *d = dst + h * 4 * 64;
    _mm512_storeu_si512(d, _mm512_xor_si512(_mm512_shuffle_i32x4(t0, t2, 0x88), x));
    _mm512_storeu_si512(d + 64, _mm512_xor_si512(_mm512_shuffle_i32x4(t0, t2, 0xDD), x));
    _mm512_storeu_si512(d + 128, _mm512_xor_si512(_mm512_shuffle_i32x4(t1, t3, 0x88), x));
    _mm512_storeu_si512(d + 192, _mm512_xor_si512(_mm512_shuffle_i32x4(t1, t3, 0xDD), x));
  }
}

alignas(64) const uint8_t kZeroPanel[128] = {0};

// int8 / int4 strips.
// One strip = 16 output columns (4 panels). For block b its 16 x 32 values are laid out as the
// tile unit's B operand: row r (0..7) holds, for column c, the 4 bytes k = 4r..4r+3 at 4c. The
// VNNI kernel reads the same rows (VPDPBUSD wants unsigned weights: int8 ones are stored + 128).
struct Strip {
  int8_t *b;      // nb * 512 bytes
  float *scale;   // nb * 16: int8 the block scale, int4 its group's scale
  float *mins;    // int4: nb * 16, the group's minimum
};

// q40: int4 in the Q4_0 layout (float16 scales, min = -8 d, group 32; core/linear_layout.h).
void load_strip(int mode, bool q40, const uint8_t *packed, int64_t panel_bytes, int64_t npanels,
                int64_t strip, int64_t kp, int64_t group, bool plus128, Strip &s) {
  const int64_t hdr = lin_int4_header(q40);
  const int64_t nb = kp / kBlk;
  alignas(64) uint8_t unpacked[kPanelsPerStrip][kLinNR * kBlk];
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t *src[kPanelsPerStrip];
    for (int pp = 0; pp < kPanelsPerStrip; ++pp) {
      const int64_t p = strip * kPanelsPerStrip + pp;
      float *sc = s.scale + b * kStrip + pp * kLinNR;
      if (p >= npanels) {
        src[pp] = kZeroPanel;
        std::memset(sc, 0, sizeof(float) * kLinNR);
        if (s.mins) std::memset(s.mins + b * kStrip + pp * kLinNR, 0, sizeof(float) * kLinNR);
        continue;
      }
      const uint8_t *panel = packed + p * panel_bytes;
      if (mode == kLinInt8) {
        const uint8_t *blk = panel + b * kLinQ8PanelBlockBytes;
        std::memcpy(sc, blk, sizeof(float) * kLinNR);
        src[pp] = blk + kLinNR * 4;  // 4 columns x 32 int8, column after column
      } else {
        const int64_t g = b * kBlk / group, in = b * kBlk % group;
        const uint8_t *gp = panel + g * (hdr + kLinNR * group / 2);
        lin_int4_scales(gp, q40, sc, s.mins + b * kStrip + pp * kLinNR);
        const __m128i low = _mm_set1_epi8(15);
        for (int j = 0; j < kLinNR; ++j) {  // 16 bytes: elements 0-15 low nibbles, 16-31 high
          __m128i by = _mm_loadu_si128(reinterpret_cast<const __m128i *>(
              gp + hdr + j * (group / 2) + in / 2));
          _mm_store_si128(reinterpret_cast<__m128i *>(unpacked[pp] + j * kBlk), _mm_and_si128(by, low));
          _mm_store_si128(reinterpret_cast<__m128i *>(unpacked[pp] + j * kBlk + 16),
                          _mm_and_si128(_mm_srli_epi16(by, 4), low));
        }
        src[pp] = unpacked[pp];
      }
    }
    // Padded columns hold weight 0 (128 once shifted for VNNI), as the packer's zero columns.
    transpose_16x8(src, reinterpret_cast<uint8_t *>(s.b + b * 512), plus128 ? 0x80808080u : 0u);
  }
}

// The fixed float steps after a block's int32 dot products (both kernels):
//   int8: acc = fma(float(isum), dw * dx, acc)
//   int4: acc = fma(float(isum), d * dx, acc); acc = fma(float(sum of the block's qx), min * dx, acc)
inline __m512 combine(int mode, __m512i isum, const Strip &s, int64_t b, float dx, int32_t qs,
                      __m512 acc) {
  const __m512 vdx = _mm512_set1_ps(dx);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum),
                        _mm512_mul_ps(_mm512_loadu_ps(s.scale + b * kStrip), vdx), acc);
  if (mode == kLinInt4)
    acc = _mm512_fmadd_ps(_mm512_set1_ps(float(qs)),
                          _mm512_mul_ps(_mm512_loadu_ps(s.mins + b * kStrip), vdx), acc);
  return acc;
}

struct QJob {
  int mode;
  bool q40;  // int4 in the Q4_0 layout
  bool amx;
  int64_t m, mpad, n, kp, group, panel_bytes, npanels, nstrips;
  const int8_t *qx;   // mpad x kp
  const float *dx;    // mpad x nb
  const int32_t *qs;  // mpad x nb
  const uint8_t *packed;
  const float *bias;
  float *y;
  int ntasks;
  bool failed;
};

// Every kernel's results: y[r0 + r, c0 .. c0 + 15] = v[r * step] + bias for r < rows, keeping to
// the m rows and n columns of y (c0 < n).
inline void store_block(float *y, int64_t m, int64_t n, const float *bias, int64_t r0, int rows,
                        int64_t c0, const __m512 *v, int step) {
  const int cols = int(n - c0 < kStrip ? n - c0 : kStrip);
  const __mmask16 cm = cols == 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  const __m512 b = bias ? _mm512_maskz_loadu_ps(cm, bias + c0) : _mm512_setzero_ps();
  for (int r = 0; r < rows && r0 + r < m; ++r)
    _mm512_mask_storeu_ps(y + (r0 + r) * n + c0, cm,
                          bias ? _mm512_add_ps(v[r * step], b) : v[r * step]);
}

void store_rows(const QJob &jb, int64_t strip, int64_t r0, int rows, const __m512 *acc) {
  store_block(jb.y, jb.m, jb.n, jb.bias, r0, rows, strip * kStrip, acc, 1);
}

struct TileConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Tile numbers are immediates: these switches pick the instruction for a run-time number.
// Tiles 0-3: C of up to four row tiles; 4-5: A, in turn; 6-7: B of even and odd blocks.
inline void tile_zero_c(int i) {
  switch (i) {
    case 0: _tile_zero(0); break;
    case 1: _tile_zero(1); break;
    case 2: _tile_zero(2); break;
    default: _tile_zero(3); break;
  }
}
inline void tile_store_c(int i, void *p) {
  switch (i) {
    case 0: _tile_stored(0, p, 64); break;
    case 1: _tile_stored(1, p, 64); break;
    case 2: _tile_stored(2, p, 64); break;
    default: _tile_stored(3, p, 64); break;
  }
}
// _tile_* take literal tile numbers (the assembler sees them), hence a macro per (A, B) pair.
#define KWKER_LOAD_DP(A, B, i, a, stride)   \
  do {                                      \
    _tile_loadd(A, a, stride);              \
    switch (i) {                            \
      case 0: _tile_dpbssd(0, A, B); break; \
      case 1: _tile_dpbssd(1, A, B); break; \
      case 2: _tile_dpbssd(2, A, B); break; \
      default: _tile_dpbssd(3, A, B); break; \
    }                                       \
  } while (0)

// Up to four row tiles (64 rows) at once share each block's B tile. Software pipeline: in step
// b the tile unit computes block b while the vector unit scales block b - 1 (stored at the end
// of step b - 1), so neither waits for the other's latency.
void amx_int_strip(const QJob &jb, const Strip &s, int64_t strip) {
  const int64_t nb = jb.kp / kBlk;
  alignas(64) int32_t cbuf[2][4][16][16];
  alignas(64) float accb[64][16];
  for (int64_t t = 0; t < jb.mpad; t += 64) {
    const int nt = int((jb.mpad - t) / 16 < 4 ? (jb.mpad - t) / 16 : 4);
    for (int r = 0; r < nt * 16; ++r) _mm512_store_ps(accb[r], _mm512_setzero_ps());
    for (int64_t b = 0; b <= nb; ++b) {
      if (b < nb) {
        const bool odd = b & 1;
        if (odd) _tile_loadd(7, s.b + b * 512, 64);
        else _tile_loadd(6, s.b + b * 512, 64);
        for (int i = 0; i < nt; ++i) {
          tile_zero_c(i);
          const int8_t *a = jb.qx + (t + 16 * i) * jb.kp + b * kBlk;
          if (odd) {
            if (i & 1) KWKER_LOAD_DP(5, 7, i, a, jb.kp);
            else KWKER_LOAD_DP(4, 7, i, a, jb.kp);
          } else {
            if (i & 1) KWKER_LOAD_DP(5, 6, i, a, jb.kp);
            else KWKER_LOAD_DP(4, 6, i, a, jb.kp);
          }
        }
      }
      if (b >= 1) {
        const int64_t pb = b - 1;
        for (int i = 0; i < nt; ++i)
          for (int r = 0; r < 16; ++r) {
            const int64_t row = t + 16 * i + r;
            _mm512_store_ps(accb[16 * i + r],
                            combine(jb.mode, _mm512_load_si512(cbuf[pb & 1][i][r]), s, pb,
                                    jb.dx[row * nb + pb], jb.qs[row * nb + pb],
                                    _mm512_load_ps(accb[16 * i + r])));
          }
      }
      if (b < nb)
        for (int i = 0; i < nt; ++i) tile_store_c(i, cbuf[b & 1][i]);
    }
    for (int i = 0; i < nt; ++i) {
      __m512 acc[16];
      for (int r = 0; r < 16; ++r) acc[r] = _mm512_load_ps(accb[16 * i + r]);
      store_rows(jb, strip, t + 16 * i, 16, acc);
    }
  }
}

// VNNI: 8 rows at a time; per block, 8 VPDPBUSD per row (one per 4-byte slice of k).
void vnni_int_strip(const QJob &jb, const Strip &s, int64_t strip) {
  const int64_t nb = jb.kp / kBlk;
  constexpr int R = 8;
  for (int64_t t = 0; t < jb.mpad; t += R) {
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      __m512i w[8];
      for (int i = 0; i < 8; ++i) w[i] = _mm512_loadu_si512(s.b + b * 512 + i * 64);
      for (int r = 0; r < R; ++r) {
        const int64_t row = t + r;
        const int8_t *a = jb.qx + row * jb.kp + b * kBlk;
        __m512i raw = _mm512_setzero_si512();
        for (int i = 0; i < 8; ++i) {
          int32_t a4;
          std::memcpy(&a4, a + 4 * i, 4);
          raw = _mm512_dpbusd_epi32(raw, w[i], _mm512_set1_epi32(a4));
        }
        const int32_t qs = jb.qs[row * nb + b];
        // int8 weights were stored + 128: take 128 * (sum of the block's qx) back off.
        if (jb.mode == kLinInt8) raw = _mm512_sub_epi32(raw, _mm512_set1_epi32(128 * qs));
        acc[r] = combine(jb.mode, raw, s, b, jb.dx[row * nb + b], qs, acc[r]);
      }
    }
    store_rows(jb, strip, t, R, acc);
  }
}

void int_task(void *ctx, int task) {
  QJob &jb = *static_cast<QJob *>(ctx);
  const int64_t s0 = jb.nstrips * task / jb.ntasks, s1 = jb.nstrips * (task + 1) / jb.ntasks;
  if (s0 >= s1) return;
  const int64_t nb = jb.kp / kBlk;
  void *mem = std::aligned_alloc(64, size_t(lin_round_up(nb * 512 + nb * kStrip * 8, 64)));
  if (!mem) {
    jb.failed = true;
    return;
  }
  Strip s;
  s.b = static_cast<int8_t *>(mem);
  s.scale = reinterpret_cast<float *>(s.b + nb * 512);
  s.mins = jb.mode == kLinInt4 ? s.scale + nb * kStrip : nullptr;
  if (jb.amx) {
    TileConfig cfg;
    std::memset(&cfg, 0, sizeof(cfg));
    cfg.palette = 1;
    for (int t = 0; t < 4; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;          // C: 16 x 16 int32
    for (int t = 4; t < 6; ++t) cfg.colsb[t] = kBlk, cfg.rows[t] = 16;        // A: 16 rows x 32 k
    for (int t = 6; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = kBlk / 4;    // B: 8 x (16 x 4)
    _tile_loadconfig(&cfg);
  }
  for (int64_t st = s0; st < s1; ++st) {
    load_strip(jb.mode, jb.q40, jb.packed, jb.panel_bytes, jb.npanels, st, jb.kp, jb.group,
               !jb.amx && jb.mode == kLinInt8, s);
    if (jb.amx) amx_int_strip(jb, s, st);
    else vnni_int_strip(jb, s, st);
  }
  if (jb.amx) _tile_release();
  std::free(mem);
}

// ---------------------------------------------------------------- medium on AMX (bf16)
// Strip of 32 columns; B for each 32-wide k step and each half (16 columns): 16 rows of k pairs,
// row rr holding (w[c][2rr], w[c][2rr+1]) at 4c.
struct BJob {
  int64_t m, mpad, n, kp2, kp, panel_bytes, npanels, nstrips;
  const uint16_t *xa;  // mpad x kp2 bfloat16: AMX in 16 x 32 tiles, VDPBF16PS by row (Bf16Rows)
  const uint8_t *packed;
  const float *bias;
  float *y;
  int ntasks;
  bool failed;
};

void load_bf16_strip(const BJob &jb, int64_t strip, uint16_t *dst) {
  const int64_t steps16 = jb.kp / kLinLanes;
  if (jb.kp2 != jb.kp) std::memset(dst + (jb.kp2 / 32 - 1) * 1024, 0, 2048);  // the odd last step
  for (int half = 0; half < 2; ++half) {
    const uint8_t *panel[kPanelsPerStrip];
    for (int pp = 0; pp < kPanelsPerStrip; ++pp) {
      const int64_t p = strip * 8 + half * 4 + pp;
      panel[pp] = p < jb.npanels ? jb.packed + p * jb.panel_bytes : nullptr;
    }
    for (int64_t t16 = 0; t16 < steps16; ++t16) {
      const uint8_t *src[kPanelsPerStrip];
      for (int pp = 0; pp < kPanelsPerStrip; ++pp)  // 4 columns x 16 bf16 = 8 pairs each
        src[pp] = panel[pp] ? panel[pp] + t16 * kLinNR * kLinLanes * 2 : kZeroPanel;
      transpose_16x8(src, reinterpret_cast<uint8_t *>(dst + ((t16 / 2) * 2 + half) * 512 +
                                                      (t16 % 2) * 8 * 32), 0u);
    }
  }
}

void bf16_task(void *ctx, int task) {
  BJob &jb = *static_cast<BJob *>(ctx);
  const int64_t s0 = jb.nstrips * task / jb.ntasks, s1 = jb.nstrips * (task + 1) / jb.ntasks;
  if (s0 >= s1) return;
  const int64_t steps = jb.kp2 / 32;
  uint16_t *bw = static_cast<uint16_t *>(std::aligned_alloc(64, size_t(steps) * 2 * 1024));
  if (!bw) {
    jb.failed = true;
    return;
  }
  TileConfig cfg;
  std::memset(&cfg, 0, sizeof(cfg));
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
  alignas(64) float cbuf[16][16];
  for (int64_t st = s0; st < s1; ++st) {
    load_bf16_strip(jb, st, bw);
    for (int64_t t = 0; t < jb.mpad; t += 32) {
      const bool two = t + 16 < jb.mpad;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t s = 0; s < steps; ++s) {
        _tile_loadd(4, jb.xa + ((t / 16) * steps + s) * 512, 64);
        _tile_loadd(6, bw + (s * 2) * 512, 64);
        _tile_loadd(7, bw + (s * 2 + 1) * 512, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        if (two) {
          _tile_loadd(5, jb.xa + ((t / 16 + 1) * steps + s) * 512, 64);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
      }
      for (int q = 0; q < (two ? 4 : 2); ++q) {
        switch (q) {
          case 0: _tile_stored(0, cbuf, 64); break;
          case 1: _tile_stored(1, cbuf, 64); break;
          case 2: _tile_stored(2, cbuf, 64); break;
          default: _tile_stored(3, cbuf, 64); break;
        }
        const int64_t r0 = t + (q / 2) * 16, c0 = st * 32 + (q % 2) * 16;
        if (c0 < jb.n)
          store_block(jb.y, jb.m, jb.n, jb.bias, r0, 16, c0,
                      reinterpret_cast<const __m512 *>(cbuf), 1);
      }
    }
  }
  _tile_release();
  std::free(bw);
}

// ---------------------------------------------------------------- medium on VDPBF16PS
// The strip's B operand as load_bf16_strip lays it out for AMX (per 32-wide k step and half,
// 16 rows of k pairs x 16 columns) is also the register layout VDPBF16PS wants: one k pair of 16
// columns per zmm. Eight rows of x at a time, each k pair broadcast: 16 accumulators (8 rows x 2
// halves), two B registers, one broadcast; per k pair 16 VDPBF16PS to 10 loads (12 rows, 24 to
// 14, measured no faster on Zen 5). x has zero rows up to a multiple of kDpRows.
constexpr int kDpRows = 8;

void dpbf16_rows(const BJob &jb, const uint16_t *bw, int64_t st, int64_t t) {
  __m512 acc[kDpRows][2];
  for (int r = 0; r < kDpRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  const int64_t steps = jb.kp2 / 32;
  const uint16_t *xr = jb.xa + t * jb.kp2;
  for (int64_t s = 0; s < steps; ++s) {
    const uint16_t *b0 = bw + (s * 2) * 512, *b1 = bw + (s * 2 + 1) * 512;
    for (int rr = 0; rr < 16; ++rr) {
      const __m512bh w0 = (__m512bh)_mm512_load_si512(b0 + rr * 32);
      const __m512bh w1 = (__m512bh)_mm512_load_si512(b1 + rr * 32);
      for (int r = 0; r < kDpRows; ++r) {
        int32_t pair;
        std::memcpy(&pair, xr + r * jb.kp2 + s * 32 + 2 * rr, 4);
        const __m512bh a = (__m512bh)_mm512_set1_epi32(pair);
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, w0);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, w1);
      }
    }
  }
  for (int h = 0; h < 2; ++h)
    if (st * 32 + h * 16 < jb.n)
      store_block(jb.y, jb.m, jb.n, jb.bias, t, kDpRows, st * 32 + h * 16, &acc[0][h], 2);
}

void dpbf16_task(void *ctx, int task) {
  BJob &jb = *static_cast<BJob *>(ctx);
  const int64_t s0 = jb.nstrips * task / jb.ntasks, s1 = jb.nstrips * (task + 1) / jb.ntasks;
  if (s0 >= s1) return;
  uint16_t *bw = static_cast<uint16_t *>(std::aligned_alloc(64, size_t(jb.kp2 / 32) * 2 * 1024));
  if (!bw) {
    jb.failed = true;
    return;
  }
  for (int64_t st = s0; st < s1; ++st) {
    load_bf16_strip(jb, st, bw);
    for (int64_t t = 0; t < jb.m; t += kDpRows) dpbf16_rows(jb, bw, st, t);
  }
  std::free(bw);
}

// Tasks for preparing x (rounding or quantising its rows): one per 64 rows, at most the call's
// threads.
inline int prep_tasks(const CallCtx &ctx, int64_t rows) {
  const int64_t t = rows / 64;
  return int(t < 1 ? 1 : (t < ctx.threads ? t : ctx.threads));
}

// x rounded to bfloat16 (to nearest even, as torch's .to(bfloat16)), k valid columns of kp2,
// rows past m zero. For AMX in tile order (each 16 rows x 32 columns one contiguous KiB, so a
// tile load reads 16 consecutive lines rather than 16 rows kp2 * 2 bytes apart), else by row.
struct Bf16Rows {
  const float *x;
  int64_t k, kp2, m, rows;
  bool tiles;
  uint16_t *xa;
  int ntasks;
};

void bf16_rows_task(void *ctx, int task) {
  const Bf16Rows &b = *static_cast<const Bf16Rows *>(ctx);
  const int64_t r0 = b.rows * task / b.ntasks, r1 = b.rows * (task + 1) / b.ntasks;
  const int64_t steps = b.kp2 / 32;
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t c = 0; c < b.kp2; c += 32) {
      __m512 lo, hi;
      load32(r < b.m ? b.x + r * b.k + c : b.x, r < b.m ? b.k - c : 0, lo, hi);
      uint16_t *d = b.tiles ? b.xa + ((r / 16) * steps + c / 32) * 512 + (r % 16) * 32 : b.xa + r * b.kp2 + c;
      _mm512_storeu_si512(d, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
  }
}

struct QuantRows {
  const float *x;
  int64_t k, kp, nb, m;
  int8_t *qx;
  float *dx;
  int32_t *qs;
  int ntasks;
};

void quantise_task(void *ctx, int task) {
  const QuantRows &q = *static_cast<const QuantRows *>(ctx);
  const int64_t r0 = q.m * task / q.ntasks, r1 = q.m * (task + 1) / q.ntasks;
  for (int64_t r = r0; r < r1; ++r)
    quantise_row(q.x + r * q.k, q.k, q.kp, q.qx + r * q.kp, q.dx + r * q.nb, q.qs + r * q.nb);
}

}  // namespace

PromptKernel linear_prompt_kernel_avx512(int mode, int64_t m) {
  // "high" (float32 weights, exact-block and float16 storage included) stays on the float kernels.
  if (m < kLinPromptRows || mode == kLinF32 || lin_rebuilds(mode)) return kPromptNone;
  const CpuInfo &c = cpu_info();
  const bool amx = amx_allowed();
  if (mode == kLinBF16)
    return amx ? kPromptAmxBf16
               : (c.avx512_bf16 && unreproducible_allowed() ? kPromptAvx512Bf16 : kPromptNone);
  if (amx) return kPromptAmxInt8;
  return c.avx512_vnni ? kPromptVnniInt8 : kPromptNone;
}

int linear_prompt_avx512(CallCtx &ctx, int mode, const float *x, int64_t m, int64_t k,
                         const void *packed, int64_t n, int64_t group, const float *bias,
                         float *y) {
  const bool q40 = lin_q40(mode);
  const int64_t kp = lin_padded_k(mode, k, group);
  const int64_t panel_bytes = lin_panel_bytes(mode, kp, group);
  mode = lin_mode(mode);
  const PromptKernel kern = linear_prompt_kernel_avx512(mode, m);
  if (kern == kPromptNone) return 0;
  const int64_t npanels = (n + kLinNR - 1) / kLinNR;
  if (kern == kPromptAmxBf16 || kern == kPromptAvx512Bf16) {
    BJob jb;
    jb.m = m;
    jb.mpad = lin_round_up(m, 16);
    jb.n = n;
    jb.kp = kp;
    jb.kp2 = lin_round_up(kp, 32);
    jb.panel_bytes = panel_bytes;
    jb.npanels = npanels;
    jb.nstrips = (npanels + 7) / 8;
    jb.packed = static_cast<const uint8_t *>(packed);
    jb.bias = bias;
    jb.y = y;
    jb.failed = false;
    const int64_t xrows = kern == kPromptAmxBf16 ? jb.mpad : lin_round_up(m, kDpRows);
    uint16_t *xa = static_cast<uint16_t *>(std::aligned_alloc(64, size_t(lin_round_up(xrows * jb.kp2 * 2, 64))));
    if (!xa) return -1;
    // Rounding x is a few percent of a prompt GEMM: the threads share it where there are rows
    // enough, as for the int8 kernels' quantisation.
    Bf16Rows br{x, k, jb.kp2, m, xrows, kern == kPromptAmxBf16, xa, 1};
    br.ntasks = prep_tasks(ctx, xrows);
    if (br.ntasks > 1) rt::run_parallel(br.ntasks, bf16_rows_task, &br);
    else bf16_rows_task(&br, 0);
    jb.xa = xa;
    jb.ntasks = lin_threads(ctx.threads, panel_bytes * npanels * (m / 16), jb.nstrips);
    ctx.used_threads = jb.ntasks;
    rt::run_parallel(jb.ntasks, kern == kPromptAmxBf16 ? bf16_task : dpbf16_task, &jb);
    std::free(xa);
    return jb.failed ? -1 : 1;
  }
  QJob jb;
  jb.mode = mode;
  jb.q40 = q40;
  jb.amx = kern == kPromptAmxInt8;
  jb.m = m;
  jb.mpad = lin_round_up(m, 16);
  jb.n = n;
  jb.kp = kp;
  jb.group = group;
  jb.panel_bytes = panel_bytes;
  jb.npanels = npanels;
  jb.nstrips = (npanels + kPanelsPerStrip - 1) / kPanelsPerStrip;
  jb.packed = static_cast<const uint8_t *>(packed);
  jb.bias = bias;
  jb.y = y;
  jb.failed = false;
  const int64_t nb = kp / kBlk;
  const size_t qbytes = size_t(lin_round_up(jb.mpad * kp, 64));
  uint8_t *mem = static_cast<uint8_t *>(std::aligned_alloc(64, qbytes + size_t(jb.mpad * nb * 8)));
  if (!mem) return -1;
  int8_t *qx = reinterpret_cast<int8_t *>(mem);
  float *dx = reinterpret_cast<float *>(mem + qbytes);
  int32_t *qs = reinterpret_cast<int32_t *>(dx + jb.mpad * nb);
  // Quantising x is about a tenth of a small prompt GEMM: the threads share it too.
  QuantRows qr{x, k, kp, nb, m, qx, dx, qs, 1};
  qr.ntasks = prep_tasks(ctx, m);
  if (qr.ntasks > 1) rt::run_parallel(qr.ntasks, quantise_task, &qr);
  else quantise_task(&qr, 0);
  std::memset(qx + m * kp, 0, size_t((jb.mpad - m) * kp));
  std::memset(dx + m * nb, 0, sizeof(float) * size_t((jb.mpad - m) * nb));
  std::memset(qs + m * nb, 0, sizeof(int32_t) * size_t((jb.mpad - m) * nb));
  jb.qx = qx;
  jb.dx = dx;
  jb.qs = qs;
  // Threads by the flagless layout's bytes (the same work per weight as the Q4_0 layout's).
  jb.ntasks = lin_threads(ctx.threads, lin_panel_bytes(mode, kp, group) * npanels * (m / 16), jb.nstrips);
  ctx.used_threads = jb.ntasks;
  rt::run_parallel(jb.ntasks, int_task, &jb);
  std::free(mem);
  return jb.failed ? -1 : 1;
}

}  // namespace kwker
