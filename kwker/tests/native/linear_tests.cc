// The CPU backend's linear kernels on every engine this CPU runs: each mode on awkward shapes
// (K not a multiple of the vector width or the block, N = 1, batch 1 and 7, 1 and 2 threads),
// against a float64 reference on the same (dequantised) weights, every engine bit for bit
// equal to the portable one; pack/unpack round trips; bad arguments rejected.
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

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
          int q = q8(rng);
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

void test_case(int mode, int64_t n, int64_t k, int64_t m, int64_t group, bool bias, int threads) {
  std::mt19937 rng(unsigned(n * 131 + k * 7 + m + mode));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::string l = "mode=" + std::to_string(mode) + " n=" + std::to_string(n) + " k=" +
                        std::to_string(k) + " m=" + std::to_string(m) + " group=" +
                        std::to_string(group) + (bias ? " bias" : "") + " threads=" +
                        std::to_string(threads);
  g_where = "linear " + l;
  Weights w = make_weights(mode, n, k, group, rng);
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
  if (mode >= KWKER_LINEAR_INT8) check(bs == w.scales, "unpack scales");
  if (mode == KWKER_LINEAR_INT4) check(bm == w.mins, "unpack mins");

  std::vector<float> x(static_cast<size_t>(m * k)), b(static_cast<size_t>(n));
  for (auto &v : x) v = u(rng);
  for (auto &v : b) v = u(rng);
  std::vector<float> first;
  for (const char *engine : g_engines) {
    kwker_set_isa(engine);
    Guarded y{static_cast<size_t>(m * n * 4)};
    int rc = kwker_linear(mode, x.data(), m, k, packed.data(), n, group, bias ? b.data() : nullptr,
                          reinterpret_cast<float *>(y.data()), threads);
    check(rc == KWKER_OK, std::string("run on ") + engine);
    check(y.intact(), std::string("output red zone on ") + engine);
    std::vector<float> got(size_t(m * n));
    std::memcpy(got.data(), y.data(), got.size() * 4);
    if (first.empty()) {
      first = got;
      bool close = true;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double ref = bias ? b[size_t(j)] : 0.0, mag = std::fabs(ref);
          for (int64_t c = 0; c < k; ++c) {
            double t = double(x[size_t(i * k + c)]) * double(w.dense[size_t(j * k + c)]);
            ref += t;
            mag += std::fabs(t);
          }
          double err = std::fabs(double(got[size_t(i * n + j)]) - ref);
          // float32 accumulation of k products: a few ulps of the magnitude per term.
          if (!(err <= 1e-6 * mag * std::sqrt(double(k)) + 1e-30)) close = false;
        }
      check(close, std::string("matches the float64 reference on ") + engine);
    } else {
      check(std::memcmp(first.data(), got.data(), first.size() * 4) == 0,
            std::string(engine) + " equals the first engine bit for bit");
    }
  }
  kwker_set_isa(nullptr);
}

void test_errors() {
  g_where = "linear errors";
  float x = 1, y = 0;
  uint8_t p[256] = {0};
  check(kwker_linear(7, &x, 1, 1, p, 1, 32, nullptr, &y, 1) == KWKER_E_INVALID_ARGUMENT,
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

}  // namespace

void run_linear_tests() {
  test_errors();
  test_run_tasks();
  test_thread_runner();
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
  std::printf("linear kernels: tested\n");
}
