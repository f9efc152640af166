// Packed argsort keys: a key and its index in one integer, so that one integer sort (network,
// quicksort or the parallel sample sort) yields the stable order directly: the index breaks
// every tie, and no (key, index) pair has to move as two words.
//
// Keys of up to 32 bits: (key << 32 | index), always exact (n < 2^32).
// 64-bit keys: the key, offset by the smallest key of the input, needs D bits and the index B
// bits. When D + B <= 64 the packing is exact. Otherwise the lowest D + B - 64 key bits are
// dropped; keys that then tie on their packed prefix come out in index order, and every run of
// equal prefixes is re-sorted by the full key afterwards (fix_dropped_bits). For real data such
// runs are rare and short; in the worst case they cost a comparison sort of the run.
// 32-bit keys of short inputs (Pack32): the same scheme in 32-bit words, whose sorts have twice
// the lanes; there the re-sorting is bounded and the caller falls back to the exact 64-bit
// packing when the runs grow too long (fix_dropped_runs).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/engine_ns-inl.h"
#include "core/scalar-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

constexpr uint64_t kSign64 = uint64_t(1) << 63;

inline int bit_length(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }

template <class K> inline int64_t pack32(K key, size_t i) {
  return int64_t((uint64_t(int64_t(key)) << 32) | uint64_t(i));
}

// w[i] = (key << 16 | i) for the keys of 16 bits or fewer, n <= 2^16: one 32-bit sort then
// yields the stable order. The index runs in 32 bits so that the loop vectorises on 32-bit
// lanes; counted in size_t, GCC narrowed a 64-bit index per lane (three shuffles a vector: int16
// rows of 1,000 on the avx2 engine 1.03-1.05x faster this way, Xeon, one thread).
template <class Codec>
inline void pack16_words(const Codec c, const typename Codec::T *src, size_t n, int32_t *w) {
  const uint32_t m = uint32_t(n);
  for (uint32_t i = 0; i < m; ++i) w[i] = int32_t((uint32_t(int32_t(c.enc(src[i]))) << 16) | i);
}

struct Pack64 {
  uint64_t base;  // the smallest key, as an order-preserving unsigned integer
  int drop;       // low key bits dropped so that key and index fit in 64 bits
  int B;          // index bits
  // Packed words are sorted as signed integers: the top bit is flipped so that the unsigned
  // order of the packing is kept.
  int64_t pack(int64_t key, size_t i) const {
    uint64_t u = (uint64_t(key) ^ kSign64) - base;
    return int64_t((((u >> drop) << B) | uint64_t(i)) ^ kSign64);
  }
  int64_t index_mask() const { return int64_t((uint64_t(1) << B) - 1); }
};

inline Pack64 make_pack64(uint64_t lo, uint64_t hi, size_t n) {
  const int B = bit_length(n > 1 ? uint64_t(n - 1) : 1);
  const int D = bit_length(hi - lo);
  return Pack64{lo, D + B > 64 ? D + B - 64 : 0, B};
}

// Smallest and largest key of src[lo..hi) as order-preserving unsigned integers.
template <class Codec>
void key_range64(const Codec c, const typename Codec::T *src, size_t lo, size_t hi,
                 uint64_t &mn, uint64_t &mx) {
  uint64_t a = ~uint64_t(0), b = 0;
  for (size_t i = lo; i < hi; ++i) {
    uint64_t u = uint64_t(c.enc(src[i])) ^ kSign64;
    a = u < a ? u : a;
    b = u > b ? u : b;
  }
  mn = a;
  mx = b;
}

template <class Codec>
Pack64 plan_pack64_seq(const Codec c, const typename Codec::T *src, size_t n) {
  uint64_t lo, hi;
  key_range64(c, src, 0, n, lo, hi);
  return make_pack64(lo, hi, n);
}

// Re-sorts one run of packed words whose prefixes tie (their indices ascend) by full key, then
// index. Short runs: insertion sort on cached keys (stable, so ties keep index order); longer
// ones first check whether their keys already ascend (a run of equal keys, the common case for
// few distinct values), else a comparison sort.
template <class Codec, class Word>
void sort_dropped_run(const Codec c, const typename Codec::T *src, Word *w, size_t m, Word mask) {
  using K = typename Codec::K;
  constexpr size_t kShort = 32;
  if (m == 2) {  // most runs: two keys, already in index order
    if (c.enc(src[w[1] & mask]) < c.enc(src[w[0] & mask])) {
      const Word t = w[0];
      w[0] = w[1];
      w[1] = t;
    }
    return;
  }
  if (m <= kShort) {
    K key[kShort];
    Word word[kShort];
    for (size_t j = 0; j < m; ++j) {
      word[j] = w[j];
      key[j] = c.enc(src[w[j] & mask]);
    }
    for (size_t j = 1; j < m; ++j) {
      K k = key[j];
      Word v = word[j];
      size_t t = j;
      for (; t > 0 && k < key[t - 1]; --t) {
        key[t] = key[t - 1];
        word[t] = word[t - 1];
      }
      key[t] = k;
      word[t] = v;
    }
    for (size_t j = 0; j < m; ++j) w[j] = word[j];
    return;
  }
  size_t j = 1;
  for (K prev = c.enc(src[w[0] & mask]); j < m; ++j) {
    const K k = c.enc(src[w[j] & mask]);
    if (k < prev) break;
    prev = k;
  }
  if (j == m) return;
  auto less = [&](Word a, Word b) {
    K ka = c.enc(src[a & mask]), kb = c.enc(src[b & mask]);
    return ka < kb || (ka == kb && (a & mask) < (b & mask));
  };
  intro_sort(w, m, less);
}

// w[0..n): sorted packed words of src with B index bits. Re-sorts every run of equal prefixes
// by full key; a vectorised check skips blocks without equal neighbours. Gives up (returns
// false, w then unspecified) once the runs seen hold more than max_keys words.
template <class Codec, class Word>
bool fix_dropped_runs(const Codec c, const typename Codec::T *src, int B, Word *w, size_t n,
                      size_t max_keys) {
  using UWord = typename std::make_unsigned<Word>::type;
  const Word mask = Word((uint64_t(1) << B) - 1);
  const UWord tie = UWord(UWord(1) << B);  // neighbours tie when their xor is below this
  size_t i = 0, in_runs = 0;
  if (n <= 32) {  // the short argsorts' words: a plain scan to the first tie, without the
                  // vector loop's setup
    while (i + 1 < n && UWord(w[i] ^ w[i + 1]) >= tie) ++i;
    if (i + 1 >= n) return true;
  }
  // Blocks of 64 words: the count vectorises, and only blocks holding a tie are scanned.
  constexpr size_t kBlock = 64;
  while (i + 1 < n) {
    const size_t e = i + kBlock < n - 1 ? i + kBlock : n - 1;
    unsigned ties = 0;
    for (size_t k = i; k < e; ++k) ties += UWord(w[k] ^ w[k + 1]) < tie;
    if (ties == 0) {
      i = e;
      continue;
    }
    while (i < e) {
      while (i < e && UWord(w[i] ^ w[i + 1]) >= tie) ++i;  // to the next tie
      if (i == e) break;
      size_t j = i + 2;
      while (j < n && UWord(w[j - 1] ^ w[j]) < tie) ++j;
      in_runs += j - i;
      if (in_runs > max_keys) return false;
      sort_dropped_run(c, src, w + i, j - i, mask);
      i = j;
    }
  }
  return true;
}

template <class Codec>
void fix_dropped_bits(const Codec c, const typename Codec::T *src, const Pack64 &p, int64_t *w,
                      size_t n) {
  fix_dropped_runs(c, src, p.B, w, n, ~size_t(0));
}

// 32-bit keys of n <= 2^31 inputs in 32-bit words: ((key - base) >> drop) << B | index, the top
// bit flipped so that the signed sort keeps the unsigned order.
struct Pack32 {
  uint32_t base;  // the smallest key, as an order-preserving unsigned integer
  int drop;       // low key bits dropped
  int B;          // index bits
  int32_t pack(int32_t key, size_t i) const {
    const uint32_t u = (uint32_t(key) ^ 0x80000000u) - base;
    return int32_t((((u >> drop) << B) | uint32_t(i)) ^ 0x80000000u);
  }
  int32_t index_mask() const { return int32_t((uint32_t(1) << B) - 1); }
};

// The plan for src[0..n), 2 <= n <= 2^31: one pass for the key range (vectorised).
template <class Codec>
Pack32 plan_pack32(const Codec c, const typename Codec::T *src, size_t n) {
  uint32_t lo = ~0u, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = uint32_t(int32_t(c.enc(src[i]))) ^ 0x80000000u;
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
  }
  const int B = bit_length(uint64_t(n - 1));
  const int D = bit_length(uint64_t(hi - lo));
  return Pack32{lo, D + B > 32 ? D + B - 32 : 0, B};
}

// Stable argsort of 32-bit keys through Pack32 words in w[0..n): sorts them and re-sorts the
// runs of tied prefixes; false (w unspecified) when those runs hold more than n / 8 keys, where
// the exact 64-bit packing is the cheaper sort. Afterwards w[j] & p.index_mask() is the index.
template <class Codec, class Sort>
bool argsort_words32(const Codec c, const typename Codec::T *src, size_t n, int32_t *w,
                     Pack32 &p, const Sort &sort_words) {
  p = plan_pack32(c, src, n);
  // A register of lanes at a time through the codec's vector form (the scalar loop did not
  // vectorise: 40% of a 1,000-key argsort on AVX2).
#if defined(__AVX512F__)
  constexpr size_t L = 16;
#else
  constexpr size_t L = 8;
#endif
  typedef uint32_t VU __attribute__((vector_size(L * 4)));
  typedef int32_t VK __attribute__((vector_size(L * 4)));
  VU lane;
  for (size_t l = 0; l < L; ++l) lane[l] = uint32_t(l);
  const uint32_t drop = uint32_t(p.drop), B = uint32_t(p.B);
  size_t i = 0;
  for (; i + L <= n; i += L) {
    VU x;
    memcpy(&x, src + i, sizeof x);
    const VU u = ((VU)c.template enc_v<VK, VU>(x) ^ 0x80000000u) - p.base;
    const VU word = (((u >> drop) << B) | (lane + uint32_t(i))) ^ 0x80000000u;
    memcpy(w + i, &word, sizeof word);
  }
  for (; i < n; ++i) w[i] = p.pack(int32_t(c.enc(src[i])), i);
  sort_words(w, n);
  return p.drop == 0 || fix_dropped_runs(c, src, p.B, w, n, n / 8);
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
