#include "runtime/counters.h"

#include <atomic>

namespace kwker {
namespace rt {
namespace {
std::atomic<int64_t> g_calls[kEngineCount];
std::atomic<int> g_max_threads[kEngineCount];
}  // namespace

void counters_record(int engine, int threads_used) {
  if (engine < 0 || engine >= kEngineCount) return;
  g_calls[engine].fetch_add(1, std::memory_order_relaxed);
  int prev = g_max_threads[engine].load(std::memory_order_relaxed);
  while (threads_used > prev &&
         !g_max_threads[engine].compare_exchange_weak(prev, threads_used)) {
  }
}
int64_t counters_calls(int engine) { return g_calls[engine].load(); }
int counters_max_threads(int engine) { return g_max_threads[engine].load(); }
void counters_reset() {
  for (int i = 0; i < kEngineCount; ++i) {
    g_calls[i] = 0;
    g_max_threads[i] = 0;
  }
}

}  // namespace rt
}  // namespace kwker
