// Key transforms: every dtype maps to a signed integer key whose natural order is the
// documented sort order (direction and NaN placement included), so one integer sort serves
// every dtype, engine and algorithm and results are bit-identical everywhere.
// Compiled once per engine: everything lives in the engine namespace.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/engine_ns-inl.h"
#include "kwker/kwker.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

template <class U> struct SignedOf;
template <> struct SignedOf<uint8_t> { using type = int8_t; };
template <> struct SignedOf<uint16_t> { using type = int16_t; };
template <> struct SignedOf<uint32_t> { using type = int32_t; };
template <> struct SignedOf<uint64_t> { using type = int64_t; };

// torch's order as a mode of the key transform (KWKER_NAN_LARGEST): NaN is the largest value,
// so it goes last ascending and first descending; it takes the place of KWKER_NANS_FIRST. (The
// other half of torch's order, -0.0 tying with 0.0, is what every index-returning call does.)
constexpr unsigned resolve_order_flags(unsigned flags) {
  if (!(flags & KWKER_NAN_LARGEST)) return flags;
  flags &= ~(KWKER_NAN_LARGEST | KWKER_NANS_FIRST);
  return (flags & KWKER_DESCENDING) ? (flags | KWKER_NANS_FIRST) : flags;
}

// IEEE binary floats (float16, bfloat16, float32, float64) seen as their bit patterns U.
// for_sort: -0.0 orders before 0.0 (a total order, so output never depends on the
// algorithm); for argsort -0.0 and 0.0 are the same key so ties stay in input order.
template <class U> struct FloatCodec {
  using T = U;
  using K = typename SignedOf<U>::type;
  static constexpr int kBits = 8 * sizeof(U);
  static constexpr U kSign = U(U(1) << (kBits - 1));
  bool identity() const { return false; }
  static constexpr bool kNanPayload = true;  // NaN bit patterns differ: sort keeps them
  bool is_nan(U b) const { return U(b & U(~kSign)) > inf_bits; }
  bool nans_first() const { return nan_key == K(kSign); }

  U inf_bits;  // +inf; any magnitude above it is NaN
  U quiet_nan;
  K flip;      // all ones when descending
  U zero_mask; // clears the sign of -0.0 when zeros tie (argsort)
  K nan_key;

  FloatCodec(U inf, U qnan, unsigned flags, bool for_sort)
      : inf_bits(inf), quiet_nan(qnan), flip((flags & KWKER_DESCENDING) ? K(-1) : K(0)),
        zero_mask(for_sort ? U(~U(0)) : U(~kSign)),
        nan_key((flags & KWKER_NANS_FIRST) ? K(kSign) : K(U(kSign - 1))) {}

  // Branch-free so the encode/decode loops vectorise.
  // Masks rather than ?: so that no compiler turns a select into a branch (which mispredicts
  // on NaN-heavy data) and the loops vectorise.
  K enc(U b) const {
    U mag = U(b & U(~kSign));
    U is_zero = U(-U(mag == 0));
    b = U(b & U(~is_zero | zero_mask));  // argsort: -0.0 becomes 0.0
    // Sign-magnitude to two's complement order: negative values get their magnitude flipped.
    K k = K(U(b ^ (U(K(b) >> (kBits - 1)) & U(~kSign))));
    k = K(k ^ flip);  // descending: bitwise complement reverses the order
    K is_nan = K(-K(mag > inf_bits));
    return K((k & ~is_nan) | (nan_key & is_nan));
  }
  U dec(K k) const {
    K d = K(k ^ flip);
    U b = U(U(d) ^ (U(K(d) >> (kBits - 1)) & U(~kSign)));
    U is_nan = U(-U(k == nan_key));
    return U((b & U(~is_nan)) | (quiet_nan & is_nan));
  }
  // The same transforms on GCC vectors of U (VU) and K (VK), for keys kept in registers. Vector
  // comparisons already give all-ones lanes, so the masks need no negation.
  template <class VK, class VU> VK enc_v(VU b) const {
    const VU mag = b & U(~kSign);
    b = b & ((VU)(mag != 0) | zero_mask);
    VK k = (VK)(b ^ ((VU)((VK)b >> (kBits - 1)) & U(~kSign)));
    k = k ^ flip;
    const VK is_nan = (VK)(mag > inf_bits);
    return (k & ~is_nan) | (nan_key & is_nan);
  }
  template <class VK, class VU> VU dec_v(VK k) const {
    const VK d = k ^ flip;
    const VU b = (VU)d ^ ((VU)(d >> (kBits - 1)) & U(~kSign));
    const VU is_nan = (VU)(k == nan_key);
    return (b & ~is_nan) | (quiet_nan & is_nan);
  }
};

// Integers. Unsigned types flip the sign bit; descending takes the bitwise complement, which
// reverses the order of a signed integer exactly.
template <class TT, bool kUnsigned> struct IntCodec {
  using T = TT;
  using U = typename std::make_unsigned<TT>::type;
  using K = typename SignedOf<U>::type;
  static constexpr U kSign = U(U(1) << (8 * sizeof(U) - 1));
  K flip;  // all ones when descending
  bool identity() const { return flip == 0 && !kUnsigned; }
  static constexpr bool kNanPayload = false;
  explicit IntCodec(unsigned flags) : flip((flags & KWKER_DESCENDING) ? K(-1) : K(0)) {}
  K enc(T x) const { return K((kUnsigned ? K(U(U(x) ^ kSign)) : K(x)) ^ flip); }
  T dec(K k) const {
    K d = K(k ^ flip);
    return kUnsigned ? T(U(U(d) ^ kSign)) : T(d);
  }
  template <class VK, class VU> VK enc_v(VU x) const {
    return (kUnsigned ? (VK)(x ^ kSign) : (VK)x) ^ flip;
  }
  template <class VK, class VU> VU dec_v(VK k) const {
    const VU d = (VU)(k ^ flip);
    return kUnsigned ? (d ^ kSign) : d;
  }
};

// bool: any nonzero byte is True.
struct BoolCodec {
  using T = uint8_t;
  using K = int8_t;
  bool desc;
  explicit BoolCodec(unsigned flags) : desc(flags & KWKER_DESCENDING) {}
  bool identity() const { return false; }
  static constexpr bool kNanPayload = false;
  K enc(uint8_t x) const { return K((x != 0) ^ desc); }
  uint8_t dec(K k) const { return uint8_t(k ^ desc); }
};

// datetime64 / timedelta64: int64 where INT64_MIN (NaT) orders like NaN. Non-NaT values
// span 2^64 - 1 keys, so the NaT key is made free by a shift of one where needed.
struct DatetimeCodec {
  using T = int64_t;
  using K = int64_t;
  bool desc, first;
  K nat_key;
  explicit DatetimeCodec(unsigned flags)
      : desc(flags & KWKER_DESCENDING), first(flags & KWKER_NANS_FIRST),
        nat_key(first ? INT64_MIN : INT64_MAX) {}
  bool identity() const { return false; }
  static constexpr bool kNanPayload = false;
  K enc(int64_t x) const {
    if (x == INT64_MIN) return nat_key;
    // asc: x in [MIN+1, MAX]; desc: ~x in [MIN, MAX-1]. Shift away from the NaT key.
    uint64_t k = desc ? uint64_t(~x) : uint64_t(x);
    if (!desc && !first) k -= 1;
    if (desc && first) k += 1;
    return K(k);
  }
  int64_t dec(K k) const {
    if (k == nat_key) return INT64_MIN;
    uint64_t u = uint64_t(k);
    if (!desc && !first) u += 1;
    if (desc && first) u -= 1;
    return desc ? ~int64_t(u) : int64_t(u);
  }
  // Vector forms: the NaT test becomes a lane mask; arithmetic in unsigned lanes (wrapping).
  template <class VK, class VU> VK enc_v(VU x) const {
    const VU nat = (VU)(x == uint64_t(INT64_MIN));
    VU k = desc ? ~x : x;
    k = k - uint64_t(!desc && !first) + uint64_t(desc && first);
    return (VK)((k & ~nat) | (uint64_t(nat_key) & nat));
  }
  template <class VK, class VU> VU dec_v(VK kk) const {
    const VU nat = (VU)(kk == nat_key);
    VU u = (VU)kk;
    u = u + uint64_t(!desc && !first) - uint64_t(desc && first);
    if (desc) u = ~u;
    return (u & ~nat) | (uint64_t(INT64_MIN) & nat);
  }
};

// The bit patterns k[0..n) of floats, sorted as signed integers: how many are negative (a
// prefix ascending, a suffix descending), by binary search.
template <class K> size_t negative_count(const K *k, size_t n, bool desc) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if ((k[mid] < 0) != desc) lo = mid + 1;
    else hi = mid;
  }
  return desc ? n - lo : lo;
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
