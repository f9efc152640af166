// Short inputs: whole arrays, rows and segments of up to a few hundred keys. They are sorted
// in registers by the bitonic networks with no per-call setup (no presorted probe, no scratch,
// no thread pool), which is what makes many short rows in one call cheap.
//
// Values: keys are encoded into a stack buffer (8/16-bit keys widen to 32 bits), sorted by the
// network and decoded into the output.
// Stable argsort: each key and its index are packed into one integer so that the network (or
// the quicksort, for longer inputs) gives the stable order directly; see pack-inl.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/engine_ns-inl.h"
#include "core/coded-inl.h"
#include "core/keys-inl.h"
#include "core/network-inl.h"
#include "core/pack-inl.h"
#include "core/scalar-inl.h"
#include "core/tiny-inl.h"
#include "core/tuning-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

// The integer the network sorts for a key type: 8-bit keys widen to 16 bits (the engines have
// no 8-bit network).
template <class K> struct NetKeyOf { using type = K; };
template <> struct NetKeyOf<int8_t> { using type = int16_t; };

// Keys one network call sorts on this engine (W lanes x kMaxVecs registers).
template <class NK> constexpr size_t net_capacity() {
  return vq::Ops<NK>::W * vq::Ops<NK>::kMaxVecs;
}

// Keys one network call sorts for this codec (the two-network merge of coded-inl.h doubles it).
template <class Codec> constexpr size_t short_network_capacity() {
  return net_capacity<typename NetKeyOf<typename Codec::K>::type>();
}

// Puts the input's own NaN bit patterns into the NaN block of a short sorted output, in input
// order (the network wrote the canonical NaN there). Free when the output holds no NaN.
template <class Codec>
void restore_nans_short(const Codec c, const typename Codec::T *src, typename Codec::T *dst,
                        size_t n) {
  if (n == 0 || !c.is_nan(c.nans_first() ? dst[0] : dst[n - 1])) return;
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) count += c.is_nan(src[i]);
  size_t j = c.nans_first() ? 0 : n - count;
  for (size_t i = 0; i < n; ++i)
    if (c.is_nan(src[i])) dst[j++] = src[i];
}

// In place: moves the NaNs of a[0..n), which holds `count` of them, to their final block,
// keeping their order; returns count.
template <class Codec>
size_t move_nans(const Codec c, typename Codec::T *a, size_t n, size_t count) {
  if (count == 0) return 0;
  count = 0;
  if (c.nans_first()) {
    for (size_t i = 0; i < n; ++i)
      if (c.is_nan(a[i])) swap_vals(a[i], a[count++]);
  } else {
    size_t j = n;
    for (size_t i = n; i-- > 0;)
      if (c.is_nan(a[i])) swap_vals(a[i], a[--j]);
    count = n - j;
  }
  return count;
}

// In place: moves the NaNs to their final block, keeping their order; returns their count.
template <class Codec> size_t gather_nans(const Codec c, typename Codec::T *a, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) count += c.is_nan(a[i]);  // vectorised; the common answer is 0
  return move_nans(c, a, n, count);
}

// dst = src with the NaNs moved to their final block (see gather_nans): the copy counts them
// on the way, which saves the counting pass over dst (rows of 1,000 float32: 4% of the time).
template <class Codec>
size_t copy_gather_nans(const Codec c, const typename Codec::T *src, typename Codec::T *dst,
                        size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {  // vectorised
    dst[i] = src[i];
    count += c.is_nan(src[i]);
  }
  return move_nans(c, dst, n, count);
}

// Sorted copy of n <= net_capacity values through a stack buffer (dst may equal src).
template <class Codec>
void sort_short_net(const Codec c, const typename Codec::T *src, typename Codec::T *dst,
                    size_t n) {
  using K = typename Codec::K;
  using NK = typename NetKeyOf<K>::type;
  constexpr size_t kCap = net_capacity<NK>();
  if (n < 2) {
    if (n == 1) dst[0] = src[0];
    return;
  }
  alignas(64) NK buf[kCap];
  for (size_t i = 0; i < n; ++i) buf[i] = NK(c.enc(src[i]));
  if (n <= kTinyMax && n <= size_t(tuned(tune::kSortTinyMax))) tiny_sort(buf, n);
  else vq::small_sort<vq::Ops<NK>>(buf, n);
  if constexpr (Codec::kNanPayload) {
    // Decoding writes the canonical NaN; the input's own NaN patterns go back afterwards.
    for (size_t i = 0; i < n; ++i) dst[i] = c.dec(K(buf[i]));
    restore_nans_short(c, src, dst, n);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = c.dec(K(buf[i]));
  }
}

// Sorted copy of n values (dst may equal src), n <= short_network_capacity<Codec>(), or up to
// twice that for the codecs that sort in registers: scalar networks
// for a few keys, else in registers (coded-inl.h) or through a buffer.
template <class Codec>
void sort_short_any(const Codec c, const typename Codec::T *src, typename Codec::T *dst,
                    size_t n) {
  if constexpr (coded_ok<Codec>()) {
    if (n > kTinyMax || n > size_t(tuned(tune::kSortTinyMax))) {
      const bool as_floats = sort_coded(c, src, dst, n);
      if constexpr (Codec::kNanPayload)
        if (!as_floats) restore_nans_short(c, src, dst, n);
      return;
    }
  }
  sort_short_net(c, src, dst, n);
}

template <class Codec>
void sort_short(const Codec c, const typename Codec::T *src, typename Codec::T *dst, size_t n) {
  if (n < 2) {
    if (n == 1) dst[0] = src[0];
    return;
  }
  if constexpr (Codec::kNanPayload) {
    // In place the input's NaN patterns would be overwritten before they could be restored:
    // move them to their block first, then sort the rest.
    if (dst == src) {
      const size_t nans = gather_nans(c, dst, n);
      if (nans) {
        auto *rest = c.nans_first() ? dst + nans : dst;
        sort_short_any(c, rest, rest, n - nans);
        return;
      }
    }
  }
  sort_short_any(c, src, dst, n);
}

// Stable argsort of n <= short_argsort_capacity<Codec>() keys, in registers.
template <class Codec> constexpr size_t short_argsort_capacity() {
  return sizeof(typename Codec::K) <= 2 ? net_capacity<int32_t>() : net_capacity<int64_t>();
}

template <class Codec>
void argsort_tiny(const Codec c, const typename Codec::T *src, size_t n, int64_t *out) {
  using K = typename Codec::K;
  int64_t w[kTinyMax];
  if constexpr (sizeof(K) <= 4) {
    for (size_t i = 0; i < n; ++i) w[i] = pack32(c.enc(src[i]), i);
    tiny_sort(w, n);
    for (size_t i = 0; i < n; ++i) out[i] = w[i] & int64_t(0xFFFFFFFF);
  } else {
    const Pack64 p = plan_pack64_seq(c, src, n);
    for (size_t i = 0; i < n; ++i) w[i] = p.pack(c.enc(src[i]), i);
    tiny_sort(w, n);
    if (p.drop) fix_dropped_bits(c, src, p, w, n);
    const int64_t mask = p.index_mask();
    for (size_t i = 0; i < n; ++i) out[i] = w[i] & mask;
  }
}

template <class Codec>
void argsort_short(const Codec c, const typename Codec::T *src, size_t n, int64_t *out) {
  using K = typename Codec::K;
  if (n < 2) {
    if (n == 1) out[0] = 0;
    return;
  }
  if (n <= size_t(tuned(tune::kArgsortTinyMax)) && n <= kTinyMax) {
    argsort_tiny(c, src, n, out);
    return;
  }
  if constexpr (sizeof(K) <= 2) {
    // (key << 16 | index) in 32 bits: twice the lanes of the 64-bit packing.
    constexpr size_t kCap = net_capacity<int32_t>();
    alignas(64) int32_t buf[kCap];
    for (size_t i = 0; i < n; ++i)  // (pack16_words measured 2-3% slower on these short rows)
      buf[i] = int32_t((uint32_t(int32_t(c.enc(src[i]))) << 16) | uint32_t(i));
    vq::small_sort<vq::Ops<int32_t>>(buf, n);
    for (size_t i = 0; i < n; ++i) out[i] = int64_t(buf[i] & 0xFFFF);
  } else if constexpr (sizeof(K) == 4) {
    for (size_t i = 0; i < n; ++i) out[i] = pack32(c.enc(src[i]), i);
    vq::small_sort<vq::Ops<int64_t>>(out, n);
    for (size_t i = 0; i < n; ++i) out[i] &= int64_t(0xFFFFFFFF);
  } else {
    const Pack64 p = plan_pack64_seq(c, src, n);
    for (size_t i = 0; i < n; ++i) out[i] = p.pack(c.enc(src[i]), i);
    vq::small_sort<vq::Ops<int64_t>>(out, n);
    if (p.drop) fix_dropped_bits(c, src, p, out, n);
    const int64_t mask = p.index_mask();
    for (size_t i = 0; i < n; ++i) out[i] &= mask;
  }
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
