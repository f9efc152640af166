// Few distinct keys: when a sample of the input holds at most 16 distinct keys, the whole input
// probably does too. One counting pass against that dictionary, then one pass writing each key's
// run, sorts it in two passes where the quicksort needs one partition pass per distinct key
// (measured at 16 distinct int32 keys, 1e7: 1.1 ns/el through the quicksort, vqsort 0.6).
// A key missing from the dictionary aborts the attempt before anything is written.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "core/engine_ns-inl.h"
#include "core/parallel-inl.h"
#include "core/scalar-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

// From here a sort tries it: rejecting an input of many distinct values costs 17 reads and a
// few vector compares (all_distinct17), 1-3% of a sort of 600-2,000 random keys (Zen 5), and
// 4 distinct int32 / float32 / int64 keys sort 2-4x faster than by the quicksort from 1,000
// keys. (It was 100,000: float32 of 4 values at 30,000 ran 0.84x NumPy's sort.)
constexpr size_t kFewDistinctMin = 1024;
constexpr size_t kFewDistinctMax = 16;

#if defined(__AVX512F__)
constexpr size_t kFewVecBytes = 64;
#elif defined(__AVX2__)
constexpr size_t kFewVecBytes = 32;
#else
constexpr size_t kFewVecBytes = 16;
#endif

#if defined(__AVX512F__)
// AVX-512: each compare gives a mask and one masked add counts it, two instructions per
// entry where the generic vectors took three (compare, masked move of all ones, subtract).
template <size_t D, class T>
bool count_block_avx512(const T *v, size_t m, const T *dict, size_t *count) {
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    constexpr size_t L = 64 / sizeof(T);
    __m512i acc[D], d[D];
    const __m512i one = sizeof(T) == 4 ? _mm512_set1_epi32(1) : _mm512_set1_epi64(1);
    for (size_t j = 0; j < D; ++j) {
      acc[j] = _mm512_setzero_si512();
      uint64_t bits = 0;
      memcpy(&bits, dict + j, sizeof(T));
      d[j] = sizeof(T) == 4 ? _mm512_set1_epi32(int32_t(bits)) : _mm512_set1_epi64(int64_t(bits));
    }
    for (size_t i = 0; i < m; i += L) {
      const __m512i x = _mm512_loadu_si512(v + i);
      for (size_t j = 0; j < D; ++j) {
        if constexpr (sizeof(T) == 4)
          acc[j] = _mm512_mask_add_epi32(acc[j], _mm512_cmpeq_epi32_mask(x, d[j]), acc[j], one);
        else
          acc[j] = _mm512_mask_add_epi64(acc[j], _mm512_cmpeq_epi64_mask(x, d[j]), acc[j], one);
      }
    }
    for (size_t j = 0; j < D; ++j)
      count[j] = sizeof(T) == 4 ? size_t(uint32_t(_mm512_reduce_add_epi32(acc[j])))
                                : size_t(_mm512_reduce_add_epi64(acc[j]));
    return true;
  }
  return false;
}
#endif

#if defined(__AVX512F__)
// 9 to 16 distinct 32-bit keys on AVX-512: a perfect hash instead of 16 compares per vector.
// slot = (x * mult) >> 27 puts the dictionary's values in distinct slots of 32 (mult: the first
// odd multiplier of a fixed sequence that does; a few dozen tries for 16 random values). Per
// vector: the hash, two table lookups (slot -> dictionary index, index -> value) and a check
// that the value is x, then one nibble counter per index (index j adds 1 << 4j to a 32-bit
// lane: 0-7 in one accumulator, 8-15 in another, flushed to byte counters every 15 vectors).
// About 12 instructions per 16 keys where the compares took 32, on ports 0 and 5 alike.
struct FewHash32 {
  uint32_t mult = 0;      // 0: no perfect hash found (count with the compares)
  uint32_t index[32];     // slot -> dictionary index (unused slots: 0, caught by the check)
};

inline void few_hash_build(const uint32_t *dict, size_t d, FewHash32 &h) {
  h.mult = 0;
  uint32_t m = 0x9E3779B9u;
  for (int t = 0; t < 2048; ++t, m = (m * 0x2C9277B5u + 0xAC564B05u) | 1u) {
    uint32_t used = 0;
    bool ok = true;
    for (size_t j = 0; j < d && ok; ++j) {
      const uint32_t s = (dict[j] * m) >> 27;
      ok = !(used >> s & 1u);
      used |= 1u << s;
    }
    if (!ok) continue;
    for (uint32_t &e : h.index) e = 0;
    for (size_t j = 0; j < d; ++j) h.index[(dict[j] * m) >> 27] = uint32_t(j);
    h.mult = m;
    return;
  }
}

// Counts of the d <= 16 dictionary entries in v[0..m) (m a multiple of 16, at most 255 * 16
// keys so the byte counters cannot carry), or false when a key is not in the dictionary.
inline bool count_block_hash32(const uint32_t *v, size_t m, const uint32_t *dict, size_t d,
                               const FewHash32 &h, size_t *count) {
  uint32_t vals[16];
  for (size_t j = 0; j < 16; ++j) vals[j] = dict[j < d ? j : 0];
  const __m512i mult = _mm512_set1_epi32(int32_t(h.mult));
  const __m512i tlo = _mm512_loadu_si512(h.index), thi = _mm512_loadu_si512(h.index + 16);
  const __m512i dv = _mm512_loadu_si512(vals);
  const __m512i one = _mm512_set1_epi32(1), c32 = _mm512_set1_epi32(32);
  const __m512i low = _mm512_set1_epi32(0x0F0F0F0F);
  __m512i diff = _mm512_setzero_si512();
  __m512i bytes[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                      _mm512_setzero_si512()};  // indices 0-7 even / odd nibbles, 8-15 same
  for (size_t i = 0; i < m;) {
    __m512i na = _mm512_setzero_si512(), nb = _mm512_setzero_si512();
    const size_t stop = m - i > 15 * 16 ? i + 15 * 16 : m;
    for (; i < stop; i += 16) {
      const __m512i x = _mm512_loadu_si512(v + i);
      const __m512i slot = _mm512_srli_epi32(_mm512_mullo_epi32(x, mult), 27);
      const __m512i idx = _mm512_permutex2var_epi32(tlo, slot, thi);
      diff = _mm512_or_si512(diff, _mm512_xor_si512(_mm512_permutexvar_epi32(idx, dv), x));
      const __m512i sh = _mm512_slli_epi32(idx, 2);  // variable shifts past 31 give 0
      na = _mm512_add_epi32(na, _mm512_sllv_epi32(one, sh));
      nb = _mm512_add_epi32(nb, _mm512_sllv_epi32(one, _mm512_sub_epi32(sh, c32)));
    }
    bytes[0] = _mm512_add_epi32(bytes[0], _mm512_and_si512(na, low));
    bytes[1] = _mm512_add_epi32(bytes[1], _mm512_and_si512(_mm512_srli_epi32(na, 4), low));
    bytes[2] = _mm512_add_epi32(bytes[2], _mm512_and_si512(nb, low));
    bytes[3] = _mm512_add_epi32(bytes[3], _mm512_and_si512(_mm512_srli_epi32(nb, 4), low));
  }
  if (_mm512_test_epi32_mask(diff, diff)) return false;
  // Byte p of bytes[2a + o] counts index 8a + 2p + o.
  const __m512i ff = _mm512_set1_epi32(0xFF);
  for (int a = 0; a < 4; ++a)
    for (int p = 0; p < 4; ++p) {
      const size_t j = size_t(8 * (a / 2) + 2 * p + (a % 2));
      if (j < d)
        count[j] = size_t(uint32_t(_mm512_reduce_add_epi32(
            _mm512_and_si512(_mm512_srli_epi32(bytes[a], 8 * p), ff))));
    }
  return true;
}
#endif

// Counts of each of the first D dictionary entries in v[0..m), m a multiple of the vector
// width. Each vector of input is loaded once and compared against every entry (the plain loop
// per entry read the block D times: 16 distinct at 1e7: int32 0.56 -> 0.42, float64 1.21 -> 0.72 ns/el). D is
// a compile-time 4, 8 or 16 so the accumulators stay in registers; entries past the real
// dictionary repeat its first one and are ignored by the caller.
template <size_t D, class T>
void count_block_vec(const T *v, size_t m, const T *dict, size_t *count) {
  static_assert(sizeof(T) >= 2, "a lane counts up to 2048 / lanes keys: 8-bit lanes would wrap");
#if defined(__AVX512F__)
  if (count_block_avx512<D>(v, m, dict, count)) return;
#endif
  typedef T V __attribute__((vector_size(kFewVecBytes)));
  constexpr size_t L = kFewVecBytes / sizeof(T);
  V acc[D] = {};
  for (size_t i = 0; i < m; i += L) {
    V x;
    memcpy(&x, v + i, sizeof x);
    for (size_t j = 0; j < D; ++j) acc[j] -= (V)(x == dict[j]);  // a match is all ones (-1)
  }
  for (size_t j = 0; j < D; ++j) {
    size_t sum = 0;
    for (size_t l = 0; l < L; ++l) sum += size_t(acc[j][l]);
    count[j] = sum;
  }
}

// Whether any bit of a vector is set.
template <class V> bool any_bit(const V &v) {
  static_assert(sizeof(V) % 8 == 0, "whole 64-bit words");
  uint64_t words[sizeof(V) / 8], any = 0;
  memcpy(words, &v, sizeof v);
  for (uint64_t w : words) any |= w;
  return any != 0;
}

// Whether the 17 keys p[0..16] are pairwise distinct: p[0..15], a register of them at a time,
// compared with each of them broadcast (a match is -1: each lane then holds minus the copies
// of its key, -1 when it is alone) and with p[16]. Registers of the engine's width: GCC lowered
// a 16-lane vector of 64-bit keys, wider than any register, to scalar compares. T is an
// integer type (floats are seen as their bit patterns).
template <class T> bool all_distinct17(const T *p) {
  static_assert(kFewDistinctMax == 16, "16 keys in registers and one more");
  constexpr size_t L = kFewVecBytes / sizeof(T) < 16 ? kFewVecBytes / sizeof(T) : 16;
  typedef T V __attribute__((vector_size(L * sizeof(T))));
  V same = {};
  for (size_t h = 0; h < 16; h += L) {
    V v, copies = {};
    memcpy(&v, p + h, sizeof v);
    for (size_t i = 0; i < 16; ++i) copies += (V)(v == p[i]);
    same |= (V)(copies != T(-1)) | (V)(v == p[16]);
  }
  return !any_bit(same);
}

// Whether the kFewVecBytes / sizeof(T) keys at v all equal one of the d dictionary entries.
template <class T> bool all_in_dict(const T *v, const T *dict, size_t d) {
  typedef T V __attribute__((vector_size(kFewVecBytes)));
  V x, hit = {};
  memcpy(&x, v, sizeof x);
  for (size_t j = 0; j < d; ++j) hit |= (V)(x == dict[j]);
  return !any_bit(~hit);
}

// Counts of the dictionary's values in src[lo, hi), added to count[]. Values the dictionary
// lacks join it while it has room (kFewDistinctMax), and their block is counted again: earlier
// blocks held none of them, so their counts stand. (A 64-key sample misses one of 16 equally
// frequent values about a quarter of the time.) False when the range holds more distinct
// values, or a NaN where nan_ok is false. dict has room for kFewDistinctMax entries (the
// padding to 4, 8 or 16 stays within them).
template <class Codec>
bool few_count(const Codec c, const typename Codec::T *src, size_t lo, size_t hi,
               typename Codec::T *dict, size_t &d, size_t *count, bool nan_ok) {
  using T = typename Codec::T;
  constexpr size_t kBlock = 2048;
  constexpr size_t kLanes = kFewVecBytes / sizeof(T);
  size_t D = 0;
#if defined(__AVX512F__)
  constexpr bool kHash = sizeof(T) == 4;
  FewHash32 hash;
#endif
  auto pad = [&] {  // entries d..D repeat the first one (their counts are ignored)
    D = d <= 4 ? 4 : d <= 8 ? 8 : 16;
    for (size_t j = d; j < D; ++j) dict[j] = dict[0];
#if defined(__AVX512F__)
    if constexpr (kHash) {  // more than 8 entries: the hash beats 16 compares
      hash.mult = 0;
      if (D == 16) {
        uint32_t bits[kFewDistinctMax];
        std::memcpy(bits, dict, d * sizeof(T));
        few_hash_build(bits, d, hash);
      }
    }
#endif
  };
  pad();
  for (size_t b = lo; b < hi;) {
    const size_t m = b + kBlock < hi ? kBlock : hi - b;
    const T *v = src + b;
    size_t part[kFewDistinctMax] = {}, matched = 0;
    bool hashed = false;
#if defined(__AVX512F__)
    if constexpr (kHash) {
      if (m == kBlock && hash.mult) {
        // A key outside the dictionary leaves part at 0, so matched != m below.
        if (!count_block_hash32(reinterpret_cast<const uint32_t *>(v), m,
                                reinterpret_cast<const uint32_t *>(dict), d, hash, part))
          for (size_t j = 0; j < d; ++j) part[j] = 0;
        hashed = true;
      }
    }
#endif
    if (!hashed) {
      // Whole vectors through count_block_vec (one load per vector), the last few keys here:
      // the input's tail (or a short input) counted entry by entry ran at scalar speed, 16-bit
      // keys of 4 values at 3,000 took 1.73 us where 2,048 took 0.61.
      const size_t mv = m - m % kLanes;
      if (mv) {
        if (D == 4) count_block_vec<4>(v, mv, dict, part);
        else if (D == 8) count_block_vec<8>(v, mv, dict, part);
        else count_block_vec<16>(v, mv, dict, part);
      }
      for (size_t i = mv; i < m; ++i)
        for (size_t j = 0; j < d; ++j) part[j] += size_t(v[i] == dict[j]);
    }
    for (size_t j = 0; j < d; ++j) matched += part[j];
    if (matched != m) {
      const size_t had = d;
      for (size_t i = 0; i < m; ++i) {
        // A whole vector whose keys are all in the dictionary is skipped in one test (the
        // scalar test per key cost 16 compares each: 16-bit keys of 16 values, whose 64-key
        // sample had missed one, took 14.5 us at 30,000 where the others took 5.4).
        if (i % kLanes == 0 && i + kLanes <= m && all_in_dict(v + i, dict, d)) {
          i += kLanes - 1;
          continue;
        }
        const T x = v[i];
        bool seen = false;
        for (size_t j = 0; j < d; ++j) seen |= dict[j] == x;
        if (seen) continue;
        if constexpr (Codec::kNanPayload)
          if (!nan_ok && c.is_nan(x)) return false;
        if (d == kFewDistinctMax) return false;
        dict[d++] = x;
      }
      // Every key was in the dictionary, so a count was wrong: give up (the caller's general
      // sort is correct) rather than retry the same block for ever.
      if (d == had) return false;
      pad();
      continue;
    }
    for (size_t j = 0; j < d; ++j) count[j] += part[j];
    b += m;
  }
  return true;
}

// dst = sorted src (dst may equal src) when src has at most kFewDistinctMax distinct values;
// false (dst untouched) otherwise, found out early when a strided sample already has more.
// On several threads for large inputs (pass_parts): each task counts one chunk, with a
// dictionary of its own (merged after), and writes one chunk of the output.
// With nan_ok false a NaN gives up at once (in the sample or while counting), so a success
// proves the input has no NaN at all: callers that have not gathered the NaNs yet need that, as
// runs of several NaN payloads would not keep their input order.
template <class Codec>
bool sort_few_distinct(CallCtx &ctx, const Codec c, const typename Codec::T *src,
                       typename Codec::T *dst, size_t n, bool nan_ok = true) {
  using T = typename Codec::T;
  const int parts = pass_parts(ctx, n);
  constexpr size_t kSample = 64;
  // The dictionary holds values, not keys: counting then compares the input as it is, with no
  // encoding pass (in sort order equal keys are equal values, except NaNs with other payloads,
  // which just take entries of their own).
  // The first 17 sample keys pairwise distinct turn the input away, found by vector compares
  // without branches (the dictionary loop below, branching on each key, cost float32 sorts of
  // 600 random keys 13%).
  {
    T probe[kFewDistinctMax + 1];
    for (size_t s = 0; s <= kFewDistinctMax; ++s)
      probe[s] = src[(n / kSample) * s + (n / kSample) / 2];
    if (all_distinct17(probe)) return false;
  }
  size_t d0 = 0;
  T dict0[kFewDistinctMax];
  for (size_t s = 0; s < kSample; ++s) {
    const T x = src[(n / kSample) * s + (n / kSample) / 2];
    if constexpr (Codec::kNanPayload)
      if (!nan_ok && c.is_nan(x)) return false;
    bool seen = false;
    for (size_t j = 0; j < d0; ++j) seen |= dict0[j] == x;
    if (seen) continue;
    if (d0 == kFewDistinctMax) return false;
    dict0[d0++] = x;
  }
  struct Part {
    T dict[kFewDistinctMax];
    size_t d, count[kFewDistinctMax];
    bool ok;
  };
  Part part[kMaxBuckets];
  auto count = [&](int t) {
    Part &p = part[t];
    std::memcpy(p.dict, dict0, sizeof dict0);
    p.d = d0;
    for (size_t j = 0; j < kFewDistinctMax; ++j) p.count[j] = 0;
    p.ok = few_count(c, src, chunk_begin(n, parts, t), chunk_begin(n, parts, t + 1), p.dict, p.d,
                     p.count, nan_ok);
  };
  if (parts == 1) count(0);
  else parallel_tasks(ctx, parts, count);
  // Merged: the values of every part, with their counts summed, then in sort order.
  struct Entry {
    T value;
    size_t count;
  };
  Entry e[kFewDistinctMax];
  size_t d = 0;
  for (int t = 0; t < parts; ++t) {
    if (!part[t].ok) return false;
    for (size_t j = 0; j < part[t].d; ++j) {
      size_t i = 0;
      while (i < d && !(e[i].value == part[t].dict[j])) ++i;
      if (i == d) {
        if (d == kFewDistinctMax) return false;
        e[d++] = Entry{part[t].dict[j], 0};
      }
      e[i].count += part[t].count[j];
    }
  }
  insertion_sort(e, d, [c](const Entry &a, const Entry &b) { return c.enc(a.value) < c.enc(b.value); });
  // Runs, each task writing its chunk of dst.
  auto fill = [&](int t) {
    const size_t lo = chunk_begin(n, parts, t), hi = chunk_begin(n, parts, t + 1);
    size_t pos = 0;
    for (size_t j = 0; j < d; pos += e[j].count, ++j) {
      const size_t a = pos > lo ? pos : lo, b = pos + e[j].count < hi ? pos + e[j].count : hi;
      const T x = e[j].value;
      for (size_t i = a; i < b; ++i) dst[i] = x;
    }
  };
  if (parts == 1) fill(0);
  else parallel_tasks(ctx, parts, fill);
  return true;
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
