// Multithreaded building blocks over the runtime pool: task fan-out and a sample-partition
// sort (one splitting pass into per-thread buckets, then every bucket sorted independently),
// which needs no merge pass afterwards.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/engine.h"
#include "core/engine_ns-inl.h"
#include "runtime/scratch.h"
#include "runtime/threads.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

template <class F> void parallel_tasks(CallCtx &ctx, int ntasks, F &f) {
  if (ntasks > ctx.used_threads) ctx.used_threads = ntasks;
  rt::run_parallel(
      ntasks, [](void *c, int i) { (*static_cast<F *>(c))(i); }, &f);
}

// Scratch buffer owned by one call; released (to the cache) on every path out.
template <class T> struct Scratch {
  T *ptr = nullptr;
  size_t bytes = 0;
  explicit Scratch(size_t count) : bytes(count * sizeof(T)) {
    ptr = static_cast<T *>(rt::scratch_acquire(bytes));
  }
  ~Scratch() { rt::scratch_release(ptr, bytes); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  explicit operator bool() const { return ptr != nullptr; }
};

// Splits [0, n) into `parts` nearly equal chunks.
inline size_t chunk_begin(size_t n, int parts, int i) { return n * size_t(i) / size_t(parts); }

constexpr int kMaxBuckets = 32;

// Sorts the n keys get(i) into out[0..n) with T = ctx.threads buckets:
//   sample -> T-1 splitters -> per-thread bucket counts -> scatter -> sort each bucket
//   -> post(bucket_ptr, start, len) (decode, unpack, copy back...).
// sort_fn(K*, size_t) is the sequential sort used inside a bucket.
template <class K, class Get, class SortFn, class Post>
void sample_partition_sort(CallCtx &ctx, size_t n, Get get, K *out, SortFn sort_fn, Post post) {
  int T = ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets;
  constexpr size_t kMaxSamples = 4096;
  size_t S = size_t(128) * size_t(T);
  if (S > kMaxSamples) S = kMaxSamples;
  K samples[kMaxSamples];
  // Deterministic strided sample: the result never depends on it, only the balance does.
  for (size_t s = 0; s < S; ++s) samples[s] = get((n / S) * s + (n / S) / 2);
  sort_fn(samples, S);
  K split[kMaxBuckets];
  for (int j = 1; j < T; ++j) split[j - 1] = samples[(S * size_t(j)) / size_t(T)];
  const int nsplit = T - 1;
  auto bucket_of = [&](K k) -> int {
    int b = 0;
    for (int j = 0; j < nsplit; ++j) b += (k > split[j]);
    return b;
  };

  size_t counts[kMaxBuckets][kMaxBuckets] = {};  // [thread][bucket]
  auto count_task = [&](int t) {
    size_t lo = chunk_begin(n, T, t), hi = chunk_begin(n, T, t + 1);
    size_t *c = counts[t];
    if (nsplit == 1) {
      size_t high = 0;
      const K s0 = split[0];
      for (size_t i = lo; i < hi; ++i) high += (get(i) > s0);
      c[1] = high;
      c[0] = (hi - lo) - high;
    } else {
      for (size_t i = lo; i < hi; ++i) ++c[bucket_of(get(i))];
    }
  };
  parallel_tasks(ctx, T, count_task);

  size_t start[kMaxBuckets + 1];
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
    if (nsplit == 1) {
      K *low = out + o[0], *high = out + o[1];
      K *const low_end = low + counts[t][0], *const high_end = high + counts[t][1];
      const K s0 = split[0];
      size_t i = lo;
      // Branch-free two-way split (write to both, advance one) while both regions of this
      // thread have room, so the stray write never lands in another thread's slots.
      for (; i < hi && low < low_end && high < high_end; ++i) {
        K k = get(i);
        bool h = k > s0;
        *low = k;
        *high = k;
        low += !h;
        high += h;
      }
      for (; i < hi; ++i) {  // one region is full: the rest all belong to the other
        K k = get(i);
        if (k > s0) *high++ = k; else *low++ = k;
      }
    } else {
      for (size_t i = lo; i < hi; ++i) {
        K k = get(i);
        out[o[bucket_of(k)]++] = k;
      }
    }
  };
  parallel_tasks(ctx, T, scatter_task);

  auto sort_task = [&](int b) {
    size_t len = start[b + 1] - start[b];
    sort_fn(out + start[b], len);
    post(out + start[b], start[b], len);
  };
  parallel_tasks(ctx, T, sort_task);
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
