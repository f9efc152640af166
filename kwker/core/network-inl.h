// network-inl.h: bitonic sorting networks on registers, generic over the per-ISA
// Ops<T> of simd-inl.h (in the transposed layout the first stages are smaller networks:
// ColumnNetwork below). Used for quicksort leaves (up to W * kMaxVecs keys) and for
// sorting pivot samples.
//
// K vectors of W lanes hold N = K * W keys; key index i = vector * W + lane. The
// network is the "flip" form of bitonic sort: for each block size k = 2, 4, ..., N,
// first compare i with i ^ (k - 1), then i with i ^ j for j = k/4, ..., 1; the lower
// index always takes the minimum. A compare-exchange on index mask M splits into
//   M >= W, M % W == 0: whole vectors against whole vectors (min/max only);
//   M <  W           : lanes inside each vector (permute, min/max, blend);
//   M >= W, M % W == W - 1 (the flip of a block wider than a vector): vector v against
//                      vector v ^ (M / W) with its lanes reversed.
// In the last case the upper vector keeps the maxima in reversed lane order, which
// saves the permute back: the rest of that stage applies only lane-wise steps to
// it and then merges each vector on its own, and a lane-reversed bitonic sequence is
// still bitonic, so the merge sorts it all the same.
#ifndef KWKER_CORE_NETWORK_INL_H_
#define KWKER_CORE_NETWORK_INL_H_

#include "simd-inl.h"
#include "simd16-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {
namespace vq {

// One layer of compare-exchanges between index i and i ^ M. In the plain layout key index i is
// vector i / W, lane i % W; in the transposed one (kT, below) it is vector i % K, lane i / K.
// Either way the mask splits into a vector part and a lane part: lane part only, a permute and
// a min / max inside each vector; vector part only, whole vectors against whole vectors; both,
// vector against the partner's permuted lanes (plain: the upper vector keeps its maxima in
// permuted order, see the top of the file; transposed: S::cx_flip blends by lane).
template <class S, size_t K, size_t M, bool kT = false>
KWKER_VQ_INLINE void cx_layer(typename S::V* v) {
  using V = typename S::V;
  constexpr size_t W = S::W;
  constexpr size_t mv = kT ? M % K : M / W;  // vector part of the mask
  constexpr size_t ml = kT ? M / K : M % W;  // lane part of the mask
  if constexpr (mv == 0) {
#pragma GCC unroll 32
    for (size_t i = 0; i < K; ++i) v[i] = S::template cx_lanes<unsigned(ml)>(v[i]);
  } else {
#pragma GCC unroll 32
    for (size_t i = 0; i < K; ++i) {
      const size_t p = i ^ mv;
      if (p > i) {
        if constexpr (kT && ml != 0) {
          S::template cx_flip<unsigned(ml)>(v[i], v[p]);
        } else {
          V b = v[p];
          if constexpr (ml != 0) b = S::template perm_xor<unsigned(ml)>(b);
          S::minmax(v[i], b, v[i], v[p]);
        }
      }
    }
  }
}

// Half-cleaner layers j = J, J/2, ..., 1.
template <class S, size_t K, size_t J, bool kT = false>
KWKER_VQ_INLINE void cx_merge_layers(typename S::V* v) {
  if constexpr (J >= 1) {
    cx_layer<S, K, J, kT>(v);
    cx_merge_layers<S, K, J / 2, kT>(v);
  }
}

// Stages k, 2k, ..., Last of the bitonic sort (Last: all N keys unless told).
template <class S, size_t K, size_t k, bool kT = false, size_t Last = K * S::W>
KWKER_VQ_INLINE void bitonic_stages(typename S::V* v) {
  if constexpr (k <= Last) {
    cx_layer<S, K, k - 1, kT>(v);
    cx_merge_layers<S, K, k / 4, kT>(v);
    bitonic_stages<S, K, 2 * k, kT, Last>(v);
  }
}

// ---------------------------------------------------------------------------
// The same network in the transposed layout: key index i = lane * K + vector. Index bits below
// log2(K) are then vector bits, so every layer with a mask below K (all of stages 2..K, and the
// last log2(K) layers of every later stage) is whole vectors against whole vectors, one min and
// one max per pair, where the plain layout spends a permute, a min and a masked max per vector
// on its in-lane layers. For 256 int32 keys (K = W = 16) that is about 800 vector operations
// against 1,450 (760 with the column network below), plus the 64 shuffles of one transpose back
// to the plain layout at the end.
// Engines opt in with S::kTransposedNetwork; they then provide transpose_square (W vectors of W
// lanes, in place), transpose_half (W / 2 vectors, output vector u = lanes 2u and 2u + 1 of
// every input vector) and cx_flip<M>, the flip layer of a block wider than K, which pairs vector a
// with vector b's lanes permuted by M: the lower index is the one in the lower lane (lane bits
// are the high bits), so each result blends minima and maxima by lane.
template <class S, class = void> struct TransposedNetwork {
  static constexpr bool value = false;
};
template <class S> struct TransposedNetwork<S, decltype(void(S::kTransposedNetwork))> {
  static constexpr bool value = S::kTransposedNetwork;
};

// Engines with 4 * K == W transposes (AVX-512) also say so with transpose_quarter.
template <class S, class = void> struct TransposedQuarter {
  static constexpr bool value = false;
};
template <class S> struct TransposedQuarter<S, decltype(S::transpose_quarter(nullptr))> {
  static constexpr bool value = true;
};

// Transposed layout (K = c * W) back to the plain one: key l * K + h * W + m, held by vector
// h * W + m in lane l, belongs in vector c * l + h, lane m; so each block of W vectors is
// transposed as a square and its row l becomes vector c * l + h.
template <class S, size_t K>
KWKER_VQ_INLINE void untranspose(typename S::V* v) {
  using V = typename S::V;
  constexpr size_t W = S::W, c = K / W;
  V out[K];
#pragma GCC unroll 32
  for (size_t h = 0; h < c; ++h) {
    S::transpose_square(v + h * W);
#pragma GCC unroll 32
    for (size_t l = 0; l < W; ++l) out[c * l + h] = v[h * W + l];
  }
#pragma GCC unroll 32
  for (size_t i = 0; i < K; ++i) v[i] = out[i];
}

// The first stages of the transposed network (k = 2 .. K) compare whole vectors only: they sort
// each lane's K keys down the vectors, and any sorting network of K inputs leaves the same keys
// there. The smallest known ones need fewer compare-exchanges than the bitonic stages, in as
// many layers: 5 against 6 for 4 inputs, 19 against 24 for 8, 60 against 80 for 16 (AVX2 engine,
// one thread, 2-vCPU Xeon: rows of 256 keys 1.03-1.11x faster; design.md). Pairs in layer order;
// the pairs of one layer are independent. Each list is proved below on every 0-1 input, which
// by the 0-1 principle proves it on every input.
template <size_t K> struct ColumnNetwork {
  static constexpr bool kHave = false;
};
template <> struct ColumnNetwork<4> {
  static constexpr bool kHave = true;
  static constexpr size_t kSize = 5;
  static constexpr uint8_t kPairs[kSize][2] = {{0, 1}, {2, 3}, {0, 2}, {1, 3}, {1, 2}};
};
template <> struct ColumnNetwork<8> {
  static constexpr bool kHave = true;
  static constexpr size_t kSize = 19;
  static constexpr uint8_t kPairs[kSize][2] = {
      {0, 2}, {1, 3}, {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}, {0, 1}, {2, 3},
      {4, 5}, {6, 7}, {2, 4}, {3, 5}, {1, 4}, {3, 6}, {1, 2}, {3, 4}, {5, 6}};
};
template <> struct ColumnNetwork<16> {
  static constexpr bool kHave = true;
  static constexpr size_t kSize = 60;
  static constexpr uint8_t kPairs[kSize][2] = {
      {0, 13}, {1, 12}, {2, 15}, {3, 14}, {4, 8},   {5, 6},   {7, 11},  {9, 10},
      {0, 5},  {1, 7},  {2, 9},  {3, 4},  {6, 13},  {8, 14},  {10, 15}, {11, 12},
      {0, 1},  {2, 3},  {4, 5},  {6, 8},  {7, 9},   {10, 11}, {12, 13}, {14, 15},
      {0, 2},  {1, 3},  {4, 10}, {5, 11}, {6, 7},   {8, 9},   {12, 14}, {13, 15},
      {1, 2},  {3, 12}, {4, 6},  {5, 7},  {8, 10},  {9, 11},  {13, 14}, {1, 4},
      {2, 6},  {5, 8},  {7, 10}, {9, 13}, {11, 14}, {2, 4},   {3, 6},   {9, 12},
      {11, 13}, {3, 5}, {6, 8},  {7, 9},  {10, 12}, {3, 4},   {5, 6},   {7, 8},
      {9, 10}, {11, 12}, {6, 7}, {8, 9}};
};

// Whether ColumnNetwork<K> sorts all 2^K inputs of zeros and ones, 64 at a time: word i holds
// input i's bit of 64 inputs, and on such keys a compare-exchange is an AND (the minimum) and an
// OR (the maximum). Inputs 0..63 of a batch vary the first six keys, the batch number the rest.
template <size_t K> constexpr bool sorts_every_01_input() {
  constexpr uint64_t kLow[6] = {0xAAAAAAAAAAAAAAAAu, 0xCCCCCCCCCCCCCCCCu, 0xF0F0F0F0F0F0F0F0u,
                                0xFF00FF00FF00FF00u, 0xFFFF0000FFFF0000u, 0xFFFFFFFF00000000u};
  using N = ColumnNetwork<K>;
  const uint64_t batches = K > 6 ? uint64_t(1) << (K - 6) : 1;
  for (uint64_t t = 0; t < batches; ++t) {
    uint64_t w[K] = {};
    for (size_t i = 0; i < K; ++i)
      w[i] = i < 6 ? kLow[i] : ((t >> (i - 6)) & 1) ? ~uint64_t(0) : 0;
    for (size_t c = 0; c < N::kSize; ++c) {
      const size_t a = N::kPairs[c][0], b = N::kPairs[c][1];
      if (a >= b || b >= K) return false;
      const uint64_t lo = w[a] & w[b], hi = w[a] | w[b];
      w[a] = lo;
      w[b] = hi;
    }
    for (size_t i = 0; i + 1 < K; ++i)
      if (w[i] & ~w[i + 1]) return false;  // a one above a zero: unsorted
  }
  return true;
}
static_assert(sorts_every_01_input<4>() && sorts_every_01_input<8>() &&
                  sorts_every_01_input<16>(),
              "a ColumnNetwork does not sort every input");

// Stages 2 .. K of the transposed network: each lane sorted down the K vectors (the bitonic
// stages where no smaller network is listed).
template <class S, size_t K>
KWKER_VQ_INLINE void sort_columns(typename S::V* v) {
  if constexpr (ColumnNetwork<K>::kHave) {
    using N = ColumnNetwork<K>;
#pragma GCC unroll 64
    for (size_t c = 0; c < N::kSize; ++c) {
      const size_t a = N::kPairs[c][0], b = N::kPairs[c][1];
      S::minmax(v[a], v[b], v[a], v[b]);
    }
  } else {
    bitonic_stages<S, K, 2, true, K>(v);
  }
}

// The whole transposed network: the columns, then the bitonic stages from 2 K keys on.
template <class S, size_t K>
KWKER_VQ_INLINE void transposed_stages(typename S::V* v) {
  sort_columns<S, K>(v);
  bitonic_stages<S, K, 2 * K, true>(v);
}

// Sorts the K * W keys held in v[0..K) (K a power of two).
template <class S, size_t K>
KWKER_VQ_INLINE void sort_vectors(typename S::V* v) {
  if constexpr (TransposedNetwork<S>::value && K >= S::W && K % S::W == 0) {
    transposed_stages<S, K>(v);
    untranspose<S, K>(v);
  } else if constexpr (TransposedNetwork<S>::value && 2 * K == S::W) {
    transposed_stages<S, K>(v);
    S::transpose_half(v);
  } else if constexpr (TransposedQuarter<S>::value && 4 * K == S::W) {
    transposed_stages<S, K>(v);
    S::transpose_quarter(v);
  } else {
    bitonic_stages<S, K, 2>(v);
  }
}

// Sorts a[0..n) with n <= K * W: loads whole vectors, the tail (if any) as a partial
// vector padded with the maximum key, sorts, and stores back exactly n keys.
template <class S, size_t K>
inline void sort_block(typename S::Key* a, size_t n) {
  using T = typename S::Key;
  using V = typename S::V;
  constexpr size_t W = S::W;
  const size_t full = n / W, rem = n % W;
  V v[K];
  const V pad = S::set1(Limits<T>::kMax);
#pragma GCC unroll 32
  for (size_t i = 0; i < K; ++i) {
    if (i < full) v[i] = S::load(a + i * W);
    else if (i == full && rem != 0) v[i] = S::load_partial(a + i * W, rem);
    else v[i] = pad;
  }
  sort_vectors<S, K>(v);
#pragma GCC unroll 32
  for (size_t i = 0; i < K; ++i) {
    if (i < full) S::store(a + i * W, v[i]);
    else if (i == full && rem != 0) S::store_partial(a + i * W, v[i], rem);
  }
}

// The m keys beyond the first K vectors (load(K + i, lanes)) sorted by a network of K2 vectors
// into buf + K * W, padded with the largest key.
template <class S, size_t K, size_t K2, class Load>
KWKER_VQ_INLINE void pair_second_network(size_t m, const Load& load, typename S::Key* buf) {
  using V = typename S::V;
  constexpr size_t W = S::W, H = K * W;
  const size_t full = m / W, rem = m % W;
  const V pad = S::set1(Limits<typename S::Key>::kMax);
  V v[K2];
#pragma GCC unroll 32
  for (size_t i = 0; i < K2; ++i) {
    if (i < full) v[i] = load(K + i, W);
    else if (i == full && rem != 0) v[i] = load(K + i, rem);
    else v[i] = pad;
  }
  sort_vectors<S, K2>(v);
#pragma GCC unroll 32
  for (size_t i = 0; i < K2; ++i) S::store(buf + H + i * W, v[i]);
}

// cap < n <= 2 * cap keys (cap = K * W): the first cap keys sorted by the network in registers,
// the other m = n - cap by the smallest network that holds them (K2 vectors, padded with the
// largest key), then the last bitonic stage through a stack buffer. Its flip layer pairs key x
// of the first half with key 2 cap - 1 - x of the padded second (a vector against a
// lane-reversed vector); where that partner is padding the pair is a no-op, so only the first
// half's last K2 vectors meet the second half. The lower half is then a bitonic sequence that
// its own merge layers finish; the upper half holds its m keys in its first K2 vectors, a
// bitonic sequence padded with the largest key (still bitonic), which a merge of K2 vectors
// sorts. Cheaper than a quicksort partition and two leaves, and a second network sized to its
// keys makes it cheaper still just above one network (a padded second network of K vectors
// made 129 int32 keys cost as much as 256 on AVX2).
// load(i, lanes) returns the input's vector i (lanes < W: a partial one, padded with the largest
// key); store(i, v, lanes) writes the output's vector i. Every load comes before the first store.
template <class S, size_t K, size_t K2, class Load, class Store>
inline void pair_second_half(size_t m, const Load& load, const Store& store,
                             typename S::Key* buf) {
  using V = typename S::V;
  constexpr size_t W = S::W, H = K * W;
  const size_t full = m / W, rem = m % W;
  pair_second_network<S, K, K2>(m, load, buf);
#pragma GCC unroll 32
  for (size_t u = 0; u < K2; ++u) {  // first-half vector K - 1 - u against second-half vector u
    const size_t i = K - 1 - u;
    const V a = S::load(buf + i * W);
    const V b = S::template perm_xor<unsigned(W - 1)>(S::load(buf + H + u * W));
    V lo, hi;
    S::minmax(a, b, lo, hi);
    S::store(buf + i * W, lo);
    S::store(buf + H + u * W, S::template perm_xor<unsigned(W - 1)>(hi));
  }
  V v[K2];
#pragma GCC unroll 32
  for (size_t i = 0; i < K2; ++i) v[i] = S::load(buf + H + i * W);
  cx_merge_layers<S, K2, K2 * W / 2>(v);
#pragma GCC unroll 32
  for (size_t i = 0; i < K2; ++i) {  // every load is done: the upper half goes out now
    if (i < full) store(K + i, v[i], W);
    else if (i == full && rem != 0) store(K + i, v[i], rem);
  }
}

// The flip layer and both halves' merge layers of the last bitonic stage, on the two sorted
// halves in buf (2 K vectors, the second padded with the largest key); stores the n keys.
template <class S, size_t K, class Store>
KWKER_VQ_INLINE void pair_finish(size_t n, typename S::Key* buf, const Store& store) {
  using V = typename S::V;
  constexpr size_t W = S::W, H = K * W;
#pragma GCC unroll 32
  for (size_t i = 0; i < K; ++i) {
    const V a = S::load(buf + i * W);
    const V b = S::template perm_xor<unsigned(W - 1)>(S::load(buf + (2 * K - 1 - i) * W));
    V lo, hi;
    S::minmax(a, b, lo, hi);
    S::store(buf + i * W, lo);
    S::store(buf + (2 * K - 1 - i) * W, S::template perm_xor<unsigned(W - 1)>(hi));
  }
  for (size_t half = 0; half < 2; ++half) {
    V v[K];
    const typename S::Key* b = buf + half * H;
#pragma GCC unroll 32
    for (size_t i = 0; i < K; ++i) v[i] = S::load(b + i * W);
    cx_merge_layers<S, K, H / 2>(v);
#pragma GCC unroll 32
    for (size_t i = 0; i < K; ++i) {
      const size_t at = half * H + i * W;
      if (at + W <= n) store(half * K + i, v[i], W);
      else if (at < n) store(half * K + i, v[i], n - at);
    }
  }
}

// The first K vectors sorted by the network into buf.
template <class S, size_t K, class Load>
KWKER_VQ_INLINE void pair_first_half(const Load& load, typename S::Key* buf) {
  using V = typename S::V;
  constexpr size_t W = S::W;
  V v[K];
#pragma GCC unroll 32
  for (size_t i = 0; i < K; ++i) v[i] = load(i, W);
  sort_vectors<S, K>(v);
#pragma GCC unroll 32
  for (size_t i = 0; i < K; ++i) S::store(buf + i * W, v[i]);
}

// The second half more than K / 2 vectors: both halves sorted by networks of K vectors (a
// merge of K / 2 vectors and the rest in its place won only just above 3 K / 2 vectors and
// made the engines' compile a third longer).
template <class S, size_t K, class Load, class Store>
KWKER_VQ_INLINE void pair_sort_even(size_t n, const Load& load, const Store& store) {
  using Key = typename S::Key;
  constexpr size_t H = K * S::W;
  alignas(64) Key buf[2 * H];
  pair_first_half<S, K>(load, buf);
  pair_second_network<S, K, K>(n - H, load, buf);
  pair_finish<S, K>(n, buf, store);
}

template <class S, size_t K, class Load, class Store>
inline void pair_sort_with(size_t n, const Load& load, const Store& store) {
  using V = typename S::V;
  using Key = typename S::Key;
  constexpr size_t W = S::W, H = K * W;
  const size_t m = n - H, mv = (m + W - 1) / W;
  if (2 * mv > K) {
    pair_sort_even<S, K>(n, load, store);
    return;
  }
  alignas(64) Key buf[2 * H];
  pair_first_half<S, K>(load, buf);
  static_assert(K >= 8, "the second network sizes below assume K >= 8");
  constexpr size_t h = K / 2;  // the largest second network here
  if (mv <= 1) pair_second_half<S, K, 1>(m, load, store, buf);
  else if (mv <= 2) pair_second_half<S, K, 2>(m, load, store, buf);
  else if (mv <= 4) pair_second_half<S, K, 4>(m, load, store, buf);
  else if (mv <= 8) pair_second_half<S, K, (h < 8 ? h : 8)>(m, load, store, buf);
  else pair_second_half<S, K, (h < 16 ? h : 16)>(m, load, store, buf);
  {
    V v[K];
#pragma GCC unroll 32
    for (size_t i = 0; i < K; ++i) v[i] = S::load(buf + i * W);
    cx_merge_layers<S, K, H / 2>(v);
#pragma GCC unroll 32
    for (size_t i = 0; i < K; ++i) store(i, v[i], W);
  }
}

// The same on keys in place: a[0..n), S::W * S::kMaxVecs < n <= twice that.
template <class S>
inline void pair_sort(typename S::Key* a, size_t n) {
  constexpr size_t W = S::W;
  pair_sort_with<S, S::kMaxVecs>(
      n,
      [a](size_t i, size_t lanes) {
        return lanes == W ? S::load(a + i * W) : S::load_partial(a + i * W, lanes);
      },
      [a](size_t i, typename S::V v, size_t lanes) {
        if (lanes == W) S::store(a + i * W, v);
        else S::store_partial(a + i * W, v, lanes);
      });
}

// Sorts a[0..n), n <= W * S::kMaxVecs, with the smallest network that fits.
template <class S>
inline void small_sort(typename S::Key* a, size_t n) {
  constexpr size_t W = S::W;
  static_assert(S::kMaxVecs == 8 || S::kMaxVecs == 16 || S::kMaxVecs == 32,
                "kMaxVecs must be 8, 16 or 32");
  if (n <= 1) return;
  const size_t nv = (n + W - 1) / W;
  if (nv <= 1) sort_block<S, 1>(a, n);
  else if (nv <= 2) sort_block<S, 2>(a, n);
  else if (nv <= 4) sort_block<S, 4>(a, n);
  else if (S::kMaxVecs == 8 || nv <= 8) sort_block<S, 8>(a, n);
  else if constexpr (S::kMaxVecs >= 16) {
    if (S::kMaxVecs == 16 || nv <= 16) sort_block<S, 16>(a, n);
    else if constexpr (S::kMaxVecs >= 32) sort_block<S, 32>(a, n);
  }
}

}  // namespace vq
}  // namespace KWKER_ENGINE_NS
}  // namespace kwker

#endif  // KWKER_CORE_NETWORK_INL_H_
