// The process-wide thread pool and thread budget. Compiled once (no ISA flags); engines call
// it through plain function pointers so no template crosses the engine boundary.
#ifndef KWKER_RUNTIME_THREADS_H_
#define KWKER_RUNTIME_THREADS_H_
#include <cstdint>

namespace kwker {
namespace rt {

// Runs fn(ctx, i) for i in [0, ntasks) on up to ntasks threads (the caller takes tasks too).
// Calls from several user threads at once are serialised on the pool; a nested call runs inline.
void run_parallel(int ntasks, void (*fn)(void *ctx, int task), void *ctx);

// Runs fn(ctx, i) for i in [0, ntasks) on up to `threads` threads, the caller included; each
// thread takes the next task as it comes free. A thread that starts late (its CPU busy with
// another process, a worker woken late) leaves its share to the others: the call waits only
// for tasks a thread has begun, never for a thread that has not started. Cut the work into
// several tasks per thread for that to pay.
void run_parallel_shared(int threads, int ntasks, void (*fn)(void *ctx, int task), void *ctx);

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

// The pool, for runtime_info: workers started, and placements: calls that found them blocked
// and placed them off the calling thread's CPU before waking them, workers that moved off the
// caller's CPU (threads.cc, Placement), and workers held in a task that a waiting caller moved
// to its own CPU (Rescue).
int pool_workers();
int64_t placed_wakes();
// Shared calls (run_parallel_shared) whose caller waited for another thread longer than it
// worked, and the spells in which shared calls ran on the caller alone because such waits took
// over a fifth of their time (threads.cc, Contention).
int64_t late_calls();
int64_t solo_spells();

}  // namespace rt
}  // namespace kwker
#endif
