// Kwker against the best native sorts, in one C++ program (`make bench-native`).
//
//   kwker_native_bench --kwker PATH[=LABEL] [--kwker PATH=LABEL ...] [--quick] [--rounds N]
//                      [--only SUBSTRING] [--json PATH] [--isa avx2]
//
// --isa avx2: the whole run held to AVX2 on any x86 machine, so the AVX2 comparison can be made
// on an AVX-512 one: every libkwker on its avx2 engine (kwker_set_isa), Highway's vqsort with
// every target above AVX2 disabled (hwy::DisableTargets), and ips4o, pdqsort and std::sort, which
// the compiler vectorises at build time, from a second build of this program for x86-64-v3
// (AVX2, FMA, BMI2; no AVX-512): kwker_native_bench_avx2, which this binary runs in its place.
//
// Every libkwker given is loaded in its own link namespace (dlmopen), so the current build and
// a previous release are timed side by side in the same run. Competitors, as Debian packages
// them: Highway's vqsort (libhwy-dev), ips4o sequential and parallel (libips4o-dev, on a
// persistent std::thread pool), pdqsort (pdqsort-dev, branchless) and std::sort.
//
// Method: for every case (dtype x size x distribution) all libraries, at one thread and at two,
// run in the same interleaved rounds (so the one- and two-thread rows of a case are timed at the
// same moments), in balanced groups of shuffled orders, and the rounds of all cases are spread
// over the whole run in sweeps (a slow spell of the host touches one round of a case, not all
// of them). Before each timed run the input is
// copied into a pre-faulted buffer (not timed); after it the output is verified: bit for bit
// the input as ips4o sorted it once, outside the timing. The table gives medians over the rounds
// with the spread (min-max), and how much CPU other processes used while the benchmark ran.
#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <hwy/contrib/sort/vqsort.h>
#include <hwy/targets.h>
#include <ips4o.hpp>
#include <pdqsort.h>

#include "kwker/kwker.h"

namespace {

double now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

// ---- libkwker builds, each in its own namespace ----
struct KwkerLib {
  std::string label;
  int (*sort)(int, void *, int64_t, unsigned, int) = nullptr;
  const char *(*version)() = nullptr;
  const char *(*get_isa)() = nullptr;
  int (*set_isa)(const char *) = nullptr;
  const char *(*last_error)() = nullptr;
};

KwkerLib load_kwker(const std::string &arg) {
  const size_t eq = arg.find('=');
  const std::string path = arg.substr(0, eq);
  KwkerLib lib;
  lib.label = eq == std::string::npos ? "kwker" : arg.substr(eq + 1);
  void *h = dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "kwker_native_bench: cannot load %s: %s\n", path.c_str(), dlerror());
    std::exit(2);
  }
  lib.sort = reinterpret_cast<decltype(lib.sort)>(dlsym(h, "kwker_sort"));
  lib.version = reinterpret_cast<decltype(lib.version)>(dlsym(h, "kwker_version"));
  lib.get_isa = reinterpret_cast<decltype(lib.get_isa)>(dlsym(h, "kwker_get_isa"));
  lib.set_isa = reinterpret_cast<decltype(lib.set_isa)>(dlsym(h, "kwker_set_isa"));
  lib.last_error = reinterpret_cast<decltype(lib.last_error)>(dlsym(h, "kwker_last_error"));
  if (!lib.sort || !lib.version || !lib.get_isa) {
    std::fprintf(stderr, "kwker_native_bench: %s is not a libkwker (missing symbols)\n",
                 path.c_str());
    std::exit(2);
  }
  return lib;
}

// ---- inputs ----
enum Dist { kUniform, kDup10, kDistinct16, kSorted, kReversed, kAllEqual, kOrganPipe,
            kSortedSwaps, kNumDists };
const char *const kDistNames[kNumDists] = {"uniform", "10% duplicates", "16 distinct",
                                           "sorted", "reversed", "all equal", "organ pipe",
                                           "sorted + 1% swaps"};

template <class T> T from_u64(uint64_t r) {
  if constexpr (std::is_floating_point<T>::value) return T(double(r >> 11) * 0x1.0p-53);
  else return T(r);
}

// The sorted families are sorted by ips4o on the benchmark's 2-thread pool: std::sort spent
// 20 of a quick run's 300 s making them (not timed, but waited for).
template <class T>
std::vector<T> make_input(int dist, size_t n, uint64_t seed, ips4o::StdThreadPool &pool) {
  std::mt19937_64 g(seed);
  std::vector<T> a(n);
  switch (dist) {
    case kDup10: {  // 10% of the keys repeat another key
      for (size_t i = 0; i < n; ++i) a[i] = from_u64<T>(g());
      for (size_t i = 0; i < n / 10; ++i) a[g() % n] = a[g() % n];
      break;
    }
    case kDistinct16: {
      T v[16];
      for (T &x : v) x = from_u64<T>(g());
      for (size_t i = 0; i < n; ++i) a[i] = v[g() % 16];
      break;
    }
    case kAllEqual: std::fill(a.begin(), a.end(), from_u64<T>(g())); break;
    default:
      for (size_t i = 0; i < n; ++i) a[i] = from_u64<T>(g());
  }
  if (dist == kSorted || dist == kSortedSwaps || dist == kOrganPipe)
    ips4o::parallel::sort(a.begin(), a.end(), std::less<T>(), pool);
  if (dist == kReversed) ips4o::parallel::sort(a.begin(), a.end(), std::greater<T>(), pool);
  if (dist == kOrganPipe) {  // ascending then descending
    std::vector<T> b(n);
    for (size_t i = 0; i < n; ++i) b[i % 2 ? n - 1 - i / 2 : i / 2] = a[i];
    a.swap(b);
  }
  if (dist == kSortedSwaps)
    for (size_t i = 0; i < n / 100; ++i) std::swap(a[g() % n], a[g() % n]);
  return a;
}

// ---- libraries under test ----
struct Lib {
  std::string name;
  int threads;
  std::function<bool(void *, size_t)> run;  // sorts in place; false on an error
  bool sorts = true;                        // false: the "copy" floor, not verified
  bool kwker = false;                       // a build of Kwker (--kwker), not a competitor
  // In the base rounds only: the extra rounds of short cases are for Kwker's own comparisons
  // and the targets, which this library's runs in that case do not enter (std::sort of 16
  // distinct values at 1e6 takes 18 ms a run; ips4o of sorted int64 at 1e7, 15 ms). Set per
  // case by add_cases, from what report.py's targets read.
  bool base_only = false;
};

template <class T> int kwker_dtype() {
  if constexpr (std::is_same<T, float>::value) return KWKER_FLOAT32;
  else if constexpr (std::is_same<T, double>::value) return KWKER_FLOAT64;
  else if constexpr (std::is_same<T, int32_t>::value) return KWKER_INT32;
  else return KWKER_INT64;
}

template <class T>
std::vector<Lib> libraries(const std::vector<KwkerLib> &kw, int threads, bool slow_ok,
                           ips4o::StdThreadPool &pool) {
  std::vector<Lib> libs;
  for (const KwkerLib &k : kw) {
    auto sort = k.sort;
    libs.push_back({k.label, threads, [sort, threads](void *p, size_t n) {
                      return sort(kwker_dtype<T>(), p, int64_t(n), 0, threads) == KWKER_OK;
                    }, true, true});
  }
  if (threads == 1) {
    // The floor: one plain copy of the array, the cost of touching every key once.
    libs.push_back({"copy", 1, [](void *p, size_t n) {
                      static std::vector<T> dst;
                      if (dst.size() < n) dst.assign(n, T());
                      std::memcpy(dst.data(), p, n * sizeof(T));
                      return true;
                    }, false});
    static const hwy::Sorter sorter;
    libs.push_back({"vqsort", 1, [](void *p, size_t n) {
                      sorter(static_cast<T *>(p), n, hwy::SortAscending());
                      return true;
                    }});
    libs.push_back({"ips4o", 1, [](void *p, size_t n) {
                      T *a = static_cast<T *>(p);
                      ips4o::sort(a, a + n);
                      return true;
                    }});
    if (slow_ok) {
      libs.push_back({"pdqsort", 1, [](void *p, size_t n) {
                        T *a = static_cast<T *>(p);
                        pdqsort_branchless(a, a + n);
                        return true;
                      }});
      libs.push_back({"std::sort", 1, [](void *p, size_t n) {
                        T *a = static_cast<T *>(p);
                        std::sort(a, a + n);
                        return true;
                      }});
    }
  } else {
    libs.push_back({"ips4o-par", threads, [&pool](void *p, size_t n) {
                      T *a = static_cast<T *>(p);
                      ips4o::parallel::sort(a, a + n, std::less<>(), pool);
                      return true;
                    }});
  }
  return libs;
}

struct Stat {
  double median, lo, hi;
};
Stat stat(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

// Total CPU seconds all processes used (from /proc/stat) and this process's own.
void cpu_totals(double &all, double &own) {
  all = 0;
  if (FILE *f = std::fopen("/proc/stat", "r")) {
    unsigned long long v[10] = {};
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                    &v[3], &v[4], &v[5], &v[6], &v[7]) >= 3)
      all = double(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / double(sysconf(_SC_CLK_TCK));
    std::fclose(f);
  }
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  own = ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec + ru.ru_stime.tv_sec +
        1e-6 * ru.ru_stime.tv_usec;
}

struct Options {
  std::vector<KwkerLib> kwker;
  bool quick = false;
  int rounds = 7;
  std::string only;
  std::string json;
};

int g_failures = 0;
std::string g_json;  // one object per (case, library), for report.py
// Where the wall time goes (seconds): making inputs, copying them in, the busy pauses, the timed
// runs, verifying outputs. Printed at the end, so a slow run says what made it slow.
double g_spent_input = 0, g_spent_copy = 0, g_spent_pause = 0, g_spent_timed = 0,
       g_spent_verify = 0;

// One case (dtype x size x input) with everything its rounds need: both thread counts'
// libraries, the input and its sorted reference, the times so far, the round order.
struct Case {
  const char *dtype;
  int dist;
  size_t n, bytes;
  std::string labels[2];  // the one- and two-thread rows
  std::vector<Lib> libs;  // both rows' libraries; Lib::threads says which row
  std::shared_ptr<void> keep;  // owns input and want
  const void *input, *want;
  std::vector<std::vector<double>> times;
  std::vector<size_t> thread_mate, build_mate, base, order;
  std::mt19937 order_rng;
  int group = 2, rounds = 0, base_rounds = 0;  // base_only libraries run base_rounds
};

template <class T>
void add_cases(const char *dtype, const std::vector<size_t> &sizes, const Options &opt,
               ips4o::StdThreadPool &pool, std::vector<Case> &cases) {
  for (size_t n : sizes) {
    for (int dist = 0; dist < kNumDists; ++dist) {
      // 1e8 only for the random inputs: each run there takes about a second.
      if (n > 10000000 && dist != kUniform && dist != kDup10) continue;
      Case c;
      c.dtype = dtype;
      c.dist = dist;
      c.n = n;
      c.bytes = n * sizeof(T);
      // Both thread counts' libraries run in the same interleaved rounds, so "two threads
      // never slower than one" compares runs of the same moments, not two blocks seconds
      // apart on a host whose other tenants come and go.
      for (int threads : {1, 2}) {
        char label[160];
        std::snprintf(label, 160, "%s | %s | %zu | %d", dtype, kDistNames[dist], n, threads);
        c.labels[threads - 1] = label;
        if (!opt.only.empty() && c.labels[threads - 1].find(opt.only) == std::string::npos)
          continue;
        const bool slow_ok = !(opt.quick && n >= 10000000) && n <= 10000000;
        for (Lib &l : libraries<T>(opt.kwker, threads, slow_ok, pool))
          c.libs.push_back(std::move(l));
      }
      // Which competitors a target reads in this case (report.py): vqsort in the random and
      // duplicate inputs, ips4o and the copy in the presorted float inputs at 1e7.
      const bool presorted_target = std::is_floating_point<T>::value && n == 10000000 &&
                                    (dist == kSorted || dist == kReversed || dist == kAllEqual);
      for (Lib &l : c.libs) {
        const bool read = l.kwker || l.name == "copy" ||
                          (l.name == "vqsort" && (dist == kUniform || dist == kDup10 ||
                                                  dist == kDistinct16)) ||
                          (l.name.rfind("ips4o", 0) == 0 && presorted_target);
        l.base_only = !read;
      }
      if (c.libs.empty()) continue;  // --only left none: no input to make
      const double t_in = now();
      auto data = std::make_shared<std::pair<std::vector<T>, std::vector<T>>>();
      data->first = make_input<T>(dist, n, 42 + n + dist, pool);
      data->second = data->first;
      ips4o::parallel::sort(data->second.begin(), data->second.end(), std::less<T>(), pool);
      c.input = data->first.data();
      c.want = data->second.data();
      c.keep = data;
      g_spent_input += now() - t_in;

      const size_t L = c.libs.size();
      c.times.resize(L);
      // Rounds come in balanced groups. A run is faster when the run before it was the same
      // code (kwker's other thread count: sorted float32 at 1e5 took 0.085 ns/el after it and
      // 0.10 after any other library, its branch and instruction caches still warm), so a
      // shuffle that by chance put kwker's one-thread run after its two-thread run more often
      // than the reverse made the same code at both counts differ by 3-7%, and with one seed
      // for all four dtypes, on the same input in all four. Each group runs one shuffled order
      // and its images under the swaps that the targets compare: a kwker build's one- and
      // two-thread runs (thread_mate), and the first two kwker builds at the same thread count
      // (build_mate). Over a group both runs of each compared pair have the same predecessors.
      c.thread_mate.resize(L);
      c.build_mate.resize(L);
      bool two_builds = false;
      for (size_t i = 0; i < L; ++i) {
        c.thread_mate[i] = c.build_mate[i] = i;
        const std::string &name = c.libs[i].name;
        if (!c.libs[i].kwker) continue;
        for (size_t j = 0; j < L; ++j) {
          if (c.libs[j].name == name && c.libs[j].threads != c.libs[i].threads)
            c.thread_mate[i] = j;
          if (opt.kwker.size() >= 2 && c.libs[j].threads == c.libs[i].threads &&
              ((name == opt.kwker[0].label && c.libs[j].name == opt.kwker[1].label) ||
               (name == opt.kwker[1].label && c.libs[j].name == opt.kwker[0].label)))
            c.build_mate[i] = j;
        }
        two_builds |= c.build_mate[i] != i;
      }
      c.group = two_builds ? 4 : 2;
      // --quick drops 1e8 only: the targets are medians of at least 7 rounds.
      // More rounds where a run is short and a median of 7 moves with one preempted or
      // bandwidth-starved run: ten times at 1e5 keys (10-400 us a run, where the one- and
      // two-thread runs of the same code still differed by 5-8% in 21 rounds), more for the
      // inputs Kwker sorts in one or two memory-bound passes: sorted, reversed, all equal
      // (reversed float64 at 1e7 spread 0.69-1.41 ns/el within 15 rounds of one build) and 16
      // distinct values (a count). Below 2^21 keys those run one thread's code at both thread
      // counts, where runs differ by 5-10% and a median of 24 rounds still fell to 0.95-0.96x
      // now and then (one cell in 40 per run): nine times at 1e6, three at 1e5 and 1e7 (at
      // 1e7 two threads run twice as fast). Rounded up to whole groups.
      const bool cheap = dist == kSorted || dist == kReversed || dist == kAllEqual ||
                         dist == kDistinct16;
      const int wanted = n > 10000000 ? 3
                         : n <= 100000 ? opt.rounds * 10 * (cheap ? 3 : 1)
                         : n <= 1000000 ? opt.rounds * (cheap ? 9 : 1)
                                        : opt.rounds * (cheap ? 3 : 1);
      auto whole = [&](int r) { return (r + c.group - 1) / c.group * c.group; };
      c.rounds = whole(wanted);
      c.base_rounds = std::min(c.rounds, whole(n > 10000000 ? 3 : opt.rounds));
      // A fresh order every group (seeded by the case, dtype included, so runs repeat): a
      // rotation keeps each library's predecessor fixed, and the one after the parallel ips4o
      // always ran on a host just woken by two busy threads (kwker's one- and two-thread rows
      // of the same code at 1e5 differed by 5-15% by position alone).
      c.order_rng.seed(uint32_t(n * 131 + dist * 17 + sizeof(T) * 7 +
                                std::is_floating_point<T>::value));
      c.base.resize(L);
      c.order.resize(L);
      for (size_t j = 0; j < L; ++j) c.base[j] = j;
      cases.push_back(std::move(c));
    }
  }
}

// Round r of case c: every library once, in this round's order.
void run_round(Case &c, int r, void *work) {
  if (r % c.group == 0) std::shuffle(c.base.begin(), c.base.end(), c.order_rng);
  for (size_t j = 0; j < c.base.size(); ++j) {
    size_t i = c.base[j];
    if (r % 2) i = c.thread_mate[i];
    if (r % 4 >= 2) i = c.build_mate[i];
    c.order[j] = i;
  }
  for (size_t j = 0; j < c.libs.size(); ++j) {
    const size_t i = c.order[j];
    if (c.libs[i].base_only && r >= c.base_rounds) continue;
    // No other library's threads may still run: Kwker's pool workers spin 50 us after a
    // parallel call before they block, and two builds of Kwker (dlmopen) have two pools, so a
    // run right after the other build's two-thread run shared the cores with its spinning
    // worker (float32 at 1e5 on two threads: 1.76 or 3.5-4 ns/el by which library ran before).
    // So every run starts after a pause longer than that, spent busy as a program between two
    // sorts is: a pause asleep would time the first call after an idle machine instead (before
    // Kwker placed its woken workers off the caller's CPU, that cost up to a millisecond on
    // these VMs: design.md).
    const double t_pause = now();
    for (const double until = t_pause + 200e-6; now() < until;) {
    }
    const double t_copy = now();
    std::memcpy(work, c.input, c.bytes);
    const double t0 = now();
    const bool ok = c.libs[i].run(work, c.n);
    const double t1 = now();
    c.times[i].push_back((t1 - t0) * 1e9 / double(c.n));
    // Right when it equals, bit for bit, the input as ips4o sorted it outside the timing (the
    // inputs hold no NaN and no -0.0, so equal keys have equal bits). memcmp runs at memory
    // speed: the multiset hash and ordered-pairs check it replaced spent 82 of 290 s.
    const bool good = ok && (!c.libs[i].sorts || std::memcmp(work, c.want, c.bytes) == 0);
    g_spent_pause += t_copy - t_pause;
    g_spent_copy += t0 - t_copy;
    g_spent_timed += t1 - t0;
    g_spent_verify += now() - t1;
    if (!good) {
      std::fprintf(stderr, "WRONG RESULT: %s on %s\n", c.libs[i].name.c_str(),
                   c.labels[c.libs[i].threads - 1].c_str());
      ++g_failures;
    }
  }
}

// The case's two rows, in the Markdown table and in the JSON.
void report_case(const Case &c) {
  for (int threads : {1, 2}) {
    if (std::none_of(c.libs.begin(), c.libs.end(),
                     [&](const Lib &l) { return l.threads == threads; }))
      continue;
    std::printf("| %s |", c.labels[threads - 1].c_str());
    for (size_t i = 0; i < c.libs.size(); ++i) {
      if (c.libs[i].threads != threads) continue;
      Stat s = stat(c.times[i]);
      std::printf(" %s %.2f [%.2f-%.2f]", c.libs[i].name.c_str(), s.median, s.lo, s.hi);
      char rec[400];
      std::snprintf(rec, sizeof rec,
                    "%s{\"dtype\": \"%s\", \"input\": \"%s\", \"n\": %zu, \"threads\": %d, "
                    "\"lib\": \"%s\", \"ns_median\": %.4f, \"ns_min\": %.4f, "
                    "\"ns_max\": %.4f, \"rounds\": %zu, \"ns\": [",
                    g_json.empty() ? "" : ",\n", c.dtype, kDistNames[c.dist], c.n, threads,
                    c.libs[i].name.c_str(), s.median, s.lo, s.hi, c.times[i].size());
      g_json += rec;
      // Every round's time in round order: report.py pairs the runs of one round (the same
      // moments of the host) and takes the median of their ratios.
      for (size_t r = 0; r < c.times[i].size(); ++r) {
        std::snprintf(rec, sizeof rec, "%s%.4f", r ? ", " : "", c.times[i][r]);
        g_json += rec;
      }
      g_json += "]}";
    }
    std::printf(" |\n");
  }
  std::fflush(stdout);
}

// One pass over a set of sizes: every case's inputs made first, then the rounds in sweeps,
// each sweep taking its share of every case's rounds. A case's rounds used to run back to
// back, within a second at 1e6, and a spell of a few seconds in which the host slowed the
// second vCPU (two threads 3.1-3.3 ns/el against 2.5 for one, in every round of float32 with
// 10% duplicates at 1e6, both builds, while the next case measured 2.2) then decided the
// case's median. Spread over the whole run, such a spell touches one round of a case, and
// the median discards it. The inputs of all cases stay in memory (about 4 GB for --quick).
void run_pass(const std::vector<size_t> &sizes, const Options &opt,
              ips4o::StdThreadPool &pool) {
  std::vector<Case> cases;
  add_cases<float>("float32", sizes, opt, pool, cases);
  add_cases<int32_t>("int32", sizes, opt, pool, cases);
  add_cases<double>("float64", sizes, opt, pool, cases);
  add_cases<int64_t>("int64", sizes, opt, pool, cases);
  if (cases.empty()) return;
  size_t most = 0;
  int sweeps = cases[0].rounds;
  for (const Case &c : cases) {
    most = std::max(most, c.bytes);
    sweeps = std::min(sweeps, c.rounds);
  }
  std::vector<char> work(most);
  std::memset(work.data(), 0, most);  // pre-faulted once, reused by every run
  for (int s = 0; s < sweeps; ++s) {
    const double t0 = now();
    for (Case &c : cases)
      for (int r = s * c.rounds / sweeps; r < (s + 1) * c.rounds / sweeps; ++r)
        run_round(c, r, work.data());
    if ((s + 1) % std::max(1, sweeps / 8) == 0 || s + 1 == sweeps)
      std::fprintf(stderr, "sweep %d of %d: %.1f s\n", s + 1, sweeps, now() - t0);
  }
  for (const Case &c : cases) report_case(c);
}

}  // namespace

// --isa avx2 from the -march=native build: the x86-64-v3 build beside it runs the whole benchmark
// (exec, same arguments), so the competitors the compiler vectorises are held to AVX2 as well.
int run_avx2_build(char **argv) {
  std::string self = argv[0];
  char buf[4096];
  ssize_t len = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (len > 0) self.assign(buf, size_t(len));
  std::string avx2 = self + "_avx2";
  execv(avx2.c_str(), argv);
  std::fprintf(stderr, "kwker_native_bench: --isa avx2 runs %s, which did not start (%s); build "
                       "the target kwker_native_bench_avx2 (make bench-native builds both)\n",
               avx2.c_str(), std::strerror(errno));
  return 2;
}

// Every library held to AVX2: Kwker's engine and Highway's dispatch (this build itself is x86-64-v3).
bool hold_to_avx2(const std::vector<KwkerLib> &kw) {
  for (const KwkerLib &k : kw) {
    if (!k.set_isa || k.set_isa("avx2") != KWKER_OK || std::strcmp(k.get_isa(), "avx2") != 0) {
      std::fprintf(stderr, "kwker_native_bench: --isa avx2: %s cannot run its avx2 engine on this "
                           "CPU (%s)\n", k.label.c_str(), k.last_error ? k.last_error() : "?");
      return false;
    }
  }
  hwy::DisableTargets(HWY_AVX2 - 1);  // every x86 target better than AVX2 (lower bits)
  const int64_t best = hwy::SupportedTargets() & -hwy::SupportedTargets();
  if (best != HWY_AVX2) {
    std::fprintf(stderr, "kwker_native_bench: --isa avx2: Highway's best target is %s, not AVX2 "
                         "(a CPU without AVX2?)\n", hwy::TargetName(best));
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  Options opt;
  bool avx2 = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--isa" && i + 1 < argc) {
      std::string isa = argv[++i];
      if (isa != "avx2" && isa != "native") {
        std::fprintf(stderr, "kwker_native_bench: --isa %s is not valid: use avx2 (the whole run "
                             "held to AVX2) or native (the default)\n", isa.c_str());
        return 2;
      }
      avx2 = isa == "avx2";
    }
  }
#ifndef KWKER_BENCH_AVX2
  if (avx2) return run_avx2_build(argv);
#endif
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--isa") ++i;  // read above
    else if (a == "--kwker" && i + 1 < argc) opt.kwker.push_back(load_kwker(argv[++i]));
    else if (a == "--quick") opt.quick = true;
    else if (a == "--rounds" && i + 1 < argc) opt.rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--only" && i + 1 < argc) opt.only = argv[++i];
    else if (a == "--json" && i + 1 < argc) opt.json = argv[++i];
    else {
      std::fprintf(stderr, "usage: kwker_native_bench --kwker PATH[=LABEL] [--kwker ...] "
                           "[--quick] [--rounds N] [--only SUBSTRING] [--json PATH] "
                           "[--isa avx2|native]\n");
      return 2;
    }
  }
  if (opt.kwker.empty()) {
    std::fprintf(stderr, "kwker_native_bench: give at least one --kwker PATH\n");
    return 2;
  }
#ifdef KWKER_BENCH_AVX2
  if (!hold_to_avx2(opt.kwker)) return 2;
#endif
  ips4o::StdThreadPool pool(2);
  double all0, own0;
  cpu_totals(all0, own0);
  const double wall0 = now();
  std::printf("# Native sort benchmark: ns per element, median [min-max] of %d interleaved "
              "rounds or more (whole groups; 4 at 1e8)\n\n", opt.rounds);
  for (const KwkerLib &k : opt.kwker)
    std::printf("- %s: libkwker %s, engine %s\n", k.label.c_str(), k.version(), k.get_isa());
  std::printf("- vqsort: Highway %s (Debian), ips4o and pdqsort (Debian), std::sort "
              "(libstdc++); ips4o-par on a persistent 2-thread pool\n", KWKER_HWY_VERSION);
#ifdef KWKER_BENCH_AVX2
  std::printf("- held to AVX2 (--isa avx2): Kwker's avx2 engine; vqsort on Highway's %s target "
              "(targets above it disabled); ips4o, pdqsort and std::sort compiled for x86-64-v3 "
              "(no AVX-512)\n\n", hwy::TargetName(hwy::SupportedTargets() & -hwy::SupportedTargets()));
#else
  std::printf("- native: every library on the best this CPU runs (ips4o, pdqsort and std::sort "
              "compiled with -march=native)\n\n");
#endif
  std::printf("| dtype | input | n | threads | results |\n|---|---|---:|---:|---|\n");
  // Sizes up to 1e7 in one pass; 1e8 (the full run) in a second, so that its inputs are not
  // held beside the others' (about 10 GB more).
  run_pass({100000, 1000000, 10000000}, opt, pool);
  if (!opt.quick) run_pass({100000000}, opt, pool);
  double all1, own1;
  cpu_totals(all1, own1);
  const double wall = now() - wall0, others = (all1 - all0) - (own1 - own0);
  std::printf("\nwall time %.1f s; other processes used %.1f CPU-s meanwhile (%.0f%% of %u "
              "CPUs); %d wrong results\n", wall, others > 0 ? others : 0.0,
              100.0 * (others > 0 ? others : 0.0) / (wall * std::thread::hardware_concurrency()),
              std::thread::hardware_concurrency(), g_failures);
  std::printf("time spent: timed runs %.1f s, inputs %.1f s, copies %.1f s, pauses %.1f s, "
              "verification %.1f s\n", g_spent_timed, g_spent_input, g_spent_copy,
              g_spent_pause, g_spent_verify);
  if (!opt.json.empty()) {
    FILE *f = std::fopen(opt.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "kwker_native_bench: cannot write %s\n", opt.json.c_str());
      return 2;
    }
    std::fprintf(f, "{\"wall_s\": %.1f, \"other_cpu_s\": %.1f, \"cpus\": %u, "
                    "\"wrong_results\": %d, \"results\": [\n%s\n]}\n",
                 wall, others > 0 ? others : 0.0, std::thread::hardware_concurrency(),
                 g_failures, g_json.c_str());
    std::fclose(f);
  }
  return g_failures ? 1 : 0;
}
