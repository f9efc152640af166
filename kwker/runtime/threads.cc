#include "runtime/threads.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

// The wheel claims manylinux_2_28, whose libstdc++ (GCC 8) has GLIBCXX_3.4.24 at most. GCC 12's
// header binds condition_variable::wait to a GLIBCXX_3.4.30 symbol, added only so that thread
// cancellation can unwind out of a wait (the GLIBCXX_3.4.11 one, in every libstdc++ since GCC
// 4.4, is noexcept). The pool never cancels a thread, so the older symbol is the same call.
#if defined(__GLIBCXX__) && defined(__linux__)
__asm__(".symver _ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE,"
        "_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE@GLIBCXX_3.4.11");
#endif

namespace kwker {
namespace rt {
namespace {

// Heap-allocated and never destroyed: worker threads are detached, and a fork() child
// gets a fresh pool (the parent's workers do not exist there).
//
// Hand-off: a worker that finished its tasks spins for kSpinNs on the generation counter before
// it blocks on the condition variable, and the caller spins the same way for the last task to
// finish. Back-to-back parallel calls (rows, repeated sorts) then start their tasks in about a
// microsecond instead of paying a futex wake-up (tens of microseconds on a VM) each time; an
// idle pool costs nothing once the spin ends.
constexpr int64_t kSpinNs = 50000;

// Placement of a woken worker: on a small VM whose other vCPUs are halted, the kernel wakes a
// blocked worker onto the waking thread's CPU (the others look preempted to it), where it cannot
// start until the caller blocks: after the caller slept 2 ms, 86 of 100 wakes landed there and
// the worker started 152 us late, against 52 us elsewhere with the caller's CPU excluded (2-vCPU
// KVM guest, a worker and a caller each running 100 us). So a call that finds workers blocked
// first narrows every worker's mask to the caller's without the caller's CPU, and a worker woken
// from its block widens its own mask back to the caller's before it takes a task: pinned for
// good, a worker could not leave a CPU the scheduler later put the caller on (rows of 2-8
// float32 on two threads ran 8-14% slower in python -m kwker bench). Only after the pool sat
// idle kNarrowIdleNs: the misplaced wakes followed idle spells of a millisecond or more (after
// 200 us asleep, 0 of 100 wakes landed on the caller's CPU), and narrowing at every cold call
// of a loop of row sorts (gaps of 50-200 us) still cost those rows 3-20%. Warm hand-offs make
// no system call.
constexpr int64_t kNarrowIdleNs = 500000;
// Narrowing covers wakes; a worker can also start on the caller's CPU (a new thread is placed
// where the kernel sees room, and on a VM whose other vCPU the host holds that may be the
// caller's) or meet the caller there after the scheduler moved either. Both then keep running
// (the caller in its tasks, the worker spinning between calls), so the kernel leaves them
// together: a loop of rows of 256 float32 on two threads ran at one thread's speed for its
// first 50-60 ms (2-vCPU Zen 5, in 2 of 6 fresh processes), and again after pauses. So a worker
// that sees a call begin checks its CPU against the caller's (sched_getcpu, no system call) and,
// on a match, moves itself off that CPU and takes its full mask back (two system calls, only
// then).
//
// Rescue: a worker that another process preempts inside a task holds the call until the kernel
// runs it again. The caller, out of tasks, blocks after its spin and leaves its own CPU idle, but
// the kernel does not move the waiting worker there: a task that ran in the last half millisecond
// counts as cache-hot to the idle balancer, so it waits for the other process's time slice and
// the next periodic balance (1-4 ms; a linear call takes 30-100 us). So a caller whose spin ran
// out while workers still held begun tasks watches their CPU time for 20 us more and narrows
// the masks of those that did not run to its own CPU (the kernel moves a queued thread at once)
// before it blocks there; each such worker puts its mask back after its task. Beside a
// process spinning one of two vCPUs (Zen 5): a float32 sort of 1e7 on two threads 22.5-23.4 ->
// 20.4-22.0 ms (one thread: 25 ms); a stack of 16 linear layers on the pool, 90th percentile of
// its calls 5.1 -> 1.6 ms. Torch's OpenMP team (the runner below) cannot be helped this way:
// design.md, 2026-12-05.

// A worker's state the caller may act on (Rescue), under mu: whether it is inside a task, and
// whether the caller narrowed its mask (`wide` then holds the mask to put back). The lock makes
// the caller's check and its narrowing one step, so a worker never ends a task unaware that it
// was moved (it would stay on one CPU).
struct Slot {
  std::mutex mu;
  bool in_task = false;
  bool pulled = false;
  cpu_set_t wide;
  pthread_t thread;
  int64_t watched_ns = -1;  // its CPU time when the caller began to watch it (rescue)
};

struct Pool {
  std::mutex run_mu;  // one run_parallel at a time; tasks are large, so queueing is cheap
  std::mutex mu;
  std::condition_variable cv_work, cv_done;
  std::atomic<uint64_t> generation{0};  // written under mu, read while spinning
  int ntasks = 0, next = 0;
  int helpers_max = 0, helpers = 0;  // workers that may join the current call, and have
  std::atomic<int> pending{0};
  std::atomic<int> sleepers{0};  // workers blocked (or about to block) on cv_work
  // The workers (never freed: they are detached). Grown only by pool_run under run_mu and mu,
  // so a caller holding run_mu may read it without mu.
  std::vector<Slot *> slots;
  std::atomic<int64_t> rescues{0};  // workers moved to a waiting caller's CPU (Rescue)
  // Calls that narrowed the workers' masks (written under mu; read without it by runtime_info).
  std::atomic<int64_t> narrowings{0};
  cpu_set_t wide_mask;  // the caller's mask then, which a woken worker takes back
  std::atomic<int> caller_cpu{-1};  // where the current call's caller runs
  std::atomic<int64_t> hops{0};     // workers that moved off the caller's CPU
  int64_t last_end_ns = 0;  // when the last run_parallel finished (under run_mu)
  void (*fn)(void *, int) = nullptr;
  void *ctx = nullptr;
};

Pool *g_pool = new Pool();
std::atomic<int> g_user_max{0};
thread_local bool t_in_task = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Spins until pred() holds or `ns` pass; returns pred().
template <class Pred> bool spin_until(Pred pred, int64_t ns = kSpinNs) {
  if (pred()) return true;
  const int64_t end = now_ns() + ns;
  for (int i = 0;; ++i) {
    for (int k = 0; k < 64; ++k) {
      if (pred()) return true;
      cpu_relax();
    }
    if (now_ns() > end) return pred();
  }
}

// A worker entering (in = true) or leaving a task; one the caller moved to its CPU (Rescue)
// takes its own mask back as it leaves.
void mark_task(Slot *s, bool in) {
  std::lock_guard<std::mutex> lk(s->mu);
  s->in_task = in;
  if (!in && s->pulled) {
    sched_setaffinity(0, sizeof(s->wide), &s->wide);
    s->pulled = false;
  }
}

// slot: the worker's (nullptr for the caller).
void drain(Pool *p, std::unique_lock<std::mutex> &lk, Slot *slot = nullptr) {
  while (p->next < p->ntasks) {
    int i = p->next++;
    auto f = p->fn;
    void *c = p->ctx;
    lk.unlock();
    if (slot) mark_task(slot, true);
    t_in_task = true;
    f(c, i);
    t_in_task = false;
    if (slot) mark_task(slot, false);
    lk.lock();
    if (p->pending.fetch_sub(1) == 1) p->cv_done.notify_all();
  }
}

// A thread's CPU time (the kernel brings a running thread's up to date when asked); -1 if unknown.
int64_t cpu_time_ns(pthread_t t) {
  clockid_t c;
  struct timespec ts;
  if (pthread_getcpuclockid(t, &c) != 0 || clock_gettime(c, &ts) != 0) return -1;
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The caller's side of Rescue, once its spin ran out: the workers inside a task that are not
// running (their CPU time advanced under a quarter of kStillNs while the caller watched), not
// already moved, narrowed to `cpu`. A worker that is running is left where it is: moved, it
// would meet the caller on its CPU at the next call (a two-thread sort of 1e6 keys on an idle
// machine, whose phases end a worker's last task 50 us or more after the caller's now and then,
// ran 10-25% slower when every such worker moved). Returns early when the tasks end meanwhile.
constexpr int64_t kStillNs = 20000;
// Under run_mu (see Pool::slots). No container is built here: the wheel's manylinux_2_28
// libstdc++ lacks the symbol a sized std::vector constructor calls (GLIBCXX_3.4.29).
void rescue(Pool *p, int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return;
  const std::vector<Slot *> &slots = p->slots;
  bool any = false;
  for (Slot *s : slots) {
    std::lock_guard<std::mutex> slk(s->mu);
    s->watched_ns = s->in_task && !s->pulled ? cpu_time_ns(s->thread) : -1;
    any = any || s->watched_ns >= 0;
  }
  if (!any) return;
  const int64_t t0 = now_ns();
  if (spin_until([&] { return p->pending.load(std::memory_order_acquire) == 0; }, kStillNs))
    return;
  const int64_t waited = now_ns() - t0;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  for (Slot *s : slots) {
    if (s->watched_ns < 0) continue;
    const int64_t ran = cpu_time_ns(s->thread) - s->watched_ns;
    if (ran < 0 || 4 * ran >= waited) continue;  // it is running: leave it
    std::lock_guard<std::mutex> slk(s->mu);
    if (!s->in_task || s->pulled) continue;
    cpu_set_t wide;
    CPU_ZERO(&wide);
    if (pthread_getaffinity_np(s->thread, sizeof(wide), &wide) != 0 || !CPU_ISSET(cpu, &wide))
      continue;  // the caller's CPU is not the worker's to use
    s->wide = wide;
    if (pthread_setaffinity_np(s->thread, sizeof(one), &one) != 0) continue;
    s->pulled = true;
    p->rescues.fetch_add(1, std::memory_order_relaxed);
  }
}

bool without_cpu(const cpu_set_t &wide, int cpu, cpu_set_t &narrow);

// Moves the calling worker off `cpu` (see Placement): its mask without that CPU, which the
// kernel applies before the call returns, then its own mask back, which leaves it where it now
// runs. False when its mask holds no other CPU.
bool hop_off(int cpu) {
  cpu_set_t own, narrow;
  CPU_ZERO(&own);
  if (sched_getaffinity(0, sizeof(own), &own) != 0 || !without_cpu(own, cpu, narrow)) return false;
  if (sched_setaffinity(0, sizeof(narrow), &narrow) != 0) return false;
  sched_setaffinity(0, sizeof(own), &own);
  return true;
}

void worker_main(Pool *p, Slot *slot) {
  uint64_t seen;
  int64_t widened = 0;  // the narrowing this worker last undid
  {
    std::lock_guard<std::mutex> lk(p->mu);
    seen = p->generation.load();
  }
  for (;;) {
    spin_until([&] { return p->generation.load(std::memory_order_acquire) != seen; });
    std::unique_lock<std::mutex> lk(p->mu);
    if (p->generation.load() == seen) {
      p->sleepers.fetch_add(1);
      p->cv_work.wait(lk, [&] { return p->generation.load() != seen; });
      p->sleepers.fetch_sub(1);
      if (widened != p->narrowings.load()) {  // woken off the caller's CPU: free to move again
        widened = p->narrowings.load();
        const cpu_set_t wide = p->wide_mask;
        lk.unlock();
        sched_setaffinity(0, sizeof(wide), &wide);
        lk.lock();
      }
    }
    seen = p->generation.load();
    // A call for fewer threads than the pool has workers: the first to come take part.
    if (p->helpers < p->helpers_max) {
      ++p->helpers;
      const int cpu = p->caller_cpu.load(std::memory_order_relaxed);
      if (cpu >= 0 && sched_getcpu() == cpu) {
        lk.unlock();
        if (hop_off(cpu)) p->hops.fetch_add(1, std::memory_order_relaxed);
        lk.lock();
        // The call may have ended meanwhile and the next begun, whose helper count this worker
        // is not in: meet that one from the top.
        if (p->generation.load() != seen) continue;
      }
      drain(p, lk, slot);
    }
  }
}

// Narrows every worker's mask to the caller's without the caller's CPU (see Placement). Under
// run_mu and mu, on calls that found a worker blocked. Failures (a CPU set the kernel refuses)
// leave the masks as they were.
// narrow = wide without cpu; false when nothing is left (nowhere else to go).
bool without_cpu(const cpu_set_t &wide, int cpu, cpu_set_t &narrow) {
  narrow = wide;
  CPU_CLR(cpu, &narrow);
  return CPU_COUNT(&narrow) > 0;
}

void narrow_workers(Pool *p) {
  const int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE) return;
  cpu_set_t wide, narrow;
  CPU_ZERO(&wide);
  if (sched_getaffinity(0, sizeof(wide), &wide) != 0) return;
  if (!without_cpu(wide, cpu, narrow)) return;  // the caller may use one CPU only
  for (Slot *s : p->slots) pthread_setaffinity_np(s->thread, sizeof(narrow), &narrow);
  p->wide_mask = wide;
  p->narrowings.fetch_add(1);
}

void reset_after_fork() { g_pool = new Pool(); }
struct ForkHook {
  ForkHook() { pthread_atfork(nullptr, nullptr, reset_after_fork); }
} g_fork_hook;

double read_cgroup_limit() {
  // cgroup v2: "max 100000" or "<quota> <period>"
  if (FILE *f = std::fopen("/sys/fs/cgroup/cpu.max", "r")) {
    char quota[32] = {0};
    long period = 0;
    int got = std::fscanf(f, "%31s %ld", quota, &period);
    std::fclose(f);
    if (got == 2 && period > 0 && quota[0] != 'm') return std::atof(quota) / double(period);
    return 0;
  }
  long q = -1, per = 0;
  if (FILE *f = std::fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r")) {
    if (std::fscanf(f, "%ld", &q) != 1) q = -1;
    std::fclose(f);
  }
  if (FILE *f = std::fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r")) {
    if (std::fscanf(f, "%ld", &per) != 1) per = 0;
    std::fclose(f);
  }
  return (q > 0 && per > 0) ? double(q) / double(per) : 0;
}

}  // namespace

int hardware_threads() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}

int affinity_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return hardware_threads();
}

double cgroup_cpu_limit() {
  static const double limit = read_cgroup_limit();  // quota changes at run time are rare
  return limit;
}

int user_max_threads() { return g_user_max.load(); }
int pool_workers() {
  std::lock_guard<std::mutex> lk(g_pool->mu);
  return int(g_pool->slots.size());
}
int64_t runner_placements();
int64_t placed_wakes() {
  return g_pool->narrowings.load(std::memory_order_relaxed) +
         g_pool->hops.load(std::memory_order_relaxed) +
         g_pool->rescues.load(std::memory_order_relaxed) + runner_placements();
}
void set_user_max_threads(int n) { g_user_max.store(n < 0 ? 0 : n); }

int thread_budget() {
  int b = affinity_threads();
  double cg = cgroup_cpu_limit();
  if (cg > 0) {
    int c = int(std::ceil(cg - 1e-9));
    if (c < b) b = c;
  }
  int user = g_user_max.load();
  if (user > 0 && user < b) b = user;
  return b < 1 ? 1 : b;
}

// Per calling thread: when set (the CPU backend's decode step, run beside torch), parallel work
// goes to torch's own threads, so two pools never spin against each other on the same cores.
thread_local ExternalRunner t_runner = nullptr;

ExternalRunner set_thread_runner(ExternalRunner runner) {
  ExternalRunner prev = t_runner;
  t_runner = runner;
  return prev;
}

// Contention. A thread of the call that another process keeps off its CPU holds the call: the
// pool waits for the tasks its workers have begun, and a runner (torch's OpenMP team) returns
// only when all of its threads have checked in, however the tasks are shared. So shared calls
// keep account: of every kWindowNs of their wall time, how much the calling thread spent
// waiting for others after its last task. Where that is over kWaitShare, the shared calls run on
// the calling thread alone for a spell (kOffNs at first, doubling with each such window up to
// kOffMaxNs, halving with each window under it). A spell is measured in the time of the calls
// it runs, not in wall time, and ends at the latest kSpellWallFactor times its length of wall
// time after it began (at most kOffMaxNs): a process that alternates decode bursts with other
// work (or a benchmark that interleaves Kwker with a competitor) would otherwise see each spell
// run out between bursts and pay a new lossy window of two-thread calls per burst (beside a busy
// process, int8 decode 0.95x of one thread in 0.25 s slots). A share, not single calls: beside a
// busy process the thread sharing its CPU with it runs for a time slice and is then preempted
// inside a task, once per slice (a few ms), so the calls between are on time and only the share
// of time lost shows it; a worker woken cold (the decode step's first call after generate()'s
// own work, about 100 us per token of 5-10 ms) stays far below it. A call whose caller waited
// longer than it worked, and over kLateNs, counts as late (runtime_info).
constexpr int64_t kLateNs = 100000, kWindowNs = 20000000, kOffNs = 20000000,
                  kOffMaxNs = 1000000000;
constexpr double kWaitShare = 0.2;
constexpr int64_t kSpellWallFactor = 4;
std::atomic<int64_t> g_off_until{0};  // the spell's wall-time end
std::atomic<int64_t> g_off_left{0};   // the time of calls left to it
std::atomic<int64_t> g_off_ns{kOffNs};
std::atomic<int64_t> g_late{0}, g_spells{0};
std::mutex g_window_mu;  // the window's two sums (shared calls are tens of us and up)
int64_t g_window_ns = 0, g_waited_ns = 0;

void verdict(int64_t worked, int64_t waited, int64_t now) {
  if (waited > kLateNs && waited > worked) g_late.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lk(g_window_mu);
  g_window_ns += worked + waited;
  g_waited_ns += waited;
  if (g_window_ns < kWindowNs) return;
  const int64_t off = g_off_ns.load(std::memory_order_relaxed);
  if (double(g_waited_ns) > kWaitShare * double(g_window_ns)) {
    g_off_left.store(off, std::memory_order_relaxed);
    g_off_until.store(now + std::min(kSpellWallFactor * off, kOffMaxNs), std::memory_order_relaxed);
    g_off_ns.store(std::min(off * 2, kOffMaxNs), std::memory_order_relaxed);
    g_spells.fetch_add(1, std::memory_order_relaxed);
  } else if (off > kOffNs) {
    g_off_ns.store(off / 2, std::memory_order_relaxed);
  }
  g_window_ns = g_waited_ns = 0;
}

// The pool's side of a call: `threads` - 1 workers may join; the caller takes tasks too.
static void pool_run(int threads, int ntasks, void (*fn)(void *, int), void *ctx,
                     bool judge) {
  Pool *p = g_pool;
  std::lock_guard<std::mutex> run_lock(p->run_mu);
  std::unique_lock<std::mutex> lk(p->mu);
  while (int(p->slots.size()) < threads - 1) {
    Slot *slot = new Slot();
    std::thread t(worker_main, p, slot);
    slot->thread = t.native_handle();
    pthread_setname_np(t.native_handle(), "kwker-worker");  // what top -H and /proc show
    p->slots.push_back(slot);
    t.detach();
  }
  if (p->sleepers.load() > 0 && now_ns() - p->last_end_ns >= kNarrowIdleNs) narrow_workers(p);
  p->caller_cpu.store(sched_getcpu(), std::memory_order_relaxed);
  p->fn = fn;
  p->ctx = ctx;
  p->ntasks = ntasks;
  p->next = 0;
  p->helpers_max = threads - 1;
  p->helpers = 0;
  p->pending.store(ntasks);
  p->generation.fetch_add(1, std::memory_order_release);
  if (p->sleepers.load() > 0) p->cv_work.notify_all();  // spinning workers see the counter
  const int64_t t0 = judge ? now_ns() : 0;
  drain(p, lk);
  int64_t t1 = 0;  // when the caller ran out of tasks, if workers still held some
  // Only tasks a worker has begun are left: wait for those alone.
  if (p->pending.load() != 0) {
    t1 = now_ns();
    lk.unlock();
    if (!spin_until([&] { return p->pending.load(std::memory_order_acquire) == 0; }))
      rescue(p, sched_getcpu());
    lk.lock();
    p->cv_done.wait(lk, [&] { return p->pending.load() == 0; });
  }
  const int64_t end = p->last_end_ns = now_ns();
  if (judge) verdict((t1 ? t1 : end) - t0, t1 ? end - t1 : 0, end);
}


namespace {
// The runner's threads (torch's OpenMP team) are placed like the pool's workers (Placement):
// after the caller slept, the kernel woke an OpenMP thread onto the caller's own CPU, where it
// waited for the caller, who spun at the team's closing barrier until its time slice ended: a
// linear call's first run after 100 ms asleep took 0.7-6.7 ms against 0.6-0.9 on the pool (2-vCPU
// AMD EPYC, warm calls 0.12-0.19 ms). Each runner thread registers when it first takes part; a
// call after kNarrowIdleNs of idle runner narrows the registered threads' masks by the caller's
// CPU, and each thread, when it next takes part, puts back the mask it had.
struct RunnerThread {
  pid_t tid;
  cpu_set_t own;  // its mask when last narrowed, put back by the thread itself
};
struct RunnerPlacement {
  std::mutex mu;
  std::vector<RunnerThread> threads;
  std::atomic<int64_t> narrowings{0};
  std::atomic<int64_t> last_end_ns{0};
};
RunnerPlacement *g_rp = new RunnerPlacement();
thread_local int t_rp_slot = -1;     // this thread's entry in g_rp->threads
thread_local int64_t t_rp_seen = 0;  // the narrowing it last undid

void runner_thread_enter() {
  RunnerPlacement &rp = *g_rp;
  if (t_rp_slot < 0) {
    RunnerThread t;
    t.tid = pid_t(syscall(SYS_gettid));
    CPU_ZERO(&t.own);
    sched_getaffinity(0, sizeof(t.own), &t.own);
    std::lock_guard<std::mutex> lk(rp.mu);
    t_rp_slot = int(rp.threads.size());
    t_rp_seen = rp.narrowings.load();
    rp.threads.push_back(t);
    return;
  }
  const int64_t n = rp.narrowings.load(std::memory_order_acquire);
  if (n == t_rp_seen) return;
  t_rp_seen = n;
  cpu_set_t own;
  {
    std::lock_guard<std::mutex> lk(rp.mu);
    own = rp.threads[size_t(t_rp_slot)].own;
  }
  sched_setaffinity(0, sizeof(own), &own);
}

// Before a runner call that follows an idle spell: every registered thread (still in this
// process: /proc/self/task says so, a thread id may have been reused) off the caller's CPU.
void narrow_runner_threads() {
  RunnerPlacement &rp = *g_rp;
  const int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE) return;
  std::lock_guard<std::mutex> lk(rp.mu);
  bool any = false;
  for (RunnerThread &t : rp.threads) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/self/task/%d", int(t.tid));
    if (access(path, F_OK) != 0) continue;
    cpu_set_t own, narrow;
    CPU_ZERO(&own);
    if (sched_getaffinity(t.tid, sizeof(own), &own) != 0 || !CPU_ISSET(cpu, &own)) continue;
    if (!without_cpu(own, cpu, narrow)) continue;
    t.own = own;
    if (sched_setaffinity(t.tid, sizeof(narrow), &narrow) == 0) any = true;
  }
  if (any) rp.narrowings.fetch_add(1, std::memory_order_release);
}

// Tasks claimed from one counter, for an external runner: each of its threads takes the next
// task until none is left, so a runner thread that starts late finds the work done.
struct Shared {
  std::atomic<int> next{0};
  int ntasks;
  void (*fn)(void *, int);
  void *ctx;
  pthread_t caller;
  int64_t caller_end = 0;  // when the calling thread ran out of tasks (0: it took none)
};
void claim_shared(void *c, int) {
  Shared &s = *static_cast<Shared *>(c);
  const bool caller = pthread_equal(pthread_self(), s.caller);
  if (!caller) runner_thread_enter();
  for (int i; (i = s.next.fetch_add(1, std::memory_order_relaxed)) < s.ntasks;) s.fn(s.ctx, i);
  if (caller) s.caller_end = now_ns();
}

// The runner's side of a call; false when it declined (nothing ran). judge: keep account.
bool runner_run(int threads, int ntasks, void (*fn)(void *, int), void *ctx, bool judge) {
  Shared s;
  s.ntasks = ntasks;
  s.fn = fn;
  s.ctx = ctx;
  s.caller = pthread_self();
  const int64_t t0 = now_ns();
  if (t0 - g_rp->last_end_ns.load(std::memory_order_relaxed) >= kNarrowIdleNs)
    narrow_runner_threads();
  if (!t_runner(threads, claim_shared, &s)) return false;  // a runner declines before it runs any
  const int64_t t1 = now_ns();
  g_rp->last_end_ns.store(t1, std::memory_order_relaxed);
  if (judge && s.caller_end != 0) verdict(s.caller_end - t0, t1 - s.caller_end, t1);
  return true;
}

}  // namespace

int64_t late_calls() { return g_late.load(std::memory_order_relaxed); }
int64_t runner_placements() { return g_rp->narrowings.load(std::memory_order_relaxed); }
int64_t solo_spells() { return g_spells.load(std::memory_order_relaxed); }

// shared: tasks may outnumber threads, and the call keeps account and heeds a spell
// (Contention); run_parallel's one task per thread does neither.
static void run(int threads, int ntasks, void (*fn)(void *, int), void *ctx, bool shared) {
  if (threads > ntasks) threads = ntasks;
  if (threads <= 1 || t_in_task) {
    for (int i = 0; i < ntasks; ++i) fn(ctx, i);
    return;
  }
  if (shared && g_off_left.load(std::memory_order_relaxed) > 0) {
    const int64_t t0 = now_ns();
    if (t0 < g_off_until.load(std::memory_order_relaxed)) {
      // In a spell. A call that would go to a runner goes to the pool instead, whose waits a
      // Rescue bounds (the runner's OpenMP barrier is what held it); beside a busy process the
      // int8 stack of section 15 took 1.09-1.26 ms a call this way against 1.38-1.43 on the
      // caller alone (one thread 1.37-1.48), and SmolLM2's decode in generate() no slower. A
      // call that was already the pool's runs on the caller alone.
      if (t_runner) {
        pool_run(threads, ntasks, fn, ctx, false);
      } else {
        for (int i = 0; i < ntasks; ++i) fn(ctx, i);
      }
      g_off_left.fetch_sub(now_ns() - t0, std::memory_order_relaxed);
      return;
    }
    g_off_left.store(0, std::memory_order_relaxed);  // its wall time ran out
  }
  if (t_runner && runner_run(threads, ntasks, fn, ctx, shared)) return;
  pool_run(threads, ntasks, fn, ctx, shared);
}

void run_parallel_shared(int threads, int ntasks, void (*fn)(void *, int), void *ctx) {
  run(threads, ntasks, fn, ctx, true);
}

// A task per thread (the sorts' splits and buckets, the prompt kernels' ranges): no account
// kept and no spell. A sort's buckets may differ in size, so its caller's wait says little.
void run_parallel(int ntasks, void (*fn)(void *, int), void *ctx) {
  run(ntasks, ntasks, fn, ctx, false);
}

}  // namespace rt
}  // namespace kwker
