// Short sorts that never leave registers: values are loaded straight from the input (a masked
// load for the tail), encoded to keys with the vector form of the codec, sorted by the bitonic
// network, decoded and stored. Going through a stack buffer instead costs two passes and, for a
// tail shorter than a vector, a store-to-load forwarding stall that was measured to double the
// time of rows of 2-17 keys.
//
// For 16-, 32- and 64-bit dtypes on the vector engines (the codec's key is as wide as its
// value); 8-bit dtypes and the portable engine use the buffer path in short-inl.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/engine_ns-inl.h"
#include "core/keys-inl.h"
#include "core/network-inl.h"
#include "core/tuning-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

// GCC vector views of an engine register: signed keys (VK) and unsigned values (VU).
template <class S> struct Lanes {
  using Key = typename S::Key;
  using UKey = typename std::make_unsigned<Key>::type;
  typedef Key VK __attribute__((vector_size(sizeof(typename S::V))));
  typedef UKey VU __attribute__((vector_size(sizeof(typename S::V))));
  static VK iota() {
    VK v;
    for (size_t l = 0; l < S::W; ++l) v[l] = Key(l);
    return v;
  }
};

// Registers one short sort may hold: the quicksort's leaf size. (32 registers of 64-bit keys
// on AVX-512 were measured 1.8x slower than the quicksort for 200 keys: the network spills.)
template <class S> struct ShortVecs {
  static constexpr size_t value = S::kMaxVecs;
};


// Whether codec C sorts in registers on this engine.
template <class Codec> constexpr bool coded_ok() {
  using K = typename Codec::K;
  if constexpr (sizeof(K) >= 2 && sizeof(typename Codec::T) == sizeof(K))
    return vq::Ops<K>::W > 1;
  else
    return false;
}

// Float keys (vq::FOps) are the values themselves: no encoding, and the padding is +inf.
template <class S> constexpr bool raw_float_keys() {
  return std::is_floating_point<typename S::Key>::value;
}

template <class S, class Codec>
KWKER_VQ_INLINE typename S::V load_keys(const Codec c, const typename S::Key *p, size_t lanes) {
  if constexpr (raw_float_keys<S>()) {
    (void)c;
    return lanes == S::W ? S::load(p) : S::load_partial(p, lanes);
  } else {
  using L = Lanes<S>;
  using VK = typename L::VK;
  using VU = typename L::VU;
  if (lanes == S::W) return (typename S::V)c.template enc_v<VK, VU>((VU)S::load(p));
  // The padding lanes take the largest key, so they sort last and are never stored.
  const VK e = c.template enc_v<VK, VU>((VU)S::load_partial(p, lanes));
  const VK m = L::iota() < typename L::Key(lanes);
  const VK pad = VK{} + vq::Limits<typename L::Key>::kMax;
  return (typename S::V)((e & m) | (pad & ~m));
  }
}

template <class S, class Codec>
KWKER_VQ_INLINE void store_values(const Codec c, typename S::Key *p, typename S::V v,
                                  size_t lanes) {
  if constexpr (raw_float_keys<S>()) {
    (void)c;
    if (lanes == S::W) S::store(p, v);
    else S::store_partial(p, v, lanes);
  } else {
    using L = Lanes<S>;
    const typename S::V out =
        (typename S::V)c.template dec_v<typename L::VK, typename L::VU>((typename L::VK)v);
    if (lanes == S::W) S::store(p, out);
    else S::store_partial(p, out, lanes);
  }
}

// Sorts n <= K * W values of src into dst (which may equal src: every load comes first).
template <class S, size_t K, class Codec>
inline void sort_block_coded(const Codec c, const typename S::Key *src, typename S::Key *dst,
                             size_t n) {
  constexpr size_t W = S::W;
  const size_t full = n / W, rem = n % W;
  typename S::V v[K];
  const typename S::V pad = S::set1(vq::Limits<typename S::Key>::kMax);
#pragma GCC unroll 32
  for (size_t i = 0; i < K; ++i) {
    if (i < full) v[i] = load_keys<S>(c, src + i * W, W);
    else if (i == full && rem != 0) v[i] = load_keys<S>(c, src + i * W, rem);
    else v[i] = pad;
  }
  vq::sort_vectors<S, K>(v);
#pragma GCC unroll 32
  for (size_t i = 0; i < K; ++i) {
    if (i < full) store_values<S>(c, dst + i * W, v[i], W);
    else if (i == full && rem != 0) store_values<S>(c, dst + i * W, v[i], rem);
  }
}

// cap < n <= 2 * cap values (cap = K * W): the two-network merge of network-inl.h
// (vq::pair_sort_with), reading and writing through the codec.
template <class S, class Codec>
inline void sort_coded_pair(const Codec c, const typename S::Key *src, typename S::Key *dst,
                            size_t n) {
  constexpr size_t W = S::W;
  vq::pair_sort_with<S, ShortVecs<S>::value>(
      n, [&](size_t i, size_t lanes) { return load_keys<S>(c, src + i * W, lanes); },
      [&](size_t i, typename S::V v, size_t lanes) { store_values<S>(c, dst + i * W, v, lanes); });
}

// Sorted copy of 2 <= n <= 2 * W * ShortVecs values, with the smallest network that fits, or
// the two-network merge.
template <class S, class Codec>
void sort_coded_as(const Codec c, const typename Codec::T *src, typename Codec::T *dst,
                   size_t n) {
  using Key = typename S::Key;
  constexpr size_t W = S::W, KMax = ShortVecs<S>::value;
  const Key *s = reinterpret_cast<const Key *>(src);
  Key *d = reinterpret_cast<Key *>(dst);
  const size_t nv = (n + W - 1) / W;
  if (nv <= 1) sort_block_coded<S, 1>(c, s, d, n);
  else if (nv <= 2) sort_block_coded<S, 2>(c, s, d, n);
  else if (nv <= 4) sort_block_coded<S, 4>(c, s, d, n);
  else if (nv <= 8) sort_block_coded<S, 8>(c, s, d, n);
  else if constexpr (KMax >= 16) {
    if (nv <= 16) sort_block_coded<S, 16>(c, s, d, n);
    else if constexpr (KMax >= 32) {
      if (nv <= 32) sort_block_coded<S, 32>(c, s, d, n);
      else sort_coded_pair<S>(c, s, d, n);
    } else {
      sort_coded_pair<S>(c, s, d, n);
    }
  } else {
    sort_coded_pair<S>(c, s, d, n);
  }
}

#if defined(__AVX512F__) || defined(__AVX2__)
// Whether n float values hold no NaN and no -0.0 (which compares equal to 0.0 as a float):
// then float comparisons order them exactly as their keys do. One masked pass over the input,
// which is in cache for the sort anyway. Always inlined: rows in registers call it once per
// register, where a call (GCC stopped inlining it once the unit grew) made avx2 float32 rows of
// 4 1.3x slower.
#if defined(__AVX512F__)
template <class U> KWKER_VQ_INLINE bool floats_plain(const U *p, size_t n) {
  __mmask16 bad = 0;
  if constexpr (sizeof(U) == 4) {
    const __m512i neg_zero = _mm512_set1_epi32(int32_t(0x80000000u));
    for (size_t i = 0; i < n; i += 16) {
      const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
      const __m512 v = _mm512_maskz_loadu_ps(m, p + i);
      bad |= _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q) |
             _mm512_mask_cmpeq_epi32_mask(m, _mm512_castps_si512(v), neg_zero);
    }
  } else {
    const __m512i neg_zero = _mm512_set1_epi64(int64_t(0x8000000000000000ull));
    for (size_t i = 0; i < n; i += 8) {
      const __mmask8 m = n - i >= 8 ? __mmask8(0xFF) : __mmask8((1u << (n - i)) - 1);
      const __m512d v = _mm512_maskz_loadu_pd(m, p + i);
      bad |= __mmask16(_mm512_mask_cmp_pd_mask(m, v, v, _CMP_UNORD_Q) |
                       _mm512_mask_cmpeq_epi64_mask(m, _mm512_castpd_si512(v), neg_zero));
    }
  }
  return bad == 0;
}
#else
// The lanes of the vector at q holding NaN (unordered with itself) or -0.0 (vminps / vminpd
// would tie it with 0.0, where the integer keys order it first), all ones.
KWKER_VQ_INLINE __m256i unplain_at(const float *q) {
  const __m256 v = _mm256_loadu_ps(q);
  return _mm256_or_si256(_mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)),
                         _mm256_cmpeq_epi32(_mm256_castps_si256(v), _mm256_set1_epi32(INT32_MIN)));
}
KWKER_VQ_INLINE __m256i unplain_at(const double *q) {
  const __m256d v = _mm256_loadu_pd(q);
  return _mm256_or_si256(_mm256_castpd_si256(_mm256_cmp_pd(v, v, _CMP_UNORD_Q)),
                         _mm256_cmpeq_epi64(_mm256_castpd_si256(v), _mm256_set1_epi64x(INT64_MIN)));
}

template <class U> KWKER_VQ_INLINE bool floats_plain(const U *p, size_t n) {
  // U holds the values' bits; any NaN or -0.0 sends the input to the integer keys.
  static_assert(std::is_unsigned<U>::value, "U holds the values' bits");
  using F = typename std::conditional<sizeof(U) == 4, float, double>::type;
  constexpr size_t L = 32 / sizeof(U);
  const F *f = reinterpret_cast<const F *>(p);
  __m256i bad = _mm256_setzero_si256();
  size_t i = 0;
  if (n >= 4 * L) {
    // Four vectors a step into four accumulators: with one, its chain of ors bound the loop
    // (a row of 256 float32 on AVX2, Zen 5: this check was 7% of the row's sort, now 3%).
    __m256i acc[4] = {bad, bad, bad, bad};
    for (; i + 4 * L <= n; i += 4 * L)
      for (size_t j = 0; j < 4; ++j) acc[j] = _mm256_or_si256(acc[j], unplain_at(f + i + L * j));
    bad = _mm256_or_si256(_mm256_or_si256(acc[0], acc[1]), _mm256_or_si256(acc[2], acc[3]));
  }
  for (; i + L <= n; i += L) bad = _mm256_or_si256(bad, unplain_at(f + i));
  bool any = !_mm256_testz_si256(bad, bad);
  constexpr U sign = U(U(1) << (8 * sizeof(U) - 1));
  constexpr U inf = sizeof(U) == 4 ? U(0x7F800000u) : U(0x7FF0000000000000ull);
  for (; i < n; ++i) any |= U(p[i] & ~sign) > inf || p[i] == sign;
  return !any;
}
#endif

// Whether this thread's float comparisons see denormals as they are (MXCSR's DAZ bit clear).
// DAZ is set by programs built with fast-math and by torch.set_flush_denormal(True); with it,
// vminps / vminpd would treat every denormal as zero.
inline bool float_compares_exact() { return (_mm_getcsr() & 0x40u) == 0; }
#endif

// Float types this engine compares as floats: float32 and float64 on AVX-512 and AVX2.
template <class U> constexpr bool float_ops_for() {
#if defined(__AVX512F__) || defined(__AVX2__)
  return sizeof(U) >= 4;
#else
  return false;
#endif
}

// Whether n keys of a float codec may sort compared as floats on this engine (the values still
// have to pass floats_plain): from the measured knob sort_float_min_32 / _64 up to
// sort_float_max_32 / _64 keys (min 0: never). Where that pays depends on the core: the float
// min / max have the longer latency on Intel, the shorter on AMD's Zen (core/tuning-inl.h).
template <class Codec> bool floats_as_floats(size_t n) {
#if defined(__AVX512F__) || defined(__AVX2__)
  if constexpr (Codec::kNanPayload && float_ops_for<typename Codec::T>()) {
    constexpr bool k32 = sizeof(typename Codec::T) == 4;
    const size_t lo = size_t(tuned(k32 ? tune::kSortFloatMin32 : tune::kSortFloatMin64));
    const size_t hi = size_t(tuned(k32 ? tune::kSortFloatMax32 : tune::kSortFloatMax64));
    return lo != 0 && n >= lo && n <= hi && float_compares_exact();
  }
#endif
  (void)n;
  return false;
}

// Whether rows of g keys sorted in registers (rows of 2-16 keys; g the padded length) compare
// float values as floats: inside the float window, as sorts of g keys do, or up to the
// sort_float_rows_max knob besides it. They differ on Intel cores, where the window leaves 1-D
// sorts of up to 32 float64 keys and every float32 sort to the integer keys (float compares
// there: 1-D sorts of 9-32 keys 0.92-0.97x, rows of 20-64, sorted one at a time, 0.89-0.96x),
// while the rows in registers gain (avx512 engine, Xeon with AMX, one thread, knob alternating
// in one process: float32 rows of 2-8 2.1-2.6x, 9 / 16 1.30x / 1.55x; float64 rows of 2-8
// 1.5-2.1x, 9 / 16 1.46x / 1.52x). Only from kFloatRowsMinKeys keys in all (rows x g): a call of
// a few rows is one network's latency, where the float min / max are slower (rows of 4 / 16:
// 1-8 rows 0.93-1.04x, 16 rows 0.99x / 1.12x, 64 rows 1.19-1.33x).
constexpr size_t kFloatRowsMinKeys = 256;
template <class Codec> bool rows_as_floats(size_t g, size_t rows) {
  if (floats_as_floats<Codec>(g < 9 ? 9 : g)) return true;
#if defined(__AVX512F__) || defined(__AVX2__)
  if constexpr (Codec::kNanPayload && float_ops_for<typename Codec::T>())
    return g <= size_t(tuned(tune::kSortFloatRowsMax)) && rows * g >= kFloatRowsMinKeys &&
           float_compares_exact();
#endif
  (void)rows;
  return false;
}

#if defined(__AVX2__) && !defined(__AVX512F__)
// int64 values sorted as doubles on AVX2, which has no 64-bit integer min / max (an int64
// compare-exchange is a vpcmpgtq and two blends, a float64 one a vminpd and a vmaxpd). x maps to
// the double with bits |x| and x's sign, an order-preserving map while |x| is at most +inf's
// bits (0x7FF0...0): no NaN pattern, and -1 becomes the negative denormal 1 (below +0.0), so no
// two keys compare equal as doubles unless they are equal. int64_as_doubles_ok checks the range.
struct I64AsF64Ops : vq::FOps<double> {
  using Base = vq::FOps<double>;
  using T = double;
  using V = __m256d;
  // -x in the lanes where neg is all ones, x elsewhere.
  static KWKER_VQ_INLINE __m256i negate_where(__m256i x, __m256i neg) {
    return _mm256_sub_epi64(_mm256_xor_si256(x, neg), neg);
  }
  static KWKER_VQ_INLINE V to_f(__m256i x) {
    const __m256i neg = _mm256_cmpgt_epi64(_mm256_setzero_si256(), x);
    const __m256i mag = negate_where(x, neg);
    return _mm256_castsi256_pd(
        _mm256_or_si256(mag, _mm256_and_si256(neg, _mm256_set1_epi64x(INT64_MIN))));
  }
  static KWKER_VQ_INLINE __m256i to_i(V v) {
    const __m256i b = _mm256_castpd_si256(v);
    const __m256i neg = _mm256_cmpgt_epi64(_mm256_setzero_si256(), b);
    const __m256i mag = _mm256_andnot_si256(_mm256_set1_epi64x(INT64_MIN), b);
    return negate_where(mag, neg);
  }
  static KWKER_VQ_INLINE V load(const T *p) {
    return to_f(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static KWKER_VQ_INLINE void store(T *p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), to_i(v));
  }
  static KWKER_VQ_INLINE V load_partial(const T *p, size_t n) {
    const __m256i m = vq::Ops<int64_t>::first_lanes(n);
    const V x = to_f(_mm256_maskload_epi64(reinterpret_cast<const long long *>(p), m));
    return _mm256_blendv_pd(Base::set1(vq::Limits<double>::kMax), x, _mm256_castsi256_pd(m));
  }
  static KWKER_VQ_INLINE void store_partial(T *p, V v, size_t n) {
    _mm256_maskstore_epi64(reinterpret_cast<long long *>(p), vq::Ops<int64_t>::first_lanes(n),
                           to_i(v));
  }
};

// Whether every x of p[0..n) has |x| <= 0x7FF0000000000000 (INT64_MIN, whose magnitude wraps,
// fails too).
inline bool int64_as_doubles_ok(const int64_t *p, size_t n) {
  const __m256i lim = _mm256_set1_epi64x(0x7FF0000000000000ll), zero = _mm256_setzero_si256();
  __m256i bad = zero;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + i));
    const __m256i neg = _mm256_cmpgt_epi64(zero, x);
    const __m256i mag = I64AsF64Ops::negate_where(x, neg);
    bad = _mm256_or_si256(bad, _mm256_or_si256(_mm256_cmpgt_epi64(mag, lim),
                                               _mm256_cmpgt_epi64(zero, mag)));
  }
  bool any = !_mm256_testz_si256(bad, bad);
  for (; i < n; ++i) any |= p[i] == INT64_MIN || (p[i] < 0 ? -p[i] : p[i]) > 0x7FF0000000000000ll;
  return !any;
}
#endif

// Whether one of n float bit patterns is a NaN (its magnitude above +inf's): whole registers,
// then the tail.
template <class Codec>
bool any_nan_bits(const Codec c, const typename Codec::T *p, size_t n) {
  using K = typename Codec::K;
  using S = vq::Ops<K>;
  using L = Lanes<S>;
  using VK = typename L::VK;
  constexpr K kAbs = K(~K(Codec::kSign));
  const K inf = K(c.inf_bits);
  const K *q = reinterpret_cast<const K *>(p);
  VK bad = VK{};
  size_t i = 0;
  for (; i + S::W <= n; i += S::W) bad |= ((VK)S::load(q + i) & kAbs) > inf;
  K any = 0;
  for (size_t l = 0; l < S::W; ++l) any |= bad[l];
  for (; i < n; ++i) any |= K((q[i] & kAbs) > inf);
  return any != 0;
}

// a[0..m) reversed, a vector from each end at a time while they do not meet.
template <class S> void reverse_keys(typename S::Key *a, size_t m) {
  constexpr size_t W = S::W;
  size_t lo = 0, hi = m;
  for (; hi - lo >= 2 * W; lo += W, hi -= W) {
    const typename S::V x = S::load(a + lo), y = S::load(a + hi - W);
    S::store(a + lo, S::template perm_xor<unsigned(W - 1)>(y));
    S::store(a + hi - W, S::template perm_xor<unsigned(W - 1)>(x));
  }
  for (; hi - lo >= 2; ++lo, --hi) {
    const typename S::Key t = a[lo];
    a[lo] = a[hi - 1];
    a[hi - 1] = t;
  }
}

// NaN-free ascending floats outside the float-compare window: their bit patterns sorted as
// signed integers, whose order is the floats' except that the negative block comes reversed
// (as in the in-place float sort, design.md); then that block reversed. No encoding on load or
// decoding on store (rows of 256 float64, AVX-512: see design.md). The same bits as the keys'
// order, -0.0 before 0.0 included. Kept out of line: inlined, its code slowed the float-compare
// rows of 32-100 keys beside it by 4-14% (register allocation of the caller).
template <class Codec>
__attribute__((noinline)) bool sort_float_bits_short(const Codec c, const typename Codec::T *src,
                                                     typename Codec::T *dst, size_t n) {
  using K = typename Codec::K;
  using S = vq::Ops<K>;
  if (c.flip != 0 || any_nan_bits(c, src, n)) return false;
  const IntCodec<K, false> bits(0);
  sort_coded_as<S>(bits, reinterpret_cast<const K *>(src), reinterpret_cast<K *>(dst), n);
  K *d = reinterpret_cast<K *>(dst);
  reverse_keys<S>(d, negative_count(d, n, false));
  return true;
}

// Sorted copy of 2 <= n <= 2 * W * ShortVecs values (see sort_coded_as). True when it sorted
// them as floats or their bits, which implies there was no NaN; otherwise NaN payloads are the
// caller's. Descending keeps the integer keys here: the networks have no cheap reversal.
template <class Codec>
bool sort_coded(const Codec c, const typename Codec::T *src, typename Codec::T *dst, size_t n) {
#if defined(__AVX512F__) || defined(__AVX2__)
  using U = typename Codec::T;
  if constexpr (Codec::kNanPayload && float_ops_for<U>()) {
    if (c.flip == 0 && floats_as_floats<Codec>(n) && floats_plain(src, n)) {
      using F = typename std::conditional<sizeof(U) == 4, float, double>::type;
      sort_coded_as<vq::FOps<F>>(c, src, dst, n);
      return true;
    }
  }
#endif
#if defined(__AVX2__) && !defined(__AVX512F__)
  // Ascending int64 inside float64's window (the same register sorts; knobs sort_float_*_64),
  // from 17 keys: below, the map to doubles and back costs more than the compares it saves
  // (int64 rows of 8 / 16 0.90x / 0.87x, of 32 / 64 1.20x / 1.14x; AMD Zen 4, --isa avx2).
  if constexpr (std::is_same<Codec, IntCodec<int64_t, false>>::value) {
    const size_t lo = size_t(tuned(tune::kSortFloatMin64));
    if (c.identity() && lo != 0 && n >= (lo > 17 ? lo : 17) &&
        n <= size_t(tuned(tune::kSortFloatMax64)) &&
        float_compares_exact() && int64_as_doubles_ok(src, n)) {
      sort_coded_as<I64AsF64Ops>(c, src, dst, n);
      return false;
    }
  }
#endif
  // float64 only: float32 rows of 32 / 100 (their float compares, beside this call) measured
  // 0.93x / 0.96x with it compiled in, and float32 showed no gain to pay for that.
  if constexpr (Codec::kNanPayload && sizeof(typename Codec::T) == 8)
    if (sort_float_bits_short(c, src, dst, n)) return true;
  sort_coded_as<vq::Ops<typename Codec::K>>(c, src, dst, n);
  return false;
}

// Bitonic stages 2, 4, ..., G inside one register: sorts every aligned group of G lanes.
template <class S, size_t G, size_t k = 2>
KWKER_VQ_INLINE void sort_lane_groups(typename S::V *v) {
  if constexpr (k <= G) {
    vq::cx_layer<S, 1, k - 1>(v);
    vq::cx_merge_layers<S, 1, k / 4>(v);
    sort_lane_groups<S, G, 2 * k>(v);
  }
}

// rows rows of G keys (G a power of two up to 4 W): W / G rows per register, or G / W registers
// per row, sorted by the network in registers. Returns the number of rows done: all but a tail
// shorter than a register, and it stops early (leaving the rest to the caller) at a register
// holding a NaN, whose payload the caller must keep.
template <class Codec, size_t G>
size_t sort_rows_in_lanes(const Codec c, const typename Codec::T *src, typename Codec::T *dst,
                          size_t rows) {
  using S = vq::Ops<typename Codec::K>;
  using L = Lanes<S>;
  using VK = typename L::VK;
  using VU = typename L::VU;
  using Key = typename S::Key;
  constexpr size_t W = S::W, R = G <= W ? W / G : 1, K = G <= W ? 1 : G / W;
  static_assert(K <= 4, "rows of up to four registers");
  const Key *s = reinterpret_cast<const Key *>(src);
  Key *d = reinterpret_cast<Key *>(dst);
  size_t r = 0;
#if defined(__AVX512F__) || defined(__AVX2__)
  if constexpr (Codec::kNanPayload && float_ops_for<typename Codec::T>()) {
    // Ascending float rows inside the float window compare as floats, as sort_coded does: on
    // AVX2 the int64 keys' min / max are a compare and two blends (float64 rows of 16: 0.88 ms
    // per 1e6 as floats one row at a time, 1.77 as int64 keys in registers). A row holding a
    // NaN or -0.0 is left to the caller. The window's lower bound (9 keys where it is lowest)
    // stands for the scalar networks below it, which rows in registers never take: rows of 8
    // go by the window at 9 (AVX2 float64 rows of 8: 1.29 -> 0.42 ns/el).
    if (c.flip == 0 && rows_as_floats<Codec>(G, rows)) {
      using F = typename std::conditional<sizeof(Key) == 4, float, double>::type;
      using FS = vq::FOps<F>;
      const F *fs = reinterpret_cast<const F *>(src);
      F *fd = reinterpret_cast<F *>(dst);
      for (; r + R <= rows && floats_plain(src + r * G, R * G); r += R) {
        typename FS::V v[K];
#pragma GCC unroll 4
        for (size_t j = 0; j < K; ++j) v[j] = FS::load(fs + r * G + j * W);
        if constexpr (K == 1) sort_lane_groups<FS, G>(v);
        else vq::sort_vectors<FS, K>(v);
#pragma GCC unroll 4
        for (size_t j = 0; j < K; ++j) FS::store(fd + r * G + j * W, v[j]);
      }
      return r;
    }
  }
#endif
  for (; r + R <= rows; r += R) {
    VK k[K];
    bool any = false;
#pragma GCC unroll 4
    for (size_t j = 0; j < K; ++j) {
      k[j] = c.template enc_v<VK, VU>((VU)S::load(s + r * G + j * W));
      if constexpr (Codec::kNanPayload) {
        // A NaN lane decodes to the canonical NaN: let the caller's scalar path keep its bits.
        const VK nan = (VK)(k[j] == c.nan_key);
        for (size_t l = 0; l < W; ++l) any |= nan[l] != 0;
      }
    }
    if (any) break;
    typename S::V v[K];
#pragma GCC unroll 4
    for (size_t j = 0; j < K; ++j) v[j] = (typename S::V)k[j];
    if constexpr (K == 1) sort_lane_groups<S, G>(v);
    else vq::sort_vectors<S, K>(v);
#pragma GCC unroll 4
    for (size_t j = 0; j < K; ++j)
      S::store(d + r * G + j * W, (typename S::V)c.template dec_v<VK, VU>((VK)v[j]));
  }
  return r;
}

// ---- stable argsort of short rows, several rows per register ----

// One compare-exchange layer between lanes l and l ^ M on (key, index) pairs; in every pair the
// lane with bit H clear takes the smaller pair. The index breaks ties, so the order is stable.
template <class L, unsigned M, unsigned H>
KWKER_VQ_INLINE void pair_layer(typename L::VK &k, typename L::VK &i) {
  using VK = typename L::VK;
  const VK lane = L::iota();
  const VK perm = lane ^ typename L::Key(M);
  const VK pk = __builtin_shuffle(k, perm), pi = __builtin_shuffle(i, perm);
  const VK partner_greater = (pk > k) | ((pk == k) & (pi > i));
  const VK upper = (lane & typename L::Key(H)) != 0;
  const VK take = (upper & partner_greater) | (~upper & ~partner_greater);
  k = (take & pk) | (~take & k);
  i = (take & pi) | (~take & i);
}

template <class L, unsigned J>
KWKER_VQ_INLINE void pair_merge_layers(typename L::VK &k, typename L::VK &i) {
  if constexpr (J >= 1) {
    pair_layer<L, J, J>(k, i);
    pair_merge_layers<L, J / 2>(k, i);
  }
}

// Bitonic stages 2..G on (key, index) pairs: sorts every aligned group of G lanes.
template <class L, size_t G, size_t k2 = 2>
KWKER_VQ_INLINE void pair_lane_groups(typename L::VK &k, typename L::VK &i) {
  if constexpr (k2 <= G) {
    pair_layer<L, unsigned(k2 - 1), unsigned(k2 / 2)>(k, i);
    pair_merge_layers<L, unsigned(k2 / 4)>(k, i);
    pair_lane_groups<L, G, 2 * k2>(k, i);
  }
}

// Stable argsort of rows rows of G 64-bit keys (G a power of two up to W), W / G rows per
// register; out gets indices relative to each row. Returns the rows done (all but a tail
// shorter than a register).
template <class Codec, size_t G>
size_t argsort_rows_in_lanes(const Codec c, const typename Codec::T *src, size_t rows,
                             int64_t *out) {
  using S = vq::Ops<typename Codec::K>;
  using L = Lanes<S>;
  using VK = typename L::VK;
  using VU = typename L::VU;
  using Key = typename S::Key;
  static_assert(sizeof(Key) == 8, "indices share the keys' 64-bit lanes");
  constexpr size_t W = S::W, R = W / G;
  const Key *s = reinterpret_cast<const Key *>(src);
  const VK rel = L::iota() & Key(G - 1);
  size_t r = 0;
  for (; r + R <= rows; r += R) {
    VK k = c.template enc_v<VK, VU>((VU)S::load(s + r * G)), i = rel;
    pair_lane_groups<L, G>(k, i);
    S::store(reinterpret_cast<Key *>(out + r * G), (typename S::V)i);
  }
  return r;
}

// The same for keys narrower than 64 bits: each key takes a 64-bit lane as (key << 32 | index
// in its row), so the plain key network orders the pairs, ties by index, with no second
// register of indices to carry. Measured 11-23x the per-row argsort on rows of 2 and 4 keys of
// 16 or 32 bits, whose per-row call dominated, and 3-4x on rows of 8.
template <class Codec, size_t G>
size_t argsort_rows_packed_in_lanes(const Codec c, const typename Codec::T *src, size_t rows,
                                    int64_t *out) {
  using S = vq::Ops<int64_t>;
  using L = Lanes<S>;
  using VK = typename L::VK;
  using VU = typename L::VU;
  using K = typename Codec::K;
  using UK = typename std::make_unsigned<K>::type;
  static_assert(sizeof(K) <= 4, "the key and its index share one 64-bit lane");
  constexpr size_t W = S::W, R = W / G;
  typedef K NK __attribute__((vector_size(W * sizeof(K))));
  typedef UK NU __attribute__((vector_size(W * sizeof(K))));
  const VK rel = L::iota() & int64_t(G - 1);
  size_t r = 0;
  for (; r + R <= rows; r += R) {
    NU raw;
    std::memcpy(&raw, src + r * G, sizeof raw);
    const VK k = __builtin_convertvector(c.template enc_v<NK, NU>(raw), VK);
    typename S::V v = (typename S::V)((VK)((VU)k << 32) | rel);  // shifted as unsigned: no UB
    sort_lane_groups<S, G>(&v);
    S::store(reinterpret_cast<int64_t *>(out + r * G), (typename S::V)((VK)v & int64_t(G - 1)));
  }
  return r;
}


// ---- rows whose length is not a power of two, padded in registers ----
//
// A row of N keys sorts in a group of G lanes (G the next power of two): a shuffle spreads the
// rows read from the input over their groups and fills the G - N lanes past each row's end with
// a padding key that sorts after every key (the largest key; in the argsorts its index, the
// largest in the group, settles ties with a key equal to it), so the first N lanes of each
// sorted group are the row in order and a second shuffle packs them back together. One W-lane
// load and store per register, reaching past the last row it holds: the loops stop while a
// register's W lanes still lie inside the rows given (the caller's tail takes the rest), so a
// thread never writes outside its own rows, and the lanes a sort stores past its rows are the
// values it read there. Float64 rows of 3 took the per-row argsort before: 1.2x NumPy's.

template <size_t N> constexpr size_t padded_group() {
  size_t g = 1;
  while (g < N) g *= 2;
  return g;
}

// Lane l takes row l / G's key l % G, or lane W of the second operand (the padding) past the
// row's end.
template <class M, size_t W, size_t N, size_t G> KWKER_VQ_INLINE M spread_lanes() {
  M m;
  for (size_t l = 0; l < W; ++l)
    m[l] = typename std::remove_reference<decltype(m[0])>::type(l % G < N ? l / G * N + l % G : W);
  return m;
}

// Lane j takes sorted lane (j / N) * G + j % N while j covers the register's rows, then lane j
// of the second operand.
template <class M, size_t W, size_t N, size_t G> KWKER_VQ_INLINE M pack_lanes() {
  M m;
  for (size_t j = 0; j < W; ++j)
    m[j] = typename std::remove_reference<decltype(m[0])>::type(
        j < W / G * N ? j / N * G + j % N : W + j);
  return m;
}

// Sorted copy of rows rows of N keys, W / G rows per register (see above). Returns the rows done;
// it stops early at a register holding a NaN, as sort_rows_in_lanes does.
template <class Codec, size_t N>
size_t sort_rows_padded_in_lanes(const Codec c, const typename Codec::T *src,
                                 typename Codec::T *dst, size_t rows) {
  using S = vq::Ops<typename Codec::K>;
  using L = Lanes<S>;
  using VK = typename L::VK;
  using VU = typename L::VU;
  using Key = typename S::Key;
  constexpr size_t G = padded_group<N>(), W = S::W, R = W / G;
  static_assert(N < G && G <= W, "padded rows fill one register");
  const Key *s = reinterpret_cast<const Key *>(src);
  Key *d = reinterpret_cast<Key *>(dst);
  const size_t last = rows * N;
  size_t r = 0;
#if defined(__AVX512F__) || defined(__AVX2__)
  if constexpr (Codec::kNanPayload && float_ops_for<typename Codec::T>()) {
    if (c.flip == 0 && rows_as_floats<Codec>(G, rows)) {
      using F = typename std::conditional<sizeof(Key) == 4, float, double>::type;
      using FS = vq::FOps<F>;
      using FV = typename FS::V;
      const F *fs = reinterpret_cast<const F *>(src);
      F *fd = reinterpret_cast<F *>(dst);
      const VK spread = spread_lanes<VK, W, N, G>(), pack = pack_lanes<VK, W, N, G>();
      FV pad;
      for (size_t l = 0; l < W; ++l) pad[l] = __builtin_inf();
      for (; r * N + W <= last && floats_plain(src + r * N, R * N); r += R) {
        const FV v = FS::load(fs + r * N);
        FV k = __builtin_shuffle(v, pad, spread);
        sort_lane_groups<FS, G>(&k);
        FS::store(fd + r * N, __builtin_shuffle(k, v, pack));
      }
      return r;
    }
  }
#endif
  const VK spread = spread_lanes<VK, W, N, G>(), pack = pack_lanes<VK, W, N, G>();
  const VK pad = VK{} + std::numeric_limits<Key>::max();
  for (; r * N + W <= last; r += R) {
    const VK raw = (VK)S::load(s + r * N);
    VK k = c.template enc_v<VK, VU>((VU)raw);
    if constexpr (Codec::kNanPayload) {
      // A NaN lane decodes to the canonical NaN: let the caller's scalar path keep its bits.
      const VK nan = (VK)(k == c.nan_key);
      bool any = false;
      for (size_t l = 0; l < R * N; ++l) any |= nan[l] != 0;
      if (any) break;
    }
    typename S::V v = (typename S::V)__builtin_shuffle(k, pad, spread);
    sort_lane_groups<S, G>(&v);
    const VK out = (VK)c.template dec_v<VK, VU>((VK)v);
    S::store(d + r * N, (typename S::V)__builtin_shuffle(out, raw, pack));
  }
  return r;
}

// Sorted copy of rows of N keys, W < N < 2 W (the key's lanes: 64-bit rows of 5-7 and 32-bit
// rows of 9-15 on AVX2), one row in two registers through the two-register network, the second
// padded past the row's end; its store writes back, past the row, the values it read there.
// Returns the rows done; it stops early at a row holding a NaN, as sort_rows_in_lanes does.
template <class Codec, size_t N>
size_t sort_rows_two_in_lanes(const Codec c, const typename Codec::T *src,
                              typename Codec::T *dst, size_t rows) {
  using S = vq::Ops<typename Codec::K>;
  using L = Lanes<S>;
  using VK = typename L::VK;
  using VU = typename L::VU;
  using Key = typename S::Key;
  constexpr size_t W = S::W;
  static_assert(W < N && N < 2 * W, "a row in two registers");
  const Key *s = reinterpret_cast<const Key *>(src);
  Key *d = reinterpret_cast<Key *>(dst);
  const VK real = L::iota() < Key(N - W);  // the second register's lanes inside the row
  const size_t last = rows * N;
  size_t r = 0;
#if defined(__AVX512F__) || defined(__AVX2__)
  if constexpr (Codec::kNanPayload && float_ops_for<typename Codec::T>()) {
    if (c.flip == 0 && rows_as_floats<Codec>(N, rows)) {
      using F = typename std::conditional<sizeof(Key) == 4, float, double>::type;
      using FS = vq::FOps<F>;
      using FV = typename FS::V;
      const F *fs = reinterpret_cast<const F *>(src);
      F *fd = reinterpret_cast<F *>(dst);
      FV inf;
      for (size_t l = 0; l < W; ++l) inf[l] = __builtin_inf();
      for (; r * N + 2 * W <= last && floats_plain(src + r * N, N); ++r) {
        const FV raw1 = FS::load(fs + r * N + W);
        FV v[2] = {FS::load(fs + r * N), (FV)(((VK)raw1 & real) | ((VK)inf & ~real))};
        vq::sort_vectors<FS, 2>(v);
        FS::store(fd + r * N, v[0]);
        FS::store(fd + r * N + W, (FV)(((VK)v[1] & real) | ((VK)raw1 & ~real)));
      }
      return r;
    }
  }
#endif
  const VK pad = VK{} + std::numeric_limits<Key>::max();
  for (; r * N + 2 * W <= last; ++r) {
    const VK raw1 = (VK)S::load(s + r * N + W);
    const VK k0 = c.template enc_v<VK, VU>((VU)S::load(s + r * N));
    VK k1 = c.template enc_v<VK, VU>((VU)raw1);
    if constexpr (Codec::kNanPayload) {
      // A NaN lane decodes to the canonical NaN: let the caller's scalar path keep its bits.
      const VK nan = (VK)(k0 == c.nan_key) | ((VK)(k1 == c.nan_key) & real);
      bool any = false;
      for (size_t l = 0; l < W; ++l) any |= nan[l] != 0;
      if (any) break;
    }
    k1 = (k1 & real) | (pad & ~real);
    typename S::V v[2] = {(typename S::V)k0, (typename S::V)k1};
    vq::sort_vectors<S, 2>(v);
    S::store(d + r * N, (typename S::V)c.template dec_v<VK, VU>((VK)v[0]));
    const VK o1 = (VK)c.template dec_v<VK, VU>((VK)v[1]);
    S::store(d + r * N + W, (typename S::V)((o1 & real) | (raw1 & ~real)));
  }
  return r;
}

// Stable argsort of rows rows of N keys in 64-bit lanes (see above): 64-bit keys beside a
// register of indices, as argsort_rows_in_lanes; narrower keys packed with their index, as
// argsort_rows_packed_in_lanes. Returns the rows done.
template <class Codec, size_t N>
size_t argsort_rows_padded_in_lanes(const Codec c, const typename Codec::T *src, size_t rows,
                                    int64_t *out) {
  using S = vq::Ops<int64_t>;
  using L = Lanes<S>;
  using VK = typename L::VK;
  using VU = typename L::VU;
  using K = typename Codec::K;
  constexpr size_t G = padded_group<N>(), W = S::W, R = W / G;
  static_assert(N < G && G <= W, "padded rows fill one register");
  const VK rel = L::iota() & int64_t(G - 1);
  const VK pack = pack_lanes<VK, W, N, G>();
  const size_t last = rows * N;
  size_t r = 0;
  if constexpr (sizeof(K) == 8) {
    using KS = vq::Ops<K>;
    using KL = Lanes<KS>;
    using KK = typename KL::VK;
    using KU = typename KL::VU;
    const KK spread = spread_lanes<KK, W, N, G>(), pad = KK{} + std::numeric_limits<K>::max();
    const K *s = reinterpret_cast<const K *>(src);
    for (; r * N + W <= last; r += R) {
      KK k = c.template enc_v<KK, KU>((KU)KS::load(s + r * N));
      k = __builtin_shuffle(k, pad, spread);
      KK i = (KK)rel;
      pair_lane_groups<KL, G>(k, i);
      S::store(reinterpret_cast<int64_t *>(out + r * N), (typename S::V)__builtin_shuffle((VK)i, (VK)i, pack));
    }
  } else {
    using UK = typename std::make_unsigned<K>::type;
    typedef K NK __attribute__((vector_size(W * sizeof(K))));
    typedef UK NU __attribute__((vector_size(W * sizeof(K))));
    const NK spread = spread_lanes<NK, W, N, G>(), pad = NK{} + std::numeric_limits<K>::max();
    for (; r * N + W <= last; r += R) {
      NU raw;
      std::memcpy(&raw, src + r * N, sizeof raw);
      const NK k = __builtin_shuffle(c.template enc_v<NK, NU>(raw), pad, spread);
      const VK wide = __builtin_convertvector(k, VK);
      typename S::V v = (typename S::V)((VK)((VU)wide << 32) | rel);  // shifted as unsigned
      sort_lane_groups<S, G>(&v);
      const VK i = (VK)v & int64_t(G - 1);
      S::store(reinterpret_cast<int64_t *>(out + r * N), (typename S::V)__builtin_shuffle(i, i, pack));
    }
  }
  return r;
}

// Stable argsort of rows of N keys, W < N <= 2 W (64-bit lanes: rows of 5-8 on AVX2, 3-4 on
// SSE4.2, 9-16 on AVX-512), one row in two registers, the lanes past the row's end padded as
// above. 64-bit keys: (key, index) pairs, each register sorted by the lane stages, then the
// bitonic merge across the two (lane l against lane W - 1 - l of the other, then each half's
// merge layers); narrower keys: packed words through the two-register key network. Before,
// these rows took the per-row short argsort (float64 rows of 5: at torch's speed). Returns the
// rows done; a row's second load and store reach past it, as the padded rows' do.
template <class Codec, size_t N>
size_t argsort_rows_two_in_lanes(const Codec c, const typename Codec::T *src, size_t rows,
                                 int64_t *out) {
  using S = vq::Ops<int64_t>;
  using L = Lanes<S>;
  using VK = typename L::VK;
  using VU = typename L::VU;
  using K = typename Codec::K;
  constexpr size_t W = S::W;
  static_assert(W < N && N <= 2 * W, "a row in two registers");
  const VK lane = L::iota();
  const VK real = lane < int64_t(N - W);  // the second register's lanes inside the row
  const size_t last = rows * N;
  size_t r = 0;
  if constexpr (sizeof(K) == 8) {
    using KS = vq::Ops<K>;
    using KL = Lanes<KS>;
    using KK = typename KL::VK;
    using KU = typename KL::VU;
    const KK pad = KK{} + std::numeric_limits<K>::max(), in = (KK)real;
    const KK rev = KK{} + K(W - 1) - (KK)lane;
    const K *s = reinterpret_cast<const K *>(src);
    for (; r * N + 2 * W <= last; ++r) {
      KK k0 = c.template enc_v<KK, KU>((KU)KS::load(s + r * N));
      KK k1 = c.template enc_v<KK, KU>((KU)KS::load(s + r * N + W));
      k1 = (k1 & in) | (pad & ~in);
      KK i0 = (KK)lane, i1 = (KK)lane + K(W);
      pair_lane_groups<KL, W>(k0, i0);
      pair_lane_groups<KL, W>(k1, i1);
      const KK rk = __builtin_shuffle(k1, rev), ri = __builtin_shuffle(i1, rev);
      const KK up = (rk > k0) | ((rk == k0) & (ri > i0));  // the reversed lane is the larger
      KK lk = (up & k0) | (~up & rk), li = (up & i0) | (~up & ri);
      KK hk = (up & rk) | (~up & k0), hi = (up & ri) | (~up & i0);
      pair_merge_layers<KL, unsigned(W / 2)>(lk, li);
      pair_merge_layers<KL, unsigned(W / 2)>(hk, hi);
      S::store(reinterpret_cast<int64_t *>(out + r * N), (typename S::V)(VK)li);
      S::store(reinterpret_cast<int64_t *>(out + r * N + W), (typename S::V)(VK)hi);
    }
  } else {
    using UK = typename std::make_unsigned<K>::type;
    typedef K NK __attribute__((vector_size(W * sizeof(K))));
    typedef UK NU __attribute__((vector_size(W * sizeof(K))));
    const NK pad = NK{} + std::numeric_limits<K>::max();
    const NK in = __builtin_convertvector(real, NK);
    for (; r * N + 2 * W <= last; ++r) {
      NU raw0, raw1;
      std::memcpy(&raw0, src + r * N, sizeof raw0);
      std::memcpy(&raw1, src + r * N + W, sizeof raw1);
      const NK k0 = c.template enc_v<NK, NU>(raw0);
      const NK k1 = (c.template enc_v<NK, NU>(raw1) & in) | (pad & ~in);
      typename S::V v[2] = {
          (typename S::V)((VK)((VU)__builtin_convertvector(k0, VK) << 32) | lane),
          (typename S::V)((VK)((VU)__builtin_convertvector(k1, VK) << 32) | (lane + int64_t(W)))};
      vq::sort_vectors<S, 2>(v);
      S::store(reinterpret_cast<int64_t *>(out + r * N),
               (typename S::V)((VK)v[0] & int64_t(0xFFFFFFFF)));
      S::store(reinterpret_cast<int64_t *>(out + r * N + W),
               (typename S::V)((VK)v[1] & int64_t(0xFFFFFFFF)));
    }
  }
  return r;
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
