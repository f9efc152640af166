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
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/engine_ns-inl.h"
#include "core/scalar-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

constexpr uint64_t kSign64 = uint64_t(1) << 63;

inline int bit_length(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }

template <class K> inline int64_t pack32(K key, size_t i) {
  return int64_t((uint64_t(int64_t(key)) << 32) | uint64_t(i));
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
// index. Short runs: insertion sort on cached keys (stable, so ties keep index order).
template <class Codec>
void sort_dropped_run(const Codec c, const typename Codec::T *src, int64_t *w, size_t m,
                      int64_t mask) {
  using K = typename Codec::K;
  constexpr size_t kShort = 32;
  if (m <= kShort) {
    K key[kShort];
    int64_t word[kShort];
    for (size_t j = 0; j < m; ++j) {
      word[j] = w[j];
      key[j] = c.enc(src[w[j] & mask]);
    }
    for (size_t j = 1; j < m; ++j) {
      K k = key[j];
      int64_t v = word[j];
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
  auto less = [&](int64_t a, int64_t b) {
    K ka = c.enc(src[a & mask]), kb = c.enc(src[b & mask]);
    return ka < kb || (ka == kb && (a & mask) < (b & mask));
  };
  intro_sort(w, m, less);
}

// w[0..n): sorted packed words of src. Re-sorts every run of equal prefixes by full key. A
// vectorised check skips blocks without equal neighbours.
template <class Codec>
void fix_dropped_bits(const Codec c, const typename Codec::T *src, const Pack64 &p, int64_t *w,
                      size_t n) {
  const int B = p.B;
  const int64_t mask = p.index_mask();
  constexpr size_t kBlock = 512;
  size_t i = 0;
  while (i + 1 < n) {
    const size_t e = i + kBlock < n - 1 ? i + kBlock : n - 1;
    bool any = false;
    for (size_t k = i; k < e; ++k) any |= (w[k] >> B) == (w[k + 1] >> B);
    if (!any) {
      i = e;
      continue;
    }
    while (i < e) {
      const int64_t prefix = w[i] >> B;
      size_t j = i + 1;
      while (j < n && (w[j] >> B) == prefix) ++j;
      if (j - i > 1) sort_dropped_run(c, src, w + i, j - i, mask);
      i = j;
    }
  }
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
