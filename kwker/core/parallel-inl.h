// Multithreaded building blocks over the runtime pool: task fan-out and a sample-partition
// sort (one splitting pass into per-thread buckets, then every bucket sorted independently),
// which needs no merge pass afterwards.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

#include <sched.h>

#include "core/engine.h"
#include "core/engine_ns-inl.h"
#include "core/memory-inl.h"
#include "core/simd-inl.h"
#include "core/vqsort-inl.h"
#include "kwker/kwker.h"
#include "runtime/scratch.h"
#include "runtime/threads.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

template <class F> void parallel_tasks(CallCtx &ctx, int ntasks, F &f) {
  if (ntasks > ctx.used_threads) ctx.used_threads = ntasks;
  rt::run_parallel(
      ntasks, [](void *c, int i) { (*static_cast<F *>(c))(i); }, &f);
}

// ntasks tasks on the call's threads: in parallel, or one after another when it has one.
template <class F> void run_tasks(CallCtx &ctx, int ntasks, F &f) {
  if (ctx.threads > 1) {
    parallel_tasks(ctx, ntasks, f);
    return;
  }
  for (int i = 0; i < ntasks; ++i) f(i);
}

// A buffer of n elements: on the stack up to N (short calls skip the scratch cache's lock),
// else from scratch (ptr is null when scratch is refused).
template <class T, size_t N> struct SmallBuffer {
  alignas(64) T local[N];
  T *ptr;
  size_t bytes = 0;
  explicit SmallBuffer(size_t n) : ptr(local) {
    if (n > N) {
      bytes = n * sizeof(T);
      ptr = static_cast<T *>(rt::scratch_acquire(bytes));
    }
  }
  ~SmallBuffer() {
    if (bytes) rt::scratch_release(ptr, bytes);
  }
  SmallBuffer(const SmallBuffer &) = delete;
  SmallBuffer &operator=(const SmallBuffer &) = delete;
  explicit operator bool() const { return ptr != nullptr; }
};

// Splits [0, n) into `parts` nearly equal chunks.
inline size_t chunk_begin(size_t n, int parts, int i) { return n * size_t(i) / size_t(parts); }

constexpr int kMaxBuckets = 32;

// The thread threshold is engine-neutral (engine.h).
constexpr size_t kParallelMin = size_t(kParallelMinElements);

inline bool on(const CallCtx &ctx, unsigned algo) { return (ctx.algos & algo) != 0; }
inline bool want_parallel(const CallCtx &ctx, size_t n) {
  return on(ctx, KWKER_ALGO_PARALLEL) && ctx.threads > 1 && n >= kParallelMin;
}
// Threads for `rows` rows of len keys split in contiguous chunks (engine.h's rows_parallel_min).
inline int row_parts(const CallCtx &ctx, size_t rows, size_t len) {
  if (!on(ctx, KWKER_ALGO_PARALLEL) || ctx.threads <= 1 ||
      int64_t(rows * len) < rows_parallel_min(int64_t(len)))
    return 1;
  return ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets;
}
// Threads for one linear pass over n elements (its own, higher break-even: engine.h).
inline int pass_parts(const CallCtx &ctx, size_t n) {
  if (!want_parallel(ctx, n) || n < size_t(kParallelPassMinElements)) return 1;
  return ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets;
}

// Splits m keys into buf: keys <= s0 from the front (returns their count in nl), the others
// from the back down to *high. 32/64-bit keys use the engine's vector partition step, 16-bit
// keys the compressed 16-bit lanes where the engine has them (core/sort16_compress.h; they
// are split only where it does, driver-inl.h's sort_values).
template <class K>
void split_block(const K *keys, size_t m, K s0, K *buf, size_t cap, size_t &nl, K *&high) {
#if defined(KWKER_SORT16_COMPRESS)
  if constexpr (sizeof(K) == 2) {
    split16_compress(keys, m, s0, buf, cap, nl, high);
    return;
  }
#endif
  K *wl = buf, *wr = buf + cap;
  size_t i = 0;
#if defined(__AVX512VBMI2__)
  constexpr bool kVector = sizeof(K) >= 2;  // engines/avx512/sort16.cc
#else
  constexpr bool kVector = sizeof(K) >= 4;
#endif
  if constexpr (kVector) {
    using S = vq::Ops<K>;
    const typename S::V vp = S::set1(s0);
    for (; i + S::W <= m; i += S::W) S::partition_store(S::load(keys + i), vp, wl, wr);
  }
  for (; i < m; ++i) {  // both ends written, one kept: no branch on random keys
    const K k = keys[i];
    const bool gt = k > s0;
    *wl = k;
    wr[-1] = k;
    wl += !gt;
    wr -= gt;
  }
  nl = size_t(wl - buf);
  high = wr;
}

// Two buckets: no counting pass. Each thread encodes a block of its chunk, splits it in
// cache, then reserves room at the low end (growing up) or the high end (growing down) of
// out with one atomic add each, so every key is read once and written once.
// The split passes' key check: NoCheck, or one that returns true for a block of keys that
// must stop the sort (sample_partition_sort's stop).
struct NoCheck {
  static constexpr bool kOn = false;
  template <class K> bool operator()(const K *, size_t, size_t) const { return false; }
};

// Contention. From kSharedSortMin keys a sort on several threads shares its work out as threads
// come free: the split pass in chunks of kSharedChunk keys claimed from one counter, and the
// buckets cut further while a thread waits for work (sort_buckets_shared). With a fixed half per
// thread, a thread whose CPU another process shares (or a worker woken late) held the call:
// float32 1e7 on two threads beside a busy process took longer than on one thread. Below that
// size the halves stay fixed: each hand-off is a chance to wait for the other thread, and at
// 1e5-1e6 smaller pieces measured slower (design.md).
constexpr size_t kSharedSortMin = size_t(1) << 21;
constexpr size_t kSharedChunk = size_t(1) << 16;
inline bool shares_work(const CallCtx &ctx, size_t n) {
  return ctx.threads > 1 && n >= kSharedSortMin;
}

template <class K, class Get, class Check = NoCheck>
bool two_way_split(CallCtx &ctx, size_t n, Get get, K *out, K s0, size_t *start,
                   Check check = Check()) {
  const int parts = ctx.threads > 1 ? 2 : 1;
  const bool shared = shares_work(ctx, n);
  constexpr size_t kBlock = 1024;
  constexpr size_t kCap = kBlock + 2 * 64;  // room for the vector step's stray lanes
  size_t left = 0, right = n, next_chunk = 0;
  bool stopped[2] = {false, false};
  auto split_range = [&](size_t lo, size_t hi) {
    const Get g = get;  // a local copy: the key stores below cannot alias it, so they vectorise
    K keys[kBlock], buf[kCap];
    for (size_t b = lo; b < hi; b += kBlock) {
      size_t m = b + kBlock < hi ? kBlock : hi - b;
      for (size_t i = 0; i < m; ++i) keys[i] = g(b + i);
      if (check(keys, m, b)) return false;
      size_t nl;
      K *high;
      split_block(keys, m, s0, buf, kCap, nl, high);
      size_t nh = m - nl;
      size_t l0 = __atomic_fetch_add(&left, nl, __ATOMIC_RELAXED);
      size_t r0 = __atomic_sub_fetch(&right, nh, __ATOMIC_RELAXED);
      memcpy(out + l0, buf, nl * sizeof(K));
      memcpy(out + r0, high, nh * sizeof(K));
    }
    return true;
  };
  auto task = [&](int t) {
    if (!shared) {
      stopped[t] = !split_range(chunk_begin(n, parts, t), chunk_begin(n, parts, t + 1));
      return;
    }
    for (;;) {
      const size_t lo = __atomic_fetch_add(&next_chunk, kSharedChunk, __ATOMIC_RELAXED);
      if (lo >= n) return;
      if (!split_range(lo, lo + kSharedChunk < n ? lo + kSharedChunk : n)) {
        stopped[t] = true;
        __atomic_store_n(&next_chunk, n, __ATOMIC_RELAXED);  // the other thread stops too
        return;
      }
    }
  };
  run_tasks(ctx, parts, task);
  start[0] = 0;
  start[1] = left;  // == right: the two ends met
  start[2] = n;
  return !stopped[0] && !stopped[1];
}

// T buckets: per-thread counts first, so every thread knows where its keys of each bucket go.
template <class K, class Get, class Check = NoCheck>
bool counted_split(CallCtx &ctx, size_t n, Get get, K *out, const K *split, int T,
                   size_t *start, Check check = Check()) {
  const int nsplit = T - 1;
  auto bucket_of = [&](K k) -> int {
    int b = 0;
    for (int j = 0; j < nsplit; ++j) b += (k > split[j]);
    return b;
  };
  size_t counts[kMaxBuckets][kMaxBuckets] = {};  // [thread][bucket]
  bool stopped[kMaxBuckets] = {};
  auto count_task = [&](int t) {
    size_t lo = chunk_begin(n, T, t), hi = chunk_begin(n, T, t + 1);
    size_t *c = counts[t];
    if constexpr (!Check::kOn) {
      for (size_t i = lo; i < hi; ++i) ++c[bucket_of(get(i))];
    } else {  // block by block, each checked before it is counted
      constexpr size_t kBlock = 1024;
      K keys[kBlock];
      for (size_t b = lo; b < hi; b += kBlock) {
        const size_t m = b + kBlock < hi ? kBlock : hi - b;
        for (size_t i = 0; i < m; ++i) keys[i] = get(b + i);
        if (check(keys, m, b)) {
          stopped[t] = true;
          return;
        }
        for (size_t i = 0; i < m; ++i) ++c[bucket_of(keys[i])];
      }
    }
  };
  parallel_tasks(ctx, T, count_task);
  for (int t = 0; t < T; ++t)
    if (stopped[t]) return false;  // nothing written to out yet

  size_t offs[kMaxBuckets][kMaxBuckets];
  size_t pos = 0;
  for (int b = 0; b < T; ++b) {
    start[b] = pos;
    for (int t = 0; t < T; ++t) {
      offs[t][b] = pos;
      pos += counts[t][b];
    }
  }
  start[T] = pos;

  auto scatter_task = [&](int t) {
    size_t lo = chunk_begin(n, T, t), hi = chunk_begin(n, T, t + 1);
    size_t o[kMaxBuckets];
    for (int b = 0; b < T; ++b) o[b] = offs[t][b];
    for (size_t i = lo; i < hi; ++i) {
      K k = get(i);
      out[o[bucket_of(k)]++] = k;
    }
  };
  parallel_tasks(ctx, T, scatter_task);
  return true;
}


// The buckets out[start[b], start[b + 1]) of a split, sorted by the call's threads taking work
// as they come free (see kSharedSortMin). A thread takes the largest range waiting; while it is
// over the grain (n / (8 threads)) it partitions it in place around a sampled pivot (rounded up
// by align, as the splitters are) and leaves the upper part for whoever comes free first, then
// hands the rest to bucket_fn, which sorts and finishes ranges by position. Those partitions are
// the passes the bucket's quicksort would have begun with, so an idle machine pays little for
// them; a thread that another process keeps off its CPU now holds the call for one grain at
// most, not for its half. Threads with nothing to take wait only while another may still leave
// work, and yield their CPU while they do.
template <class K, class BucketFn>
void sort_buckets_shared(CallCtx &ctx, size_t n, K *out, const size_t *start, int T,
                         BucketFn &bucket_fn, K align) {
  using S = vq::Ops<K>;
  constexpr int kMaxRanges = 8 * kMaxBuckets + 64;
  struct Range {
    size_t begin, len;
  };
  Range ranges[kMaxRanges];
  int count = 0;
  for (int b = 0; b < T; ++b)
    if (start[b + 1] > start[b]) ranges[count++] = {start[b], start[b + 1] - start[b]};
  const size_t grain_min = size_t(1) << 16;
  size_t grain = n / (size_t(8) * size_t(ctx.threads));
  if (grain < grain_min) grain = grain_min;
  std::mutex mu;
  int splitting = 0;  // threads holding a range they may still cut (and leave work from)
  auto take = [&](Range &r) {  // the largest waiting range; false when none will come
    for (;;) {
      {
        std::lock_guard<std::mutex> lk(mu);
        if (count > 0) {
          int best = 0;
          for (int i = 1; i < count; ++i)
            if (ranges[i].len > ranges[best].len) best = i;
          r = ranges[best];
          ranges[best] = ranges[--count];
          ++splitting;
          return true;
        }
        if (splitting == 0) return false;
      }
      sched_yield();
    }
  };
  auto task = [&](int) {
    Range r;
    while (take(r)) {
      K *a = out + r.begin;
      size_t len = r.len;
      while (len > grain) {
        const K pivot = K(vq::choose_pivot<S>(a, len) | align);
        const size_t m = vq::partition<S>(a, len, pivot);
        if (m == 0 || m == len) break;  // one value (or one prefix) fills the range
        std::lock_guard<std::mutex> lk(mu);
        if (count == kMaxRanges) break;
        ranges[count++] = {r.begin + m, len - m};
        len = m;
      }
      {
        std::lock_guard<std::mutex> lk(mu);
        --splitting;
      }
      bucket_fn(a, r.begin, len);
    }
  };
  run_tasks(ctx, ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets, task);
}

// Sorts the n keys get(i) into out[0..n) with T = ctx.threads buckets:
//   sample -> T-1 splitters -> per-thread bucket counts -> scatter -> per bucket
//   bucket_fn(bucket_ptr, start, len), which sorts the bucket and finishes it (decode,
//   unpack, copy back...). sort_fn(K*, size_t) sorts the sample. Splitters are or-ed with
//   align, so keys that differ only in those bits always share a bucket. check(keys, m, i)
//   sees every block of keys the split reads (get(i) .. get(i + m - 1)); when it returns true
//   the call returns false before any bucket_fn has run (out may hold keys, the caller's
//   output nothing).
template <class K, class Get, class SortFn, class BucketFn, class Check = NoCheck>
bool sample_partition_sort(CallCtx &ctx, size_t n, Get get, K *out, SortFn sort_fn,
                           BucketFn bucket_fn, K align = K(0), Check check = Check()) {
  // At least two buckets: with one thread the split replaces the copy pass and the quicksort's
  // first partition pass by a single pass.
  int T = ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets;
  if (T < 2) T = 2;
  constexpr size_t kMaxSamples = 4096;
  size_t S = size_t(128) * size_t(T);
  if (S > kMaxSamples) S = kMaxSamples;
  K samples[kMaxSamples];
  // Deterministic strided sample: the result never depends on it, only the balance does.
  for (size_t s = 0; s < S; ++s) samples[s] = get((n / S) * s + (n / S) / 2);
  sort_fn(samples, S);
  K split[kMaxBuckets];
  for (int j = 1; j < T; ++j) split[j - 1] = K(samples[(S * size_t(j)) / size_t(T)] | align);
  const int nsplit = T - 1;

  size_t start[kMaxBuckets + 1];
  const bool split_ok = nsplit == 1 ? two_way_split(ctx, n, get, out, split[0], start, check)
                                    : counted_split(ctx, n, get, out, split, T, start, check);
  if (!split_ok) return false;

  if constexpr (sizeof(K) >= 4) {
    if (shares_work(ctx, n)) {
      sort_buckets_shared(ctx, n, out, start, T, bucket_fn, align);
      return true;
    }
  }
  auto sort_task = [&](int b) { bucket_fn(out + start[b], start[b], start[b + 1] - start[b]); };
  run_tasks(ctx, T, sort_task);
  return true;
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
