// Radix paths: counting sort / stable counting argsort for 8- and 16-bit keys, and a stable
// LSD radix argsort over (64-bit key, 32-bit index) pairs that skips digits all keys share.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/engine_ns-inl.h"
#include "core/keys-inl.h"
#include "core/parallel-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

template <class K> inline size_t key_bucket(K k) {
  using U = typename std::make_unsigned<K>::type;
  return size_t(U(U(k) ^ U(U(1) << (8 * sizeof(K) - 1))));
}

// Per-thread counts (parts tables of nb buckets, thread t's at cnt + t * nb) replaced by each
// (thread, bucket)'s first output slot: the keys of smaller buckets, then those of the same
// bucket in earlier threads' chunks, so a stable scatter of each chunk lands in order.
template <class C> inline void bucket_thread_offsets(C *cnt, size_t nb, int parts) {
  C pos = 0;
  for (size_t b = 0; b < nb; ++b)
    for (int t = 0; t < parts; ++t) {
      const size_t m = cnt[size_t(t) * nb + b];
      cnt[size_t(t) * nb + b] = pos;
      pos += m;
    }
}

// Integer codecs only move the sign bit and, descending, flip every bit, so a key's bucket is
// bucket(0) + x ascending and bucket(0) - x descending, x the value sign- or zero-extended.
template <class Codec> struct RawBuckets : std::false_type {};
template <class TT, bool kU> struct RawBuckets<IntCodec<TT, kU>> : std::true_type {};

// f(i, tab[bucket of src[i]]) for each i of [lo, hi), in order. Integers reach their counter
// through their value (RawBuckets): one extending load a key, where the key transform took a
// shift or load, two xors and a zero extension.
template <class Codec, class C, class F>
inline void for_each_counter(const Codec c, const typename Codec::T *src, size_t lo, size_t hi,
                             C *tab, F &&f) {
  using T = typename Codec::T;
  if constexpr (RawBuckets<Codec>::value) {
    const size_t b0 = key_bucket(c.enc(T(0)));
    C *zero = tab + b0;
    // The biased pointer in one register: GCC otherwise kept tab and b0 apart and spent an add
    // a key on their sum.
    __asm__("" : "+r"(zero));
    auto run = [&](auto mirror) {
      auto at = [&](size_t i) -> C & {
        return zero[decltype(mirror)::value ? -ptrdiff_t(src[i]) : ptrdiff_t(src[i])];
      };
      size_t i = lo;
      for (; i + 4 <= hi; i += 4)
        for (size_t l = 0; l < 4; ++l) f(i + l, at(i + l));
      for (; i < hi; ++i) f(i, at(i));
    };
    if (key_bucket(c.enc(T(1))) > b0) run(std::false_type());
    else run(std::true_type());
  } else {
    for (size_t i = lo; i < hi; ++i) f(i, tab[key_bucket(c.enc(src[i]))]);
  }
}

// ct[bucket] += 1 for each key of src[lo, hi). Integers index the counters by their value
// (for_each_counter): the key transform's moves were a third of the histogram (3e5 keys of 20
// values on one thread, Intel Xeon: int16 / uint16 sorts 180-195 -> 140-145 us, int8 / uint8
// 190-220 -> 115-125 us; uniform 16-bit keys, whose table misses L1, level). Other 8- and
// 16-bit keys are read eight or four to a 64-bit load, which leaves the load ports to the
// counters' increments (1.2x faster 16-bit histograms at 3e5 keys, Zen 5).
template <class Codec, class C>
void count_keys(const Codec c, const typename Codec::T *src, size_t lo, size_t hi, C *ct) {
  using T = typename Codec::T;
  if constexpr (sizeof(T) <= 2 && RawBuckets<Codec>::value) {
    for_each_counter(c, src, lo, hi, ct, [](size_t, C &m) { ++m; });
    return;
  }
  size_t i = lo;
  if constexpr (sizeof(T) <= 2) {
    constexpr size_t kPer = 8 / sizeof(T);
    for (; i + kPer <= hi; i += kPer) {
      uint64_t w;
      memcpy(&w, src + i, sizeof w);
      for (size_t l = 0; l < kPer; ++l) ++ct[key_bucket(c.enc(T(w >> (8 * sizeof(T) * l))))];
    }
  }
  for (; i < hi; ++i) ++ct[key_bucket(c.enc(src[i]))];
}

// Counts of every key value of src (2^bits buckets, in scratch; empty when refused).
template <class Codec> struct KeyCounts {
  static constexpr size_t kBuckets = size_t(1) << (8 * sizeof(typename Codec::K));
  Scratch<size_t> cnt{kBuckets};
  KeyCounts(const Codec c, const typename Codec::T *src, size_t n) {
    if (!cnt) return;
    memset(cnt.ptr, 0, kBuckets * sizeof(size_t));
    count_keys(c, src, 0, n, cnt.ptr);
  }
  explicit operator bool() const { return bool(cnt); }
};

// Counting sort of values; returns false (caller falls back) when scratch is refused. 32-bit
// counters (half the table, which is read back once per key) below 2^32 keys. Each value's run
// is written as whole 64-byte vectors, the next run's overwriting the excess: a loop of m stores
// mispredicted about once per bucket on random keys (16-bit keys at 6e5, Zen 5: 1.47 ns/el).
// counting_fill writes the runs of buckets [b, b_end) to dst[pos, pos_end), never past pos_end
// (another thread may be filling from there).
template <class Codec, class C>
void counting_fill(const Codec c, const C *cnt, typename Codec::T *dst, size_t b, size_t b_end,
                   size_t pos, size_t pos_end) {
  using T = typename Codec::T;
  using K = typename Codec::K;
  constexpr size_t nb = size_t(1) << (8 * sizeof(K));
  constexpr size_t kRun = 64 / sizeof(T);
  // Chunks of 256 buckets, an empty one skipped after one vectorised OR of its counters: with
  // few distinct keys nearly all 65,536 16-bit buckets are empty, and stepping through them
  // one by one was a fifth of the sort (int16, 20 distinct values, 3e5 keys, Zen 5). The test
  // stays outside the run loop: a test every 16 buckets inside it made uniform uint16 / int16
  // sorts of 1e5 keys 15-25% slower on avx2 even when it seldom ran.
  constexpr size_t kChunk = 256;
  bool exact = false;  // near pos_end: the exact loop below finishes from b
  while (b < b_end && !exact) {
    size_t e = (b / kChunk + 1) * kChunk;
    if (e > b_end) e = b_end;
    if (b % kChunk == 0 && e - b == kChunk) {
      C any = 0;
      for (size_t l = 0; l < kChunk; ++l) any |= cnt[b + l];
      if (any == 0) {
        b = e;
        continue;
      }
    }
    for (; b < e; ++b) {
      const size_t m = cnt[b];
      if (pos + m + kRun > pos_end) {  // a store could pass the end: exact from here
        exact = true;
        break;
      }
      const T v = c.dec(K(b ^ (nb >> 1)));
      size_t j = 0;
      do {
        for (size_t l = 0; l < kRun; ++l) dst[pos + j + l] = v;
        j += kRun;
      } while (j < m);
      pos += m;
    }
  }
  for (; b < b_end; ++b) {
    const size_t m = cnt[b];
    const T v = c.dec(K(b ^ (nb >> 1)));
    for (size_t j = 0; j < m; ++j) dst[pos + j] = v;
    pos += m;
  }
}

// From the 4-byte sorts' two-thread size (2e5, as want_parallel_keys) each thread counts a chunk
// into its own table and, once the tables are summed, writes the runs of a range of buckets
// holding about its share of the keys (int16, Zen 5: see design.md). From kSharedSortMin keys
// both passes are handed out in pieces as threads come free (the contention rule of
// parallel-inl.h): chunks of kSharedChunk keys to count, four bucket ranges per thread to fill.
template <class Codec>
bool counting_sort(CallCtx &ctx, const typename Codec::T *src, typename Codec::T *dst, size_t n,
                   const Codec c) {
  constexpr size_t nb = KeyCounts<Codec>::kBuckets;
  if (n > size_t(UINT32_MAX)) {
    KeyCounts<Codec> counts(c, src, n);
    if (!counts) return false;
    counting_fill(c, counts.cnt.ptr, dst, 0, nb, 0, n);
    return true;
  }
  const int parts = want_parallel(ctx, n) && n >= 2 * kParallelMin
                        ? (ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets)
                        : 1;
  Scratch<uint32_t> cnt(nb * size_t(parts));
  if (!cnt) return false;
  uint32_t *const tot = cnt.ptr;
  const bool shared = parts > 1 && shares_work(ctx, n);
  size_t next = 0;  // the next chunk to count, then the next piece to fill
  auto count = [&](int t) {
    uint32_t *ct = tot + size_t(t) * nb;
    memset(ct, 0, nb * sizeof(uint32_t));
    if (!shared) {
      count_keys(c, src, chunk_begin(n, parts, t), chunk_begin(n, parts, t + 1), ct);
      return;
    }
    for (;;) {
      const size_t lo = __atomic_fetch_add(&next, kSharedChunk, __ATOMIC_RELAXED);
      if (lo >= n) return;
      count_keys(c, src, lo, lo + kSharedChunk < n ? lo + kSharedChunk : n, ct);
    }
  };
  if (parts == 1) {
    count(0);
    counting_fill(c, tot, dst, 0, nb, 0, n);
    return true;
  }
  parallel_tasks(ctx, parts, count);
  for (int t = 1; t < parts; ++t) {
    const uint32_t *ct = tot + size_t(t) * nb;
    for (size_t b = 0; b < nb; ++b) tot[b] += ct[b];
  }
  // Where each piece's buckets begin: whole blocks of 64 buckets (a vectorised sum) up to its
  // share of the keys, then single buckets.
  const int pieces = shared ? (4 * parts < kMaxBuckets ? 4 * parts : kMaxBuckets) : parts;
  size_t b_at[kMaxBuckets + 1], pos_at[kMaxBuckets + 1];
  size_t b = 0, pos = 0;
  b_at[0] = pos_at[0] = 0;
  for (int p = 1; p < pieces; ++p) {
    const size_t goal = chunk_begin(n, pieces, p);
    while (b + 64 <= nb) {
      uint32_t s = 0;
      for (size_t j = 0; j < 64; ++j) s += tot[b + j];
      if (pos + s > goal) break;
      pos += s;
      b += 64;
    }
    while (b < nb && pos + tot[b] <= goal) pos += tot[b++];
    b_at[p] = b;
    pos_at[p] = pos;
  }
  b_at[pieces] = nb;
  pos_at[pieces] = n;
  next = 0;
  auto fill = [&](int t) {
    if (!shared) {
      counting_fill(c, tot, dst, b_at[t], b_at[t + 1], pos_at[t], pos_at[t + 1]);
      return;
    }
    for (;;) {
      const size_t p = __atomic_fetch_add(&next, size_t(1), __ATOMIC_RELAXED);
      if (p >= size_t(pieces)) return;
      counting_fill(c, tot, dst, b_at[p], b_at[p + 1], pos_at[p], pos_at[p + 1]);
    }
  };
  parallel_tasks(ctx, parts, fill);
  return true;
}

// Stable two-key scatter of bools: idx[rank] = index and, with vals, vals[rank] = the key's
// bits. Both write positions stay in registers: through a count table every index waited on the
// store to its counter, which consecutive equal keys hit (bool argsort of 1e4 took 31 us,
// NumPy's radix 22; now about 8).
inline void bool_scatter(const BoolCodec c, const uint8_t *src, size_t n, uint8_t *vals,
                         int64_t *idx) {
  size_t p0 = 0;
  for (size_t i = 0; i < n; ++i) p0 += c.enc(src[i]) == 0;
  size_t p1 = p0;
  p0 = 0;
  if (!vals) {
    for (size_t i = 0; i < n; ++i) {
      const bool k = c.enc(src[i]) != 0;
      idx[k ? p1 : p0] = int64_t(i);  // a conditional move
      p1 += k;
      p0 += !k;
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const bool k = c.enc(src[i]) != 0;
    // Arithmetic, not ?: (with two stores GCC branched on it: 4 ns per random key).
    const size_t d = p0 + size_t(k) * (p1 - p0);
    vals[d] = src[i];
    idx[d] = int64_t(i);
    p1 += k;
    p0 += !k;
  }
}

// Stable counting argsort of 8-bit keys on one thread: out[rank] = index. (16-bit keys take
// radix16_argsort below: 65,536 buckets put each key on a cache line of its own.)
template <class Codec>
bool counting_argsort(const typename Codec::T *src, size_t n, int64_t *out, const Codec c) {
  static_assert(sizeof(typename Codec::K) == 1, "8-bit keys (16-bit: radix16_argsort)");
  if constexpr (std::is_same<Codec, BoolCodec>::value) {
    bool_scatter(c, src, n, nullptr, out);
    return true;
  }
  KeyCounts<Codec> counts(c, src, n);
  if (!counts) return false;
  size_t *start = counts.cnt.ptr;
  bucket_thread_offsets(start, KeyCounts<Codec>::kBuckets, 1);
  for_each_counter(c, src, 0, n, start, [out](size_t i, size_t &s) { out[s++] = int64_t(i); });
  return true;
}

// Stable argsort of 16-bit keys (with vals, the pair sort) in two scatters of 256 buckets: the
// keys by their high byte into words (low byte above the index), then each high-byte bucket,
// which holds its keys in index order, by its low byte into idx. The one scatter over 65,536
// buckets it replaced wrote each key to a cache line of its own: on an Intel Xeon (2 MiB L2)
// it ran 3.8-6.5 ns a key from 1e5 keys on and lost to the packed 64-bit quicksort at every
// size. The second pass works a bucket at a time inside the cache. W is uint32_t below 2^24
// keys (index in 24 bits), uint64_t above. Pass one splits the keys among the threads, pass two
// the buckets (by their counts). False (nothing written) when scratch is refused.
template <class W, class Codec>
bool radix16_argsort_words(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
                           typename Codec::T *vals, int64_t *idx) {
  using K = typename Codec::K;
  static_assert(sizeof(K) == 2, "16-bit keys");
  constexpr size_t kB = 256;
  constexpr int kLowShift = sizeof(W) == 4 ? 24 : 32;
  const int parts = want_parallel(ctx, n) ? (ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets)
                                          : 1;
  Scratch<W> words(n);
  Scratch<size_t> hist(size_t(parts) * kB + kB + 1);
  if (!words || !hist) return false;
  size_t *h = hist.ptr, *first = hist.ptr + size_t(parts) * kB;  // first[b]: bucket b's start
  W *w = words.ptr;
  auto count = [&](int t) {
    size_t *ht = h + size_t(t) * kB;
    memset(ht, 0, kB * sizeof(size_t));
    for (size_t i = chunk_begin(n, parts, t), e = chunk_begin(n, parts, t + 1); i < e; ++i)
      ++ht[key_bucket(c.enc(src[i])) >> 8];
  };
  parallel_tasks(ctx, parts, count);
  bucket_thread_offsets(h, kB, parts);
  for (size_t b = 0; b < kB; ++b) first[b] = h[b];  // thread 0's slot opens each bucket
  first[kB] = n;
  auto scatter = [&](int t) {
    size_t *ht = h + size_t(t) * kB;
    for (size_t i = chunk_begin(n, parts, t), e = chunk_begin(n, parts, t + 1); i < e; ++i) {
      const size_t u = key_bucket(c.enc(src[i]));
      w[ht[u >> 8]++] = (W(u & 0xFF) << kLowShift) | W(i);
    }
  };
  parallel_tasks(ctx, parts, scatter);
  constexpr W kIndexMask = (W(1) << kLowShift) - 1;
  auto settle = [&](size_t b) {
    const size_t lo = first[b], hi = first[b + 1];
    if (lo == hi) return;
    uint32_t pos[kB] = {};
    for (size_t j = lo; j < hi; ++j) ++pos[size_t(w[j] >> kLowShift)];
    for (size_t l = 0, p = lo; l < kB; ++l) {
      const size_t m = pos[l];
      pos[l] = uint32_t(p - lo);
      p += m;
    }
    int64_t *io = idx + lo;
    if (!vals) {
      for (size_t j = lo; j < hi; ++j)
        io[pos[size_t(w[j] >> kLowShift)]++] = int64_t(w[j] & kIndexMask);
      return;
    }
    typename Codec::T *vo = vals + lo;
    for (size_t j = lo; j < hi; ++j) {
      const size_t low = size_t(w[j] >> kLowShift), i = size_t(w[j] & kIndexMask);
      const uint32_t d = pos[low]++;
      io[d] = int64_t(i);
      // Integers come back from their key; a float's -0.0 and NaN payload only from the input.
      if constexpr (Codec::kNanPayload)
        vo[d] = src[i];
      else
        vo[d] = c.dec(K(uint16_t(((b << 8) | low) ^ 0x8000u)));
    }
  };
  // Buckets split among the threads at the key counts' quantiles.
  size_t cut[kMaxBuckets + 1];
  cut[0] = 0;
  for (int t = 1, b = 0; t <= parts; ++t) {
    const size_t goal = n * size_t(t) / size_t(parts);
    while (size_t(b) < kB && (t == parts || first[b + 1] <= goal)) ++b;
    cut[t] = size_t(b);
  }
  auto settle_range = [&](int t) {
    for (size_t b = cut[t]; b < cut[t + 1]; ++b) settle(b);
  };
  parallel_tasks(ctx, parts, settle_range);
  return true;
}

template <class Codec>
bool radix16_argsort(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
                     typename Codec::T *vals, int64_t *idx) {
  if (n < (size_t(1) << 24)) return radix16_argsort_words<uint32_t>(ctx, c, src, n, vals, idx);
  if (n < (size_t(1) << 32)) return radix16_argsort_words<uint64_t>(ctx, c, src, n, vals, idx);
  return false;
}

// Stable counting argsort of 8-bit keys over the threads (idx; with vals, the pair sort): each
// thread counts its own chunk, the write positions run bucket by bucket and, inside a bucket,
// chunk by chunk (so equal keys stay in index order), and each thread scatters its chunk. False
// (nothing written) below the parallel size or without scratch: the caller's one-thread paths.
// torch.sort / torch.argsort of 1e5-1e6 uint8 keys ran 0.74-0.99x torch's radix sort on one
// thread.
template <class Codec>
bool counting_scatter_parallel(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                               size_t n, typename Codec::T *vals, int64_t *idx) {
  static_assert(sizeof(typename Codec::K) == 1, "8-bit keys");
  constexpr size_t kB = 256;
  // From the 4-byte sorts' two-thread size (2e5; want_parallel_keys), not the plain passes'
  // (2^21): each key costs a count and a scattered store, several times a copy's work, while at
  // 1e5 the second thread's wake-up and the per-thread tables measured no gain (uint8 87 against
  // 104-172 us).
  if (!want_parallel(ctx, n) || n < 2 * kParallelMin) return false;
  const int parts = ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets;
  // Bools keep one thread and their two write positions in registers (bool_scatter):
  // through the table their counters chain (1e5 bools 1.44x NumPy on two threads against 2.24x
  // on one), and a two-register split over the threads measured no steadier.
  if constexpr (std::is_same<Codec, BoolCodec>::value) return false;
  Scratch<size_t> hist(size_t(parts) * kB);
  if (!hist) return false;
  size_t *h = hist.ptr;
  auto count = [&](int t) {
    size_t *ht = h + size_t(t) * kB;
    memset(ht, 0, kB * sizeof(size_t));
    count_keys(c, src, chunk_begin(n, parts, t), chunk_begin(n, parts, t + 1), ht);
  };
  parallel_tasks(ctx, parts, count);
  bucket_thread_offsets(h, kB, parts);
  auto scatter = [&](int t) {
    size_t *ht = h + size_t(t) * kB;
    const size_t lo = chunk_begin(n, parts, t), hi = chunk_begin(n, parts, t + 1);
    if (vals) {
      for_each_counter(c, src, lo, hi, ht, [&](size_t i, size_t &s) {
        const size_t d = s++;
        vals[d] = src[i];
        idx[d] = int64_t(i);
      });
    } else {
      for_each_counter(c, src, lo, hi, ht, [idx](size_t i, size_t &s) { idx[s++] = int64_t(i); });
    }
  };
  parallel_tasks(ctx, parts, scatter);
  return true;
}

// The stable argsort of 64-bit keys whose offsets from base (the smallest key) span at most
// range_bits <= 11 bits: one count and one scatter, both straight from src (no key or index
// buffers). Each thread works its chunk as kLanes interleaved sub-chunks with counters of their
// own, so that a run of one key does not chain every increment and every slot through one
// counter; the sub-chunks' slots follow each other in index order inside each bucket, which
// keeps the order stable. (The general path below wrote 12 bytes of key and index per key and
// counted them on one thread first: int64 keys of 8-10 bits on two threads, Xeon with AMX,
// 3e6 keys 14.8-22.3 ms, where the packed quicksort took 10-17.)
template <class Codec>
bool radix_argsort64_one_digit(CallCtx &ctx, const typename Codec::T *src, size_t n, int64_t *out,
                               const Codec c, uint64_t base, int range_bits) {
  constexpr int kLanes = 4;
  const size_t nb = size_t(1) << (range_bits > 0 ? range_bits : 0);
  int T = ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets;
  if (T < 1 || n < (size_t(1) << 16)) T = 1;
  const int parts = T * kLanes;
  Scratch<uint32_t> hist(size_t(parts) * nb);  // n < 2^32 (the caller's bound)
  if (!hist) return false;
  auto key = [c, src, base](size_t i) {
    return size_t((uint64_t(c.enc(src[i])) ^ (uint64_t(1) << 63)) - base);
  };
  // f(l, i) for each key i of thread t's sub-chunks (parts t * kLanes .. + kLanes - 1 of
  // [0, n), in index order), key j of every sub-chunk in turn, then the longer ones' tails.
  auto visit = [&](int t, auto &&f) {
    size_t b[kLanes], e[kLanes], m = ~size_t(0);
    for (int l = 0; l < kLanes; ++l) {
      b[l] = chunk_begin(n, parts, t * kLanes + l);
      e[l] = chunk_begin(n, parts, t * kLanes + l + 1);
      if (e[l] - b[l] < m) m = e[l] - b[l];
    }
    for (size_t j = 0; j < m; ++j)
#pragma GCC unroll 4
      for (int l = 0; l < kLanes; ++l) f(l, b[l] + j);
    for (int l = 0; l < kLanes; ++l)
      for (size_t i = b[l] + m; i < e[l]; ++i) f(l, i);
  };
  auto count = [&](int t) {
    uint32_t *h = hist.ptr + size_t(t) * kLanes * nb;
    memset(h, 0, kLanes * nb * sizeof(uint32_t));
    visit(t, [&](int l, size_t i) { ++h[size_t(l) * nb + key(i)]; });
  };
  parallel_tasks(ctx, T, count);
  bucket_thread_offsets(hist.ptr, nb, parts);  // parts in index order, as the threads' chunks
  auto scatter = [&](int t) {
    uint32_t *h = hist.ptr + size_t(t) * kLanes * nb;
    visit(t, [&](int l, size_t i) { out[h[size_t(l) * nb + key(i)]++] = int64_t(i); });
  };
  parallel_tasks(ctx, T, scatter);
  return true;
}

// Stable LSD radix argsort for 64-bit keys (n < 2^32). 11-bit digits; digits on which every
// key agrees are skipped, so small-range data costs few passes. Parallel per pass: each
// thread counts and scatters its own chunk into disjoint output slots. A range of one digit
// takes radix_argsort64_one_digit.
// Returns false when scratch is refused.
template <class Codec>
bool radix_argsort64(CallCtx &ctx, const typename Codec::T *src, size_t n, int64_t *out,
                     const Codec c, uint64_t base = 0, int range_bits = 64) {
  constexpr int kDigitBits = 11, kMaxDigits = 6;
  if (range_bits <= kDigitBits && n < (size_t(1) << 32))
    return radix_argsort64_one_digit(ctx, src, n, out, c, base, range_bits);
  constexpr size_t kNb = size_t(1) << kDigitBits;
  // Keys offset by the smallest (base) span range_bits bits: only the digits below that are
  // counted and cleared (a key range of 11 bits or fewer is one digit: 16 KiB of counters, not
  // 96 KiB, which had cost more than the whole argsort of a few thousand keys).
  const int digits = range_bits <= 0 ? 1
                      : (range_bits + kDigitBits - 1) / kDigitBits < kMaxDigits
                          ? (range_bits + kDigitBits - 1) / kDigitBits
                          : kMaxDigits;
  Scratch<uint64_t> keys(2 * n);
  Scratch<uint32_t> idx(2 * n);
  Scratch<size_t> hist(size_t(digits) * kNb);
  if (!keys || !idx || !hist) return false;
  uint64_t *k0 = keys.ptr, *k1 = keys.ptr + n;
  uint32_t *i0 = idx.ptr, *i1 = idx.ptr + n;
  size_t *h = hist.ptr;
  memset(h, 0, size_t(digits) * kNb * sizeof(size_t));
  for (size_t i = 0; i < n; ++i) {
    // Offset by the smallest key, so that a narrow key range needs the fewest digits.
    uint64_t u = (uint64_t(c.enc(src[i])) ^ (uint64_t(1) << 63)) - base;
    k0[i] = u;
    i0[i] = uint32_t(i);
    for (int d = 0; d < digits; ++d) ++h[d * kNb + ((u >> (d * kDigitBits)) & (kNb - 1))];
  }
  int passes[kMaxDigits];
  int npasses = 0;
  for (int d = 0; d < digits; ++d) {
    bool trivial = false;
    for (size_t b = 0; b < kNb; ++b)
      if (h[d * kNb + b] == n) trivial = true;
    if (!trivial) passes[npasses++] = d;
  }
  int T = ctx.threads;
  if (T > kMaxBuckets) T = kMaxBuckets;
  if (n < (size_t(1) << 16)) T = 1;
  Scratch<size_t> local(size_t(T) * kNb);
  if (!local) return false;
  for (int p = 0; p < npasses; ++p) {
    const int shift = passes[p] * kDigitBits;
    const bool last = p + 1 == npasses;
    auto count = [&](int t) {
      size_t *lc = local.ptr + size_t(t) * kNb;
      memset(lc, 0, kNb * sizeof(size_t));
      size_t lo = chunk_begin(n, T, t), hi = chunk_begin(n, T, t + 1);
      for (size_t i = lo; i < hi; ++i) ++lc[(k0[i] >> shift) & (kNb - 1)];
    };
    parallel_tasks(ctx, T, count);
    bucket_thread_offsets(local.ptr, kNb, T);
    auto scatter = [&](int t) {
      size_t *lc = local.ptr + size_t(t) * kNb;
      size_t lo = chunk_begin(n, T, t), hi = chunk_begin(n, T, t + 1);
      if (last) {
        for (size_t i = lo; i < hi; ++i) out[lc[(k0[i] >> shift) & (kNb - 1)]++] = i0[i];
      } else {
        for (size_t i = lo; i < hi; ++i) {
          size_t d = lc[(k0[i] >> shift) & (kNb - 1)]++;
          k1[d] = k0[i];
          i1[d] = i0[i];
        }
      }
    };
    parallel_tasks(ctx, T, scatter);
    uint64_t *tk = k0; k0 = k1; k1 = tk;
    uint32_t *ti = i0; i0 = i1; i1 = ti;
  }
  if (npasses == 0)  // every key equal: input order is the stable order
    for (size_t i = 0; i < n; ++i) out[i] = int64_t(i);
  return true;
}

// Stable LSD radix sort of 32-bit keys with their indices: words (key << 32 | index) in one
// 64-bit buffer, 8-bit digits, each pass a count of its chunk per thread and a scatter of the
// chunk into the slots the counts give it, so equal digits keep their order and the index
// breaks every tie. Digits above the highest bit in which the smallest and largest key differ
// are shared by every key and skipped (the first count finds both). The last pass writes the
// values (decoded from the key: integer codecs only, whose keys give their values back) and
// the indices, or the indices alone when vals is null. On 4-lane 64-bit engines the packed
// words' quicksort of 3e4-2e6 keys is slower (design.md). Returns false when scratch is refused.
template <class Codec>
bool radix_pairs32(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
                   typename Codec::T *vals, int64_t *idx) {
  using K = typename Codec::K;
  static_assert(sizeof(K) == 4 && !Codec::kNanPayload, "32-bit keys that decode exactly");
  constexpr size_t kNb = 256;
  constexpr uint32_t kSign = 0x80000000u;
  int T = want_parallel(ctx, n) ? (ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets) : 1;
  Scratch<uint64_t> words(2 * n);
  Scratch<size_t> counts(size_t(T) * kNb);
  if (!words || !counts) return false;
  uint64_t *w0 = words.ptr, *w1 = words.ptr + n;
  size_t *cnt = counts.ptr;
  uint32_t mn[kMaxBuckets], mx[kMaxBuckets];
  auto key = [c](const typename Codec::T &x) { return uint32_t(c.enc(x)) ^ kSign; };
  auto first_count = [&](int t) {
    size_t *ct = cnt + size_t(t) * kNb;
    memset(ct, 0, kNb * sizeof(size_t));
    uint32_t a = ~0u, z = 0;
    const size_t b = chunk_begin(n, T, t), e = chunk_begin(n, T, t + 1);
    // The range in a loop of its own, which vectorises: inside the counting loop GCC kept the
    // key in a stack slot for vector min / max (a failed store forward per key: uint32 at
    // 30,000 keys took twice as long as int32).
    for (size_t i = b; i < e; ++i) {
      const uint32_t u = key(src[i]);
      a = u < a ? u : a;
      z = u > z ? u : z;
    }
    for (size_t i = b; i < e; ++i) ++ct[key(src[i]) & (kNb - 1)];
    mn[t] = a;
    mx[t] = z;
  };
  parallel_tasks(ctx, T, first_count);
  uint32_t lo = mn[0], hi = mx[0];
  for (int t = 1; t < T; ++t) {
    lo = mn[t] < lo ? mn[t] : lo;
    hi = mx[t] > hi ? mx[t] : hi;
  }
  const int passes = lo == hi ? 0 : (32 - __builtin_clz(lo ^ hi) + 7) / 8;  // 0: all equal
  // Indices alone are scattered straight into idx by the last pass. With values, the last pass
  // scatters words like the others and one sequential pass decodes them: scattered into vals and
  // idx at once, twice the write streams cost more than that pass (1e6 int32 on avx2: 0.85x
  // the packed words' quicksort, where the argsort alone ran 1.3x).
  const bool direct = vals == nullptr;
  auto scatter_pass = [&](int p, const auto &read, size_t *ct, size_t b, size_t e) {
    const bool last = p + 1 == passes;
    const int shift = 32 + 8 * p;
    uint64_t *to = p == 0 ? w0 : w1;
    if (last && direct) {
      for (size_t i = b; i < e; ++i) {
        const uint64_t w = read(i);
        idx[ct[(w >> shift) & (kNb - 1)]++] = int64_t(uint32_t(w));
      }
    } else {
      for (size_t i = b; i < e; ++i) {
        const uint64_t w = read(i);
        to[ct[(w >> shift) & (kNb - 1)]++] = w;
      }
    }
  };
  const uint64_t *sorted = w0;  // where the words end up, when they are not in idx
  if (passes == 0) {  // every key equal: the input order
    if (direct) {
      for (size_t i = 0; i < n; ++i) idx[i] = int64_t(i);
      return true;
    }
    for (size_t i = 0; i < n; ++i) w0[i] = (uint64_t(key(src[i])) << 32) | i;
  } else {
    bucket_thread_offsets(cnt, kNb, T);
    auto first_scatter = [&](int t) {
      auto read = [&](size_t i) { return (uint64_t(key(src[i])) << 32) | i; };
      scatter_pass(0, read, cnt + size_t(t) * kNb, chunk_begin(n, T, t),
                   chunk_begin(n, T, t + 1));
    };
    parallel_tasks(ctx, T, first_scatter);
    for (int p = 1; p < passes; ++p) {
      const int shift = 32 + 8 * p;
      auto count = [&](int t) {
        size_t *ct = cnt + size_t(t) * kNb;
        memset(ct, 0, kNb * sizeof(size_t));
        for (size_t i = chunk_begin(n, T, t), e = chunk_begin(n, T, t + 1); i < e; ++i)
          ++ct[(w0[i] >> shift) & (kNb - 1)];
      };
      parallel_tasks(ctx, T, count);
      bucket_thread_offsets(cnt, kNb, T);
      auto scatter = [&](int t) {
        auto read = [&](size_t i) { return w0[i]; };
        scatter_pass(p, read, cnt + size_t(t) * kNb, chunk_begin(n, T, t),
                     chunk_begin(n, T, t + 1));
      };
      parallel_tasks(ctx, T, scatter);
      uint64_t *tw = w0;
      w0 = w1;
      w1 = tw;
    }
    sorted = w0;
    if (direct) return true;
  }
  auto decode = [&](int t) {
    for (size_t i = chunk_begin(n, T, t), e = chunk_begin(n, T, t + 1); i < e; ++i) {
      const uint64_t w = sorted[i];
      vals[i] = c.dec(K(uint32_t(w >> 32) ^ kSign));
      idx[i] = int64_t(uint32_t(w));
    }
  };
  parallel_tasks(ctx, T, decode);
  return true;
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
