// The process-wide thread pool and thread budget. Compiled once (no ISA flags); engines call
// it through plain function pointers so no template crosses the engine boundary.
#ifndef KWKER_RUNTIME_THREADS_H_
#define KWKER_RUNTIME_THREADS_H_
#include <cstdint>

namespace kwker {
namespace rt {

// Runs fn(ctx, i) for i in [0, ntasks) on up to ntasks threads (the caller runs task 0).
// Calls from several user threads at once are serialised on the pool; a nested call runs inline.
void run_parallel(int ntasks, void (*fn)(void *ctx, int task), void *ctx);

// A runner that executes fn(ctx, i) for i in [0, ntasks) on another library's threads and
// returns nonzero, or returns 0 to decline (the pool then runs them). Set per calling thread.
using ExternalRunner = int (*)(int ntasks, void (*fn)(void *ctx, int task), void *ctx);
ExternalRunner set_thread_runner(ExternalRunner runner);

// The budget: min(user max (if set), CPUs in the affinity mask, cgroup CPU quota), >= 1.
int thread_budget();
int hardware_threads();
int affinity_threads();
double cgroup_cpu_limit();  // <= 0 when no limit is set
int user_max_threads();      // 0 when unset
void set_user_max_threads(int n);

// The pool, for runtime_info: workers started, and calls that found them blocked and placed
// them off the calling thread's CPU before waking them (threads.cc, Placement).
int pool_workers();
int64_t placed_wakes();

}  // namespace rt
}  // namespace kwker
#endif
