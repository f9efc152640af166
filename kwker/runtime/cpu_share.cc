// Fair shares of the CPUs between Kwker processes (cpu_share.h).
//
// Why: with two processes each running its parallel calls on the whole budget, four threads
// share two CPUs; every thread then gets half a CPU, a call waits for whichever of its threads
// the scheduler left off, and the two-thread algorithms do their extra work (a sort's split
// pass) for nothing: two copies of a two-thread sort of 1e7 keys took 1.15x as long as two
// copies of the one-thread sort (docs/benchmarks.md, contention). A busy process that is not
// Kwker is another matter: beside it a second thread still gains (the scheduler shares CPUs
// between threads, not processes), so only Kwker processes count each other.
//
// How: one page of shared memory per user, /dev/shm/kwker-cpu-share-<uid> (mode 0600), holds a
// slot per process: its pid, how many parallel calls it is running, when it last began or ended
// one (CLOCK_MONOTONIC, the same clock for every process) and its CPU mask. A parallel call marks
// its own slot busy and counts the other processes busy on CPUs it may use (or that ended a call
// in the last kLingerNs: the gap between two calls of a busy process); with P of them it takes
// budget / (P + 1) threads. Lock-free: every field is an atomic of its own, and a count that is
// off by one process for one call only moves that call's thread count.
//
// A process that dies inside a call leaves its slot busy: a busy slot whose call began over
// kCheckNs ago is checked for a live process (kill(pid, 0), at most once per kCheckNs and slot)
// and freed when it is gone; a busy slot counts for kStaleNs at most. KWKER_CPU_SHARE_FILE names
// another table (processes share the CPUs with those that name the same file); a table that is
// missing, read-only or full only turns the sharing off ("unavailable: ...").
// open() of /dev/shm rather than shm_open(): the same file without librt, which glibc 2.28 (the
// manylinux floor) keeps apart.
#include "runtime/cpu_share.h"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace kwker {
namespace rt {
namespace {

constexpr uint32_t kMagic = 0x4b575348;  // "KWSH"
constexpr uint32_t kVersion = 1;
constexpr int kSlots = 120;
// A busy slot counts this long after its call began (a process killed inside a call stops
// counting then; a call that really runs longer is only shared with as long).
constexpr int64_t kStaleNs = int64_t(10) * 1000000000;
// An ended call counts this long: a busy process goes from one call to its next through Python,
// freeing the last result and allocating the next (a sort of 1e7 floats: 1-3 ms of munmap and
// page faults), and must not look idle in between. At 2 ms, two copies of that sort still ran
// some calls on four threads (0.95x the one-thread copies against 1.0x by hand).
constexpr int64_t kLingerNs = 10000000;
// A slot whose process has not touched it for this long may be checked for a dead process.
constexpr int64_t kReclaimNs = 1000000000;
// A busy slot whose call began this long ago is checked for a live process.
constexpr int64_t kCheckNs = 100000000;

struct Slot {
  std::atomic<int32_t> pid;    // 0: free
  std::atomic<int32_t> busy;   // parallel calls of that process running now
  std::atomic<int64_t> stamp;  // when it last began or ended one
  std::atomic<uint64_t> mask[2];  // CPUs 0-127 it may use (all ones beyond what it knows)
};
struct Table {
  std::atomic<uint32_t> magic;
  std::atomic<uint32_t> version;
  std::atomic<int32_t> used;  // slots [0, used) were ever taken
  int32_t reserved[13];
  Slot slots[kSlots];
};
static_assert(sizeof(Table) <= 4096, "one page");
static_assert(std::atomic<int64_t>::is_always_lock_free, "atomics in shared memory");

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::mutex g_mu;              // opening the table and taking a slot
std::atomic<Table *> g_table{nullptr};
std::atomic<int> g_slot{-1};  // this process's slot; -1 before it takes one (and after fork)
std::string g_state = "on";   // what cpu_share_state() says (written under g_mu)
std::atomic<bool> g_failed{false};
std::atomic<int64_t> g_reductions{0};
std::atomic<int> g_peers{0};
uint64_t g_mask[2] = {~uint64_t(0), ~uint64_t(0)};
std::atomic<int64_t> g_checked[kSlots];  // when this process last checked slot i's process

bool enabled_by_env() {
  static const bool on = [] {
    const char *v = std::getenv("KWKER_CPU_SHARE");
    if (!v || !*v) return true;
    std::string s(v);
    for (auto &ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (s == "0" || s == "off" || s == "false" || s == "no") {
      g_state = "off (KWKER_CPU_SHARE=" + std::string(v) + ")";
      return false;
    }
    if (!(s == "1" || s == "on" || s == "true" || s == "yes"))
      g_state = "on (KWKER_CPU_SHARE='" + std::string(v) +
                "' not understood: use 0 to turn the sharing off, 1 to keep it on)";
    return true;
  }();
  return on;
}

void fail(const std::string &why) {  // under g_mu
  g_state = "unavailable: " + why;
  g_failed.store(true, std::memory_order_release);
}

Table *open_table() {  // under g_mu
  const char *env = std::getenv("KWKER_CPU_SHARE_FILE");
  const std::string path = env && *env ? std::string(env)
                                       : "/dev/shm/kwker-cpu-share-" + std::to_string(unsigned(getuid()));
  if (path[0] != '/') {
    fail("KWKER_CPU_SHARE_FILE must be an absolute path (got '" + path + "')");
    return nullptr;
  }
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    fail(path + ": " + std::strerror(errno));
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) {
    close(fd);
    fail(path + " is not a regular file of this user");
    return nullptr;
  }
  // Two processes creating it at once both extend it to the same size; zeros are a valid table.
  if (st.st_size < off_t(sizeof(Table)) && ftruncate(fd, off_t(4096)) != 0) {
    const int e = errno;
    close(fd);
    fail(path + ": " + std::strerror(e));
    return nullptr;
  }
  void *p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    fail(path + ": mmap: " + std::strerror(errno));
    return nullptr;
  }
  Table *t = static_cast<Table *>(p);
  uint32_t m = 0;
  if (t->magic.compare_exchange_strong(m, kMagic)) t->version.store(kVersion);
  else if (m != kMagic) {
    munmap(p, 4096);
    fail(path + " holds something else (remove it)");
    return nullptr;
  }
  // A creator that set the magic a moment ago may not have stored the version yet.
  for (int i = 0; i < 1000 && t->version.load() == 0; ++i) sched_yield();
  if (t->version.load() != kVersion) {
    munmap(p, 4096);
    fail(path + " is another Kwker version's table (version " +
         std::to_string(t->version.load()) + ", this one " + std::to_string(kVersion) + ")");
    return nullptr;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    g_mask[0] = g_mask[1] = 0;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) g_mask[c < 128 ? c / 64 : 1] |= uint64_t(1) << (c < 128 ? c % 64 : 63);
  }
  return t;
}

bool process_gone(int32_t pid) { return kill(pid_t(pid), 0) != 0 && errno == ESRCH; }

void release_slot() {  // at exit: the slot is free for the next process
  Table *t = g_table.load();
  const int s = g_slot.load();
  if (!t || s < 0) return;
  Slot &me = t->slots[s];
  me.busy.store(0);
  int32_t pid = int32_t(getpid());
  me.pid.compare_exchange_strong(pid, 0);
}

void forget_slot_in_child() { g_slot.store(-1); }  // the child takes a slot of its own

int take_slot(Table *t) {  // under g_mu
  const int32_t pid = int32_t(getpid());
  const int64_t now = mono_ns();
  auto init = [&](Slot &s) {  // after the claim: a reader sees at worst the old owner's counts
    s.busy.store(0);
    s.stamp.store(now);
    s.mask[0].store(g_mask[0]);
    s.mask[1].store(g_mask[1]);
  };
  for (int i = 0; i < kSlots; ++i)
    if (t->slots[i].pid.load() == pid) {  // left by a dead process that had this pid
      init(t->slots[i]);
      return i;
    }
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kSlots; ++i) {
      Slot &s = t->slots[i];
      int32_t p = s.pid.load();
      // Second pass: a process that has not touched its slot for a while may be gone.
      if (p != 0 && (pass == 0 || now - s.stamp.load() < kReclaimNs || !process_gone(p)))
        continue;
      if (!s.pid.compare_exchange_strong(p, pid)) continue;
      init(s);
      int32_t used = t->used.load();
      while (used < i + 1 && !t->used.compare_exchange_weak(used, i + 1)) {
      }
      return i;
    }
  }
  fail("all " + std::to_string(kSlots) + " slots are taken by running processes");
  return -1;
}

// This process's table and slot; null when the sharing is off or cannot work here.
Table *mine(int &slot) {
  if (!enabled_by_env() || g_failed.load(std::memory_order_acquire)) return nullptr;
  Table *t = g_table.load(std::memory_order_acquire);
  slot = g_slot.load(std::memory_order_acquire);
  if (t && slot >= 0) return t;
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_failed.load()) return nullptr;
  t = g_table.load();
  if (!t) {
    t = open_table();
    if (!t) return nullptr;
    g_table.store(t, std::memory_order_release);
    static std::once_flag hooks;
    std::call_once(hooks, [] {
      std::atexit(release_slot);
      pthread_atfork(nullptr, nullptr, forget_slot_in_child);
    });
  }
  slot = g_slot.load();
  if (slot < 0) {
    slot = take_slot(t);
    if (slot < 0) return nullptr;
    g_slot.store(slot, std::memory_order_release);
  }
  return t;
}

}  // namespace

int SharedCall::begin(int threads, int budget) {
  if (threads <= 1) return threads;
  int s;
  Table *t = mine(s);
  if (!t) return threads;
  Slot &me = t->slots[s];
  const int64_t now = mono_ns();
  me.stamp.store(now, std::memory_order_relaxed);
  me.busy.fetch_add(1, std::memory_order_acq_rel);
  marked_ = true;
  int peers = 0;
  const int used = t->used.load(std::memory_order_acquire);
  for (int i = 0; i < used && i < kSlots; ++i) {
    if (i == s) continue;
    Slot &o = t->slots[i];
    int32_t pid = o.pid.load(std::memory_order_acquire);
    if (pid == 0) continue;
    const int64_t age = now - o.stamp.load(std::memory_order_relaxed);
    const bool busy = o.busy.load(std::memory_order_relaxed) > 0;
    if (busy ? age >= kStaleNs : age >= kLingerNs) continue;
    if (busy && age >= kCheckNs && now - g_checked[i].load(std::memory_order_relaxed) >= kCheckNs) {
      g_checked[i].store(now, std::memory_order_relaxed);
      if (process_gone(pid)) {  // killed inside a call: free its slot (its busy count is reset
        o.pid.compare_exchange_strong(pid, 0);  // by the next owner)
        continue;
      }
    }
    if (!((o.mask[0].load(std::memory_order_relaxed) & g_mask[0]) |
          (o.mask[1].load(std::memory_order_relaxed) & g_mask[1])))
      continue;  // pinned to other CPUs
    ++peers;
  }
  if (peers == 0) return threads;
  int share = budget / (peers + 1);
  if (share < 1) share = 1;
  if (share >= threads) return threads;
  g_reductions.fetch_add(1, std::memory_order_relaxed);
  g_peers.store(peers, std::memory_order_relaxed);
  return share;
}

SharedCall::~SharedCall() {
  if (!marked_) return;
  Table *t = g_table.load(std::memory_order_acquire);
  const int s = g_slot.load(std::memory_order_acquire);
  if (!t || s < 0) return;  // forked in between: the parent's slot is not ours to touch
  Slot &me = t->slots[s];
  me.stamp.store(mono_ns(), std::memory_order_relaxed);
  me.busy.fetch_sub(1, std::memory_order_acq_rel);
}

const char *cpu_share_state() {
  enabled_by_env();
  std::lock_guard<std::mutex> lk(g_mu);
  static thread_local std::string copy;
  copy = g_state;
  return copy.c_str();
}
int64_t shared_reductions() { return g_reductions.load(std::memory_order_relaxed); }
int cpu_share_peers() { return g_peers.load(std::memory_order_relaxed); }

}  // namespace rt
}  // namespace kwker
