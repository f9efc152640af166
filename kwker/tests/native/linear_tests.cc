// The CPU backend's linear kernels on every engine this CPU runs: each mode on awkward shapes
// (K not a multiple of the vector width or the block, N = 1, batch 1 and 7, 1 and 2 threads),
// against a float64 reference on the same (dequantised) weights, every engine bit for bit
// equal to the portable one; pack/unpack round trips; bad arguments rejected.
#include <atomic>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <thread>
#include <chrono>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kwker/kwker.h"
#include "tests/native/harness.h"

using namespace harness;

namespace {

struct Weights {
  std::vector<uint8_t> values;  // raw element bytes in the mode's value type
  std::vector<float> scales, mins, dense;  // dense: the dequantised weights [n, k]
};

Weights make_weights(int mode, int64_t n, int64_t k, int64_t group, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Weights w;
  w.dense.resize(size_t(n * k));
  if (mode == KWKER_LINEAR_HIGH) {
    w.values.resize(size_t(n * k * 4));
    for (auto &v : w.dense) v = u(rng);
    std::memcpy(w.values.data(), w.dense.data(), w.values.size());
  } else if (mode == KWKER_LINEAR_MEDIUM) {
    w.values.resize(size_t(n * k * 2));
    for (int64_t i = 0; i < n * k; ++i) {
      float f = u(rng);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      uint16_t h = uint16_t(b >> 16);
      std::memcpy(w.values.data() + 2 * i, &h, 2);
      uint32_t back = uint32_t(h) << 16;
      std::memcpy(&w.dense[size_t(i)], &back, 4);
    }
  } else {
    const int64_t block = mode == KWKER_LINEAR_INT4 ? group : 32;
    const int64_t nb = (k + block - 1) / block;
    w.values.resize(size_t(n * k));
    w.scales.resize(size_t(n * nb));
    w.mins.resize(size_t(n * nb));
    for (auto &s : w.scales) s = 0.01f + 0.02f * std::fabs(u(rng));
    for (auto &m : w.mins) m = -0.1f * std::fabs(u(rng));
    std::uniform_int_distribution<int> q8(-127, 127), q4(0, 15);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) {
        size_t i = size_t(r * k + c), b = size_t(r * nb + c / block);
        if (mode == KWKER_LINEAR_INT8) {
          // -128 (which GGUF files may hold) in every 7th column: |w| = 128 in the byte kernels
          int q = c % 7 == 3 ? -128 : q8(rng);
          w.values[i] = uint8_t(int8_t(q));
          w.dense[i] = float(q) * w.scales[b];
        } else {
          int q = q4(rng);
          w.values[i] = uint8_t(q);
          w.dense[i] = float(double(q) * w.scales[b] + w.mins[b]);
        }
      }
  }
  return w;
}

// |y - float64 reference| within float32 summation error, plus rel * the magnitude for kernels
// that round x first (bfloat16: 2^-9 per element).
void check_close(const Weights &w, const std::vector<float> &x, int64_t m, int64_t k, int64_t n,
                 const float *bias, const std::vector<float> &got, double rel,
                 const std::string &where) {
  bool close = true;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = bias ? bias[j] : 0.0, mag = std::fabs(ref);
      for (int64_t c = 0; c < k; ++c) {
        double t = double(x[size_t(i * k + c)]) * double(w.dense[size_t(j * k + c)]);
        ref += t;
        mag += std::fabs(t);
      }
      if (std::isnan(ref) && std::isnan(got[size_t(i * n + j)])) continue;
      double err = std::fabs(double(got[size_t(i * n + j)]) - ref);
      // float32 accumulation of k products: a few ulps of the magnitude per term.
      if (!(err <= (1e-6 * std::sqrt(double(k)) + rel) * mag + 1e-30)) close = false;
    }
  check(close, "matches the float64 reference on " + where);
}

// The prompt kernels' int8 / int4 arithmetic in scalar code (core/linear_prompt.h): the AMX and
// VNNI kernels must give exactly these bits.
void check_prompt_int(int mode, const Weights &w, const std::vector<float> &x, int64_t m,
                      int64_t k, int64_t n, int64_t group, const float *bias,
                      const std::vector<float> &got, const std::string &where) {
  const int64_t nb = (k + 31) / 32;
  const int64_t wblock = mode == KWKER_LINEAR_INT4 ? group : 32;
  const int64_t wnb = (k + wblock - 1) / wblock;
  bool same = true, close = true;
  for (int64_t i = 0; i < m && same; ++i) {
    std::vector<int> q(static_cast<size_t>(nb * 32), 0);
    std::vector<float> dx(static_cast<size_t>(nb));
    double slack = 0;  // what quantising x may move each output, per unit of |w|
    for (int64_t b = 0; b < nb; ++b) {
      float amax = 0;
      bool finite = true;
      for (int64_t c = b * 32; c < std::min(k, b * 32 + 32); ++c) {
        float a = std::fabs(x[size_t(i * k + c)]);
        if (!std::isfinite(a)) finite = false;
        else if (a > amax) amax = a;
      }
      if (!finite || amax < 1e-30f) {
        dx[size_t(b)] = finite ? 0.0f : NAN;
        continue;
      }
      const float id = 127.0f / amax;
      for (int64_t c = b * 32; c < std::min(k, b * 32 + 32); ++c) {
        float v = std::nearbyint(x[size_t(i * k + c)] * id);
        q[size_t(c)] = int(std::min(127.0f, std::max(-127.0f, v)));
      }
      dx[size_t(b)] = amax / 127.0f;
      slack = std::max(slack, double(dx[size_t(b)]) * 0.5);
    }
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      double ref = bias ? bias[j] : 0.0, wsum = 0, mag = std::fabs(ref);
      for (int64_t b = 0; b < nb; ++b) {
        int32_t isum = 0, qsum = 0;
        for (int64_t c = b * 32; c < b * 32 + 32; ++c) {
          int wq = c < k ? (mode == KWKER_LINEAR_INT8 ? int(int8_t(w.values[size_t(j * k + c)]))
                                                      : int(w.values[size_t(j * k + c)]))
                         : 0;
          isum += wq * q[size_t(c)];
          qsum += q[size_t(c)];
        }
        const size_t wb = size_t(j * wnb + b * 32 / wblock);
        acc = std::fma(float(isum), w.scales[wb] * dx[size_t(b)], acc);
        if (mode == KWKER_LINEAR_INT4) acc = std::fma(float(qsum), w.mins[wb] * dx[size_t(b)], acc);
      }
      float want = bias ? acc + bias[j] : acc;
      float have = got[size_t(i * n + j)];
      if (std::memcmp(&want, &have, 4) != 0 && !(std::isnan(want) && std::isnan(have))) {
        same = false;
        std::printf("  row %lld col %lld: kernel %.9g, scalar model %.9g\n", (long long)i,
                    (long long)j, double(have), double(want));
        break;
      }
      for (int64_t c = 0; c < k; ++c) {
        double t = double(x[size_t(i * k + c)]) * double(w.dense[size_t(j * k + c)]);
        ref += t;
        mag += std::fabs(t);
        wsum += std::fabs(double(w.dense[size_t(j * k + c)]));
      }
      if (std::isfinite(ref) &&
          !(std::fabs(double(have) - ref) <= 1.01 * slack * wsum + 1e-5 * mag + 1e-30))
        close = false;
    }
  }
  check(same, "equals the scalar model of the int8-activation kernels on " + where);
  check(close, "within the int8 quantisation of x of the float64 reference on " + where);
}

void test_case(int mode, int64_t n, int64_t k, int64_t m, int64_t group, bool bias, int threads) {
  std::mt19937 rng(unsigned(n * 131 + k * 7 + m + mode));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::string l = "mode=" + std::to_string(mode) + " n=" + std::to_string(n) + " k=" +
                        std::to_string(k) + " m=" + std::to_string(m) + " group=" +
                        std::to_string(group) + (bias ? " bias" : "") + " threads=" +
                        std::to_string(threads);
  g_where = "linear " + l;
  // The A8 modes pack and store as int8 / int4: wmode says how to read their values.
  const int wmode = mode == KWKER_LINEAR_INT8_A8 ? KWKER_LINEAR_INT8
                    : mode == KWKER_LINEAR_INT4_A8 ? KWKER_LINEAR_INT4 : mode;
  Weights w = make_weights(wmode, n, k, group, rng);
  int64_t bytes = kwker_linear_packed_size(mode, n, k, group);
  check(bytes > 0, "packed size");
  Guarded packed{static_cast<size_t>(bytes)};
  check(kwker_linear_pack(mode, n, k, group, w.values.data(), w.scales.data(), w.mins.data(),
                          packed.data()) == KWKER_OK, "pack");
  check(packed.intact(), "pack red zone");
  // Round trip.
  std::vector<uint8_t> back(w.values.size());
  std::vector<float> bs(w.scales.size()), bm(w.mins.size());
  check(kwker_linear_unpack(mode, n, k, group, packed.data(), back.data(), bs.data(), bm.data()) ==
            KWKER_OK, "unpack");
  check(back == w.values, "unpack values equal the packed ones");
  if (wmode >= KWKER_LINEAR_INT8) check(bs == w.scales, "unpack scales");
  if (wmode == KWKER_LINEAR_INT4) check(bm == w.mins, "unpack mins");

  std::vector<float> x(static_cast<size_t>(m * k)), b(static_cast<size_t>(n));
  for (auto &v : x) v = u(rng);
  // Prompt rows: one all-zero row, one with a tiny block, ties at the rounding point.
  if (m >= 16 || (wmode != mode && m >= 6)) {  // the A8 modes quantise x at any row count
    for (int64_t c = 0; c < k; ++c) x[size_t(2 * k + c)] = 0.0f;
    for (int64_t c = 0; c < std::min<int64_t>(k, 32); ++c) x[size_t(3 * k + c)] = 1e-31f * float(c);
    for (int64_t c = 0; c < k; ++c) x[size_t(4 * k + c)] = float(int(c % 9) - 4) * 0.25f;
    x[size_t(5 * k + k / 2)] = NAN;  // NaN in, NaN out, on every kernel
  }
  for (auto &v : b) v = u(rng);
  // Engines running the float kernels agree bit for bit with each other and with a float64
  // reference; the prompt kernels (AMX / VNNI, from 16 rows) are checked against their own
  // scalar model (check_prompt).
  std::vector<float> first;
  for (const char *engine : g_engines) {
    kwker_set_isa(engine);
    for (int amx_off = 0; amx_off < 2; ++amx_off) {
      if (amx_off) setenv("KWKER_AMX", "0", 1);
      const std::string kern = kwker_linear_kernel(mode, m);
      Guarded y{static_cast<size_t>(m * n * 4)};
      int rc = kwker_linear(mode, x.data(), m, k, packed.data(), n, group, bias ? b.data() : nullptr,
                            reinterpret_cast<float *>(y.data()), threads);
      if (amx_off) unsetenv("KWKER_AMX");
      const std::string where = std::string(engine) + " (kernel " + kern + ")";
      check(rc == KWKER_OK, "run on " + where);
      check(y.intact(), "output red zone on " + where);
      std::vector<float> got(size_t(m * n));
      std::memcpy(got.data(), y.data(), got.size() * 4);
      if (kern.find("-int8") != std::string::npos) {  // every engine: x quantised to int8
        check_prompt_int(wmode, w, x, m, k, n, group, bias ? b.data() : nullptr, got, where);
      } else if (kern == "amx-bf16" || kern == "avx512-bf16") {
        check_close(w, x, m, k, n, bias ? b.data() : nullptr, got, 1.0 / 128, where);
      } else if (first.empty()) {
        first = got;
        check_close(w, x, m, k, n, bias ? b.data() : nullptr, got, 0.0, where);
      } else {
        check(std::memcmp(first.data(), got.data(), first.size() * 4) == 0,
              where + " equals the first engine bit for bit");
      }
      if (kern == std::string(engine) || std::string(engine) != "avx512") break;
    }
  }
  kwker_set_isa(nullptr);
}

// A "high" storage (exact blocks, float16) against KWKER_LINEAR_HIGH on the same float32
// weights: the same bits on every engine, and every engine the first one's.
void check_equals_high(int mode, Guarded &packed, Guarded &high, const std::vector<float> &x,
                       int64_t m, int64_t k, int64_t n, const float *bias, int threads) {
  std::vector<float> first;
  for (const char *engine : g_engines) {
    kwker_set_isa(engine);
    const std::string where = std::string(engine) + " (kernel " + kwker_linear_kernel(mode, m) + ")";
    std::vector<float> ye(size_t(m * n)), yf(size_t(m * n));
    Guarded ge{size_t(m * n * 4)};
    check(kwker_linear(mode, x.data(), m, k, packed.data(), n, 32, bias,
                       reinterpret_cast<float *>(ge.data()), threads) == KWKER_OK, "run on " + where);
    check(ge.intact(), "output red zone on " + where);
    std::memcpy(ye.data(), ge.data(), ye.size() * 4);
    check(kwker_linear(KWKER_LINEAR_HIGH, x.data(), m, k, high.data(), n, 32, bias, yf.data(),
                       threads) == KWKER_OK, "float32 run on " + where);
    check(std::memcmp(ye.data(), yf.data(), ye.size() * 4) == 0,
          "equals KWKER_LINEAR_HIGH on the same float32 weights, bit for bit, on " + where);
    if (first.empty()) first = ye;
    else check(std::memcmp(first.data(), ye.data(), ye.size() * 4) == 0,
               where + " equals the first engine bit for bit");
  }
  kwker_set_isa(nullptr);
}

// The exact-block "high" modes (HIGH_Q4 / HIGH_Q8): float32 weights that are exactly GGUF's
// dequantised blocks, packed both as HIGH and in the exact-block mode, give the same bits on
// every engine, decode rows and prompt rows (K chunks that start mid-block included).
float f16_round(float v) {  // a scale as GGUF stores it: float16, widened exactly
  _Float16 h = _Float16(v);
  return float(h);
}

void test_exact(int mode, int64_t n, int64_t k, int64_t m, bool bias, int threads) {
  std::mt19937 rng(unsigned(n * 31 + k * 3 + m + mode));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::string l = "mode=" + std::to_string(mode) + " n=" + std::to_string(n) + " k=" +
                        std::to_string(k) + " m=" + std::to_string(m) + " threads=" +
                        std::to_string(threads);
  g_where = "linear exact blocks " + l;
  const int64_t nb = k / 32;
  std::vector<uint8_t> q(size_t(n * k));
  std::vector<float> d(size_t(n * nb)), mn(size_t(n * nb)), dense(size_t(n * k));
  for (int64_t i = 0; i < n * nb; ++i) {
    d[size_t(i)] = 0.002f + 0.05f * std::fabs(u(rng));
    // GGUF's float16 scales make d * q exact in float32; full float32 scales (the C API takes
    // them) make it round, so the rebuild's order (product, then sum) is checked too.
    if (i % 2 == 0) d[size_t(i)] = f16_round(d[size_t(i)]);
    mn[size_t(i)] = f16_round(-0.4f * std::fabs(u(rng)));
    if (i % 17 == 3) d[size_t(i)] = 0.0f;       // a constant block
    if (i % 23 == 5) mn[size_t(i)] = -0.0f;     // -0 minimums (and q = 0: w = +0)
    if (i % 29 == 7) d[size_t(i)] = 60000.0f;   // products far from 1
  }
  std::uniform_int_distribution<int> q8(-127, 127), q4(0, 15);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      const size_t i = size_t(r * k + c), b = size_t(r * nb + c / 32);
      volatile float t;  // GGUF's dequantiser: a float32 product, then a float32 sum
      if (mode == KWKER_LINEAR_HIGH_Q8) {
        const int v = q8(rng);
        q[i] = uint8_t(int8_t(v));
        t = d[b] * float(v);
        dense[i] = t;
      } else {
        const int v = c % 11 == 0 ? 0 : q4(rng);
        q[i] = uint8_t(v);
        t = d[b] * float(v);
        dense[i] = t + mn[b];
      }
    }
  const int64_t eb = kwker_linear_packed_size(mode, n, k, 32);
  const int64_t fb = kwker_linear_packed_size(KWKER_LINEAR_HIGH, n, k, 32);
  check(eb > 0 && fb > 0, "packed sizes");
  check(eb * 3 < fb, "the exact-block layout is the smaller");
  Guarded pe{size_t(eb)}, pf{size_t(fb)};
  check(kwker_linear_pack(mode, n, k, 32, q.data(), d.data(), mn.data(), pe.data()) == KWKER_OK,
        "pack exact blocks");
  check(kwker_linear_pack(KWKER_LINEAR_HIGH, n, k, 32, dense.data(), nullptr, nullptr,
                          pf.data()) == KWKER_OK, "pack float32");
  std::vector<uint8_t> back(q.size());
  std::vector<float> bs(d.size()), bm(mn.size());
  check(kwker_linear_unpack(mode, n, k, 32, pe.data(), back.data(), bs.data(), bm.data()) ==
            KWKER_OK && back == q && bs == d, "unpack round trip");
  if (mode == KWKER_LINEAR_HIGH_Q4)
    check(std::memcmp(bm.data(), mn.data(), bm.size() * 4) == 0, "unpack mins");
  std::vector<float> x(static_cast<size_t>(m * k)), b(static_cast<size_t>(n));
  for (auto &v : x) v = u(rng);
  if (m > 2) x[size_t(2 * k + k / 3)] = NAN;
  for (auto &v : b) v = u(rng);
  check_equals_high(mode, pe, pf, x, m, k, n, bias ? b.data() : nullptr, threads);
}

// high_f16: float32 weights that are exactly float16 (subnormals, -0, the largest finite value
// included), packed as their float16 bits and as HIGH, give the same bits on every engine, decode
// rows and prompt rows (K not a multiple of 16, K in two chunks), at half HIGH's bytes.
void test_f16(int64_t n, int64_t k, int64_t m, bool bias, int threads) {
  std::mt19937 rng(unsigned(n * 17 + k * 5 + m));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  g_where = "linear high_f16 n=" + std::to_string(n) + " k=" + std::to_string(k) + " m=" +
            std::to_string(m) + " threads=" + std::to_string(threads);
  std::vector<uint16_t> h(size_t(n * k));
  std::vector<float> dense(size_t(n * k));
  for (int64_t i = 0; i < n * k; ++i) {
    float v = u(rng);
    if (i % 13 == 4) v *= 1e-5f;           // float16 subnormals (below 6.1e-5)
    if (i % 31 == 9) v = -0.0f;
    if (i % 97 == 11) v = 65504.0f * (i % 2 ? 1.0f : -1.0f) * 1e-4f;
    if (i % 211 == 17) v = 65504.0f;       // the largest float16
    _Float16 f = _Float16(v);
    std::memcpy(&h[size_t(i)], &f, 2);
    dense[size_t(i)] = float(f);
  }
  const int64_t hb = kwker_linear_packed_size(KWKER_LINEAR_HIGH_F16, n, k, 32);
  const int64_t fb = kwker_linear_packed_size(KWKER_LINEAR_HIGH, n, k, 32);
  check(hb > 0 && hb * 2 == fb, "packed size: half of HIGH's");
  Guarded ph{size_t(hb)}, pf{size_t(fb)};
  check(kwker_linear_pack(KWKER_LINEAR_HIGH_F16, n, k, 32, h.data(), nullptr, nullptr,
                          ph.data()) == KWKER_OK && ph.intact(), "pack float16");
  check(kwker_linear_pack(KWKER_LINEAR_HIGH, n, k, 32, dense.data(), nullptr, nullptr,
                          pf.data()) == KWKER_OK, "pack float32");
  std::vector<uint16_t> back(h.size());
  check(kwker_linear_unpack(KWKER_LINEAR_HIGH_F16, n, k, 32, ph.data(), back.data(), nullptr,
                            nullptr) == KWKER_OK && back == h, "unpack round trip");
  std::vector<float> x(static_cast<size_t>(m * k)), b(static_cast<size_t>(n));
  for (auto &v : x) v = u(rng);
  if (m > 2) x[size_t(2 * k + k / 3)] = NAN;
  for (auto &v : b) v = u(rng);
  check_equals_high(KWKER_LINEAR_HIGH_F16, ph, pf, x, m, k, n, bias ? b.data() : nullptr,
                    threads);
}

void test_errors() {
  g_where = "linear errors";
  float x = 1, y = 0;
  uint8_t p[256] = {0};
  check(kwker_linear(9, &x, 1, 1, p, 1, 32, nullptr, &y, 1) == KWKER_E_INVALID_ARGUMENT,
        "unknown mode");
  check(std::strstr(kwker_last_error(), "unknown mode") != nullptr, "message names the mode");
  check(kwker_linear_packed_size(KWKER_LINEAR_INT4, 4, 64, 48) == -1, "group 48 rejected");
  check(std::strstr(kwker_last_error(), "multiple of 32") != nullptr, "message names the fix");
  check(kwker_linear(KWKER_LINEAR_HIGH, &x, 1, 0, p, 1, 0, nullptr, &y, 1) ==
            KWKER_E_INVALID_ARGUMENT, "k = 0 rejected");
  uint8_t bad[4] = {1, 2, 16, 3};
  float s = 1, mn = 0;
  check(kwker_linear_pack(KWKER_LINEAR_INT4, 1, 4, 32, bad, &s, &mn, p) ==
            KWKER_E_INVALID_ARGUMENT, "int4 value 16 rejected");
  check(kwker_linear_pack(KWKER_LINEAR_HIGH_Q4, 1, 4, 32, bad, &s, &mn, p) ==
            KWKER_E_INVALID_ARGUMENT, "high_q4 with k = 4 rejected");
  check(std::strstr(kwker_last_error(), "multiple of 32") != nullptr &&
            std::strstr(kwker_last_error(), "KWKER_LINEAR_HIGH") != nullptr,
        "message names the fix");
  check(kwker_linear_packed_size(KWKER_LINEAR_HIGH_Q4, 4, 64, 64) == -1, "high_q4 group 64 rejected");
  check(kwker_linear_packed_size(KWKER_LINEAR_HIGH_Q8, 4, 64, 0) > 0, "high_q8 ignores the group");
}

// The Q4_0 layout flag (KWKER_LINEAR_INT4 / _INT4_A8 | KWKER_LINEAR_Q4_0, group 32): Q4_0
// blocks (float16 scales, among them subnormal, negative and zero ones; min = -8 d) packed with
// and without the flag give the same bits on every engine at decode and prompt row counts, in 72
// instead of 96 bytes per panel block, and unpack to the same values, scales and mins.
void test_q40(int mode, int64_t n, int64_t k, int64_t m, bool bias, int threads) {
  std::mt19937 rng(unsigned(n * 31 + k * 17 + m + mode));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> q4(0, 15);
  g_where = "linear q4_0 mode=" + std::to_string(mode) + " n=" + std::to_string(n) + " k=" +
            std::to_string(k) + " m=" + std::to_string(m) + (bias ? " bias" : "") + " threads=" +
            std::to_string(threads);
  const int flagged = mode | KWKER_LINEAR_Q4_0;
  const int64_t nb = (k + 31) / 32;
  std::vector<uint8_t> q(size_t(n * k));
  std::vector<float> sc(size_t(n * nb)), mn(size_t(n * nb));
  for (auto &v : q) v = uint8_t(q4(rng));
  for (size_t i = 0; i < sc.size(); ++i) {
    sc[i] = i % 11 == 5 ? std::ldexp(float(1 + i % 900), -24)          // float16 subnormals
            : i % 13 == 7 ? 0.0f
                          : f16_round((i % 3 ? 1.0f : -1.0f) * (0.01f + 0.02f * std::fabs(u(rng))));
    mn[i] = -8.0f * sc[i];
  }
  const int64_t bytes = kwker_linear_packed_size(flagged, n, k, 32);
  check(bytes == (n + 3) / 4 * nb * 72, "72 bytes per panel block");
  check(kwker_linear_packed_size(mode, n, k, 32) == (n + 3) / 4 * nb * 96, "96 without the flag");
  Guarded pq{size_t(bytes)}, pf{size_t(kwker_linear_packed_size(mode, n, k, 32))};
  check(kwker_linear_pack(flagged, n, k, 32, q.data(), sc.data(), mn.data(), pq.data()) == KWKER_OK,
        "pack with the flag");
  check(kwker_linear_pack(mode, n, k, 32, q.data(), sc.data(), mn.data(), pf.data()) == KWKER_OK,
        "pack without");
  check(pq.intact() && pf.intact(), "pack red zones");
  std::vector<uint8_t> bq(q.size());
  std::vector<float> bs(sc.size()), bm(mn.size());
  check(kwker_linear_unpack(flagged, n, k, 32, pq.data(), bq.data(), bs.data(), bm.data()) == KWKER_OK,
        "unpack");
  check(bq == q && std::memcmp(bs.data(), sc.data(), sc.size() * 4) == 0 &&
            std::memcmp(bm.data(), mn.data(), mn.size() * 4) == 0,
        "unpack gives the values, scales and mins back bit for bit");
  std::vector<float> x(static_cast<size_t>(m * k)), b(static_cast<size_t>(n));
  for (auto &v : x) v = u(rng);
  for (auto &v : b) v = u(rng);
  std::vector<float> first;
  for (const char *engine : g_engines) {
    kwker_set_isa(engine);
    const std::string where =
        std::string(engine) + " (kernel " + kwker_linear_kernel(flagged, m) + ")";
    Guarded yq{size_t(m * n * 4)};
    std::vector<float> yf(size_t(m * n)), got(size_t(m * n));
    check(kwker_linear(flagged, x.data(), m, k, pq.data(), n, 32, bias ? b.data() : nullptr,
                       reinterpret_cast<float *>(yq.data()), threads) == KWKER_OK, "run on " + where);
    check(yq.intact(), "output red zone on " + where);
    std::memcpy(got.data(), yq.data(), got.size() * 4);
    check(kwker_linear(mode, x.data(), m, k, pf.data(), n, 32, bias ? b.data() : nullptr, yf.data(),
                       threads) == KWKER_OK, "flagless run on " + where);
    check(std::memcmp(got.data(), yf.data(), got.size() * 4) == 0,
          "equals the flagless layout bit for bit on " + where);
    if (first.empty()) first = got;
    else check(std::memcmp(first.data(), got.data(), got.size() * 4) == 0,
               where + " equals the first engine bit for bit");
  }
  kwker_set_isa(nullptr);
}

void test_q40_errors() {
  g_where = "linear q4_0 errors";
  const int flagged = KWKER_LINEAR_INT4 | KWKER_LINEAR_Q4_0;
  check(kwker_linear_packed_size(flagged, 4, 64, 64) == -1, "group 64 rejected");
  check(std::strstr(kwker_last_error(), "group must be 32") != nullptr, "message names the group");
  check(kwker_linear_packed_size(KWKER_LINEAR_INT8 | KWKER_LINEAR_Q4_0, 4, 64, 32) == -1,
        "the flag on int8 rejected");
  check(std::strstr(kwker_last_error(), "_INT4_A8") != nullptr, "message names the modes");
  check(kwker_linear_kernel(KWKER_LINEAR_HIGH | KWKER_LINEAR_Q4_0, 1) == nullptr,
        "kernel: the flag on high rejected");
  check(kwker_linear_kernel(KWKER_LINEAR_INT4_A8 | KWKER_LINEAR_Q4_0, 1) != nullptr,
        "kernel: int4_a8 with the flag");
  uint8_t q[64] = {0};
  // Not a float16; a min not -8 d; an infinite and a NaN scale; a float16 overflow.
  const float bad_scales[] = {0.1f, 0.5f, INFINITY, NAN, 131072.0f};
  for (int i = 0; i < 5; ++i) {
    float s[2] = {0.25f, bad_scales[i]}, mn[2] = {-2.0f, -8.0f * bad_scales[i]};
    if (i == 1) mn[1] = -3.0f;
    uint8_t out[200];
    std::memset(out, 0xAB, sizeof(out));
    check(kwker_linear_pack(flagged, 1, 64, 32, q, s, mn, out) == KWKER_E_INVALID_ARGUMENT,
          "a block that is not Q4_0 rejected (" + std::to_string(i) + ")");
    check(std::strstr(kwker_last_error(), "row 0, block 1") != nullptr &&
              std::strstr(kwker_last_error(), "without the flag") != nullptr,
          "message names the block and the fix");
    bool untouched = true;
    for (uint8_t v : out) untouched = untouched && v == 0xAB;
    check(untouched, "nothing written");
  }
}

void count_task(void *ctx, int task) {
  static_cast<std::atomic<int> *>(ctx)[task].fetch_add(1);
}

// kwker_run_tasks (the decoder packages' parallel loop): every task runs exactly once.
void test_run_tasks() {
  g_where = "kwker_run_tasks";
  for (int ntasks : {1, 2, 3, 9, 64}) {
    for (int threads : {0, 1, 2, 5}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(ntasks));
      for (auto &c : seen) c.store(0);
      check(kwker_run_tasks(ntasks, threads, count_task, seen.data()) == KWKER_OK, "runs");
      for (auto &c : seen) check(c.load() == 1, "each task exactly once");
    }
  }
  check(kwker_run_tasks(0, 0, nullptr, nullptr) == KWKER_OK, "no tasks, no call");
  check(kwker_run_tasks(-1, 0, count_task, nullptr) == KWKER_E_INVALID_ARGUMENT, "ntasks < 0");
  check(kwker_run_tasks(3, 0, nullptr, nullptr) == KWKER_E_INVALID_ARGUMENT, "fn NULL");
  check(std::strstr(kwker_last_error(), "kwker_run_tasks") != nullptr, "message names it");
}

int g_runner_calls = 0;
int serial_runner(int ntasks, void (*fn)(void *, int), void *ctx) {
  ++g_runner_calls;
  for (int i = ntasks - 1; i >= 0; --i) fn(ctx, i);  // another order than the pool's
  return 1;
}
int declining_runner(int, void (*)(void *, int), void *) {
  ++g_runner_calls;
  return 0;
}

// kwker_set_thread_runner: parallel work goes to the caller's runner (or back to the pool when
// it declines), for the calling thread only, with results identical bit for bit.
void test_thread_runner() {
  g_where = "kwker_set_thread_runner";
  const int64_t n = 2048, k = 512;  // large enough for two threads
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(k)),
      y0(static_cast<size_t>(n)), y1(static_cast<size_t>(n)), y2(static_cast<size_t>(n));
  for (auto &v : w) v = u(rng);
  for (auto &v : x) v = u(rng);
  std::vector<uint8_t> packed(static_cast<size_t>(kwker_linear_packed_size(KWKER_LINEAR_HIGH, n, k, 32)));
  check(kwker_linear_pack(KWKER_LINEAR_HIGH, n, k, 32, w.data(), nullptr, nullptr,
                          packed.data()) == KWKER_OK, "pack");
  check(kwker_linear(KWKER_LINEAR_HIGH, x.data(), 1, k, packed.data(), n, 32, nullptr, y0.data(),
                     2) == KWKER_OK, "pool");
  g_runner_calls = 0;
  check(kwker_set_thread_runner(serial_runner) == nullptr, "no runner before");
  check(kwker_linear(KWKER_LINEAR_HIGH, x.data(), 1, k, packed.data(), n, 32, nullptr, y1.data(),
                     2) == KWKER_OK, "runner");
  check(g_runner_calls == 1, "the runner ran the two tasks");
  check(kwker_set_thread_runner(declining_runner) == serial_runner, "returns the previous");
  check(kwker_linear(KWKER_LINEAR_HIGH, x.data(), 1, k, packed.data(), n, 32, nullptr, y2.data(),
                     2) == KWKER_OK, "declined");
  check(g_runner_calls == 2, "asked, declined, the pool ran");
  kwker_set_thread_runner(nullptr);
  check(std::memcmp(y0.data(), y1.data(), y0.size() * 4) == 0 &&
            std::memcmp(y0.data(), y2.data(), y0.size() * 4) == 0,
        "same bits whoever runs the tasks");
}

// A runner whose other threads start 3 ms late, as when another process holds their CPUs.
int late_runner(int ntasks, void (*fn)(void *, int), void *ctx) {
  ++g_runner_calls;
  std::vector<std::thread> others;
  for (int i = 1; i < ntasks; ++i)
    others.emplace_back([=] {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      fn(ctx, i);
    });
  fn(ctx, 0);
  for (auto &t : others) t.join();
  return 1;
}

// Prompt rows in bands (256 rows, two threads, K in two chunks) with the second thread 3 ms late:
// the caller transposes and computes the late thread's band too (all of it, or the units left
// when that thread arrives, which then waits for the K chunk before where the caller is in it),
// and the results are the one-thread call's, bit for bit, in "high" and from float16 bits.
void test_prompt_late_thread() {
  g_where = "prompt rows, a late thread";
  const int64_t m = 256, k = 1600;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t n : {int64_t(100), int64_t(600)}) {
    std::vector<float> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(m * k)),
        y1(static_cast<size_t>(m * n)), y2(static_cast<size_t>(m * n));
    for (auto &v : w) v = u(rng);
    for (auto &v : x) v = u(rng);
    std::vector<uint16_t> h(w.size());
    for (size_t i = 0; i < w.size(); ++i) {  // float16 weights, so both modes hold them exactly
      const _Float16 f = _Float16(w[i]);
      std::memcpy(&h[i], &f, 2);
      w[i] = float(f);
    }
    for (int mode : {KWKER_LINEAR_HIGH, KWKER_LINEAR_HIGH_F16}) {
      const std::string where = std::string(mode == KWKER_LINEAR_HIGH ? "high" : "high_f16") +
                                " n=" + std::to_string(n);
      std::vector<uint8_t> packed(static_cast<size_t>(kwker_linear_packed_size(mode, n, k, 32)));
      const void *values = mode == KWKER_LINEAR_HIGH ? static_cast<const void *>(w.data())
                                                     : static_cast<const void *>(h.data());
      check(kwker_linear_pack(mode, n, k, 32, values, nullptr, nullptr, packed.data()) == KWKER_OK,
            "pack " + where);
      check(kwker_linear(mode, x.data(), m, k, packed.data(), n, 32, nullptr, y1.data(), 1) ==
                KWKER_OK, "one thread " + where);
      // The late calls before this one may have started a spell (on a slow machine their
      // waits passed a fifth of a 20 ms window), in which the call runs without the runner:
      // then wait the spell out (its wall time ends within 1 s) and call again.
      for (int attempt = 0; attempt < 2; ++attempt) {
        if (attempt) std::this_thread::sleep_for(std::chrono::milliseconds(1100));
        kwker_set_thread_runner(late_runner);
        g_runner_calls = 0;
        check(kwker_linear(mode, x.data(), m, k, packed.data(), n, 32, nullptr, y2.data(), 2) ==
                  KWKER_OK, "late thread " + where);
        kwker_set_thread_runner(nullptr);
        if (g_runner_calls == 1) break;
      }
      check(g_runner_calls == 1, "the late runner ran the call " + where);
      check(std::memcmp(y1.data(), y2.data(), y1.size() * 4) == 0,
            "same bits with a late thread " + where);
    }
  }
}

// Shared calls (kwker_run_tasks, linear decode calls): the caller takes the tasks a late thread
// leaves, and once waiting for late threads takes over a fifth of 20 ms of such calls, the next
// calls leave the runner (for the pool) for a spell (20 ms of their time the first time, ending at the
// latest 80 ms of wall time after it began), then the runner again.
void test_late_threads() {
  g_where = "late threads";
  if (std::thread::hardware_concurrency() < 2) return;  // one CPU: every call runs serially
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // no spell left from before
  kwker_set_thread_runner(late_runner);
  g_runner_calls = 0;
  int calls = 0;
  for (; calls < 40 && g_runner_calls == calls; ++calls) {
    std::vector<std::atomic<int>> seen(16);
    for (auto &c : seen) c.store(0);
    check(kwker_run_tasks(16, 2, count_task, seen.data()) == KWKER_OK, "runs");
    for (auto &c : seen) check(c.load() == 1, "each task exactly once");
  }
  check(g_runner_calls < calls, "after a window of late calls, a call on the caller alone");
  check(calls <= 20, "the spell began within 20 late calls of 3 ms");
  // The spell counts the time of its calls: a 25 ms pause (longer than the first spell, 20 ms)
  // does not end it, so the next call still runs on the caller alone.
  std::this_thread::sleep_for(std::chrono::milliseconds(25));
  int before = g_runner_calls;
  {
    std::vector<std::atomic<int>> seen(16);
    for (auto &c : seen) c.store(0);
    check(kwker_run_tasks(16, 2, count_task, seen.data()) == KWKER_OK, "runs in the spell");
    for (auto &c : seen) check(c.load() == 1, "each task exactly once in the spell");
    check(g_runner_calls == before, "a pause shorter than the spell's wall limit keeps it");
  }
  // Past the spell's wall limit: 4 x its length, at most 1 s (the first spell is 20 ms long on a
  // quiet machine; earlier windows of late calls on a loaded one may have doubled it).
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  before = g_runner_calls;
  std::vector<std::atomic<int>> seen(16);
  for (auto &c : seen) c.store(0);
  check(kwker_run_tasks(16, 2, count_task, seen.data()) == KWKER_OK, "runs after the spell");
  for (auto &c : seen) check(c.load() == 1, "each task exactly once after the spell");
  check(g_runner_calls == before + 1, "after the spell the runner is asked again");
  kwker_set_thread_runner(nullptr);
}

// Rescue (runtime/threads.cc): a worker held inside a task while the caller has run out of
// tasks is moved to the caller's CPU, and puts its own mask back after the task. The held
// worker here sleeps (as a preempted one waits for its CPU); its mask, read inside the task,
// shows where the call put it.
struct Held {
  std::atomic<int> worker_task{-1};
  pid_t worker_tid = 0;
  cpu_set_t during;
  int caller_cpu = -1;
};
void held_task(void *ctx, int task) {
  Held &h = *static_cast<Held *>(ctx);
  if (task == 0) {  // the caller's (it takes the first task): long enough for the worker to come
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
    while (std::chrono::steady_clock::now() < end) {
    }
    h.caller_cpu = sched_getcpu();
    return;
  }
  h.worker_task.store(task);
  h.worker_tid = pid_t(syscall(SYS_gettid));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CPU_ZERO(&h.during);
  sched_getaffinity(0, sizeof(h.during), &h.during);
}

void test_held_worker_moves_to_the_caller() {
  g_where = "held worker";
  cpu_set_t all;
  CPU_ZERO(&all);
  sched_getaffinity(0, sizeof(all), &all);
  if (CPU_COUNT(&all) < 2) return;  // one CPU: nowhere to move from
  kwker_set_thread_runner(nullptr);
  // No spell left from test_late_threads (a spell runs shared calls on the caller alone; it
  // ends at the latest 1 s of wall time after it began).
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  int moved = 0, tries = 0;
  for (; tries < 5 && moved == 0; ++tries) {
    Held h;
    check(kwker_run_tasks(2, 2, held_task, &h) == KWKER_OK, "runs");
    if (h.worker_task.load() != 1) continue;  // the caller took both: the worker came late
    moved += CPU_COUNT(&h.during) == 1 && CPU_ISSET(h.caller_cpu, &h.during);
    cpu_set_t after;
    CPU_ZERO(&after);
    check(sched_getaffinity(h.worker_tid, sizeof(after), &after) == 0, "worker mask read");
    check(CPU_EQUAL(&after, &all), "the worker put its own mask back after the task");
  }
  check(moved > 0, "a worker held in a task ran on the caller's CPU (" +
                       std::to_string(tries) + " calls)");
}
}  // namespace

void run_linear_tests() {
  test_errors();
  test_run_tasks();
  test_thread_runner();
  test_prompt_late_thread();  // before test_late_threads, which waits out any spell it starts
  test_late_threads();
  test_held_worker_moves_to_the_caller();
  for (int mode = 0; mode < 4; ++mode) {
    const int64_t shapes[][3] = {{1, 1, 1}, {1, 37, 7}, {5, 16, 1}, {13, 100, 7}, {33, 70, 2},
                                 {64, 576, 1}, {9, 33, 5}, {300, 256, 1}};
    for (auto &s : shapes) {
      for (int threads : {1, 2}) test_case(mode, s[0], s[1], s[2], 32, s[0] % 2 == 1, threads);
    }
    if (mode == KWKER_LINEAR_INT4) {
      test_case(mode, 7, 130, 3, 64, true, 2);
      test_case(mode, 20, 256, 7, 128, false, 1);
    }
  }
  test_case(KWKER_LINEAR_HIGH, 1024, 1024, 1, 32, false, 2);  // crosses the threading threshold
  test_case(KWKER_LINEAR_INT4, 1536, 576, 9, 32, true, 2);
  // Prompt rows (16 and up): the AMX / VNNI kernels where this CPU has them, with partial row
  // tiles, partial column strips, K not a multiple of 32, int4 groups of 64 and 128.
  for (int mode = 0; mode < 4; ++mode) {
    const int64_t shapes[][3] = {{1, 37, 16}, {35, 100, 17}, {64, 576, 40}, {21, 33, 33},
                                 {13, 1600, 48}};  // K in two chunks
    for (auto &s : shapes)
      for (int threads : {1, 2}) test_case(mode, s[0], s[1], s[2], 32, s[0] % 2 == 1, threads);
  }
  test_case(KWKER_LINEAR_INT4, 40, 256, 20, 64, true, 2);
  test_case(KWKER_LINEAR_INT4, 24, 384, 64, 128, false, 2);
  test_case(KWKER_LINEAR_MEDIUM, 700, 1024, 64, 32, true, 2);
  test_case(KWKER_LINEAR_HIGH, 700, 1024, 70, 32, true, 2);
  test_case(KWKER_LINEAR_HIGH, 100, 576, 256, 32, false, 2);  // 16 slabs split by rows: 3 + 3 + 2 each
  test_case(KWKER_LINEAR_MEDIUM, 37, 200, 100, 32, true, 3);
  test_case(KWKER_LINEAR_INT8, 700, 1024, 64, 32, true, 2);
  // W8A8 / W4A8: x quantised at every row count, decode rows (1, 2, 7, 15) and prompt rows alike
  // against the scalar model (and so each other), every engine; panels past n, K not a multiple
  // of 32, int4 groups of 64 and 128, chunks handed out across threads (1,536 x 576).
  for (int mode : {KWKER_LINEAR_INT8_A8, KWKER_LINEAR_INT4_A8}) {
    const int64_t shapes[][3] = {{1, 37, 1}, {13, 100, 7}, {64, 576, 1}, {33, 70, 2},
                                 {9, 33, 15}, {35, 100, 17}, {1536, 576, 1}, {300, 256, 3}};
    for (auto &s : shapes)
      for (int threads : {1, 2}) test_case(mode, s[0], s[1], s[2], 32, s[0] % 2 == 1, threads);
  }
  test_case(KWKER_LINEAR_INT4_A8, 40, 256, 5, 64, true, 2);
  test_case(KWKER_LINEAR_INT4_A8, 24, 384, 2, 128, false, 2);
  // Decode rows (1, 2, 7), prompt rows (16 up, K in chunks of 528: one starts mid-block).
  for (int mode : {KWKER_LINEAR_HIGH_Q4, KWKER_LINEAR_HIGH_Q8}) {
    const int64_t shapes[][3] = {{1, 32, 1},  {5, 64, 7},  {37, 96, 2},  {64, 576, 1},
                                 {1, 32, 16}, {35, 96, 17}, {64, 576, 40}, {13, 1568, 48},
                                 {100, 576, 256}};
    for (auto &s : shapes)
      for (int threads : {1, 2}) test_exact(mode, s[0], s[1], s[2], s[0] % 2 == 1, threads);
    test_exact(mode, 1024, 1024, 1, false, 2);  // crosses the threading threshold
  }
  {
    const int64_t shapes[][3] = {{1, 37, 1},   {5, 64, 7},    {37, 100, 2},  {64, 576, 1},
                                 {1, 37, 16},  {35, 100, 17}, {64, 576, 40}, {13, 1600, 48},
                                 {100, 576, 256}};
    for (auto &s : shapes)
      for (int threads : {1, 2}) test_f16(s[0], s[1], s[2], s[0] % 2 == 1, threads);
    test_f16(1024, 1024, 1, false, 2);  // crosses the threading threshold
  }
  test_q40_errors();
  for (int mode : {KWKER_LINEAR_INT4, KWKER_LINEAR_INT4_A8}) {
    const int64_t shapes[][3] = {{1, 32, 1},   {5, 100, 2},  {13, 64, 3},   {37, 576, 7},
                                 {64, 576, 15}, {1, 32, 16}, {35, 100, 17}, {64, 576, 40},
                                 {13, 1600, 48}, {1536, 576, 1}};
    for (auto &s : shapes)
      for (int threads : {1, 2}) test_q40(mode, s[0], s[1], s[2], s[0] % 2 == 1, threads);
  }
  std::printf("linear kernels: tested\n");
}
