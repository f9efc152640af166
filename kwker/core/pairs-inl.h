// Fused stable sort of (key, index) pairs: values AND indices in one sort, as torch.sort
// returns them. Built on the packed argsort words (pack-inl.h): the values are decoded from the
// sorted words while each finished range is still in cache, instead of being gathered through
// the indices afterwards (a gather of 1e7 random indices alone costs about 10 ns per element).
//
// A word determines its value except where the key transform merged several bit patterns into
// one key: the tie key of -0.0 and 0.0 and the NaN key (floats only). Those few positions copy
// the original element through their index, so vals[j] equals src[idx[j]] bit for bit, always.
// 64-bit keys decode only when their packing is exact (no dropped low key bits); otherwise, and
// on the paths that return indices alone (LSD radix, presorted input), the values are gathered.
//
// Included by driver-inl.h after the argsort entry points it builds on.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/engine_ns-inl.h"
#include "core/keys-inl.h"
#include "core/pack-inl.h"
#include "core/parallel-inl.h"
#include "core/radix-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

// Keys whose value the word cannot give back: the -0.0/0.0 tie key and the NaN key of a float
// codec, and every bool key (any nonzero byte is True). Integer codecs have none.
template <class Codec> struct AmbiguousKeys {
  using K = typename Codec::K;
  static constexpr bool kAll = std::is_same<Codec, BoolCodec>::value;
  K zero, nan;
  explicit AmbiguousKeys(const Codec c) {
    if constexpr (Codec::kNanPayload) {
      zero = c.enc(typename Codec::T(0));
      nan = c.nan_key;
    } else {
      zero = nan = K(0);
    }
  }
  bool any(K k) const { return kAll || (Codec::kNanPayload && (k == zero || k == nan)); }
};

// Lanes per decode step: one register of 64-bit words. Eight on AVX-512; four elsewhere, where
// GCC split vectors of eight words through the stack (store-forwarding stalls: the decode took
// 1.5 us of a 5 us sort of 1,000 float32 pairs on AVX2).
#if defined(__AVX512F__)
constexpr size_t kDecodeLanes = 8;
#else
constexpr size_t kDecodeLanes = 4;
#endif

// Decodes the keys of m packed words into values and replaces each word by its index (mask):
// key_of(word vector) gives the key lanes. Returns whether any key was ambiguous. Written with
// GCC vectors of kDecodeLanes lanes: the compiler did not vectorise the plain loop (a 64- to
// 32-bit narrowing next to the codec's masks), which doubled the time of a 1,000-element pair
// sort.
template <class Codec, class W, class KeyOf>
bool decode_words(const Codec c, W *q, typename Codec::T *v, size_t m, W mask, KeyOf key_of) {
  using K = typename Codec::K;
  using U = typename std::make_unsigned<K>::type;
  constexpr size_t L = kDecodeLanes;
  typedef W VW __attribute__((vector_size(L * sizeof(W))));
  typedef K VK __attribute__((vector_size(L * sizeof(K))));
  typedef U VU __attribute__((vector_size(L * sizeof(U))));
  const AmbiguousKeys<Codec> amb(c);
  VK hit = {};
  size_t j = 0;
  for (; j + L <= m; j += L) {
    VW w;
    memcpy(&w, q + j, sizeof w);
    const VK k = key_of(w);
    const VU val = c.template dec_v<VK, VU>(k);
    memcpy(v + j, &val, sizeof val);
    w &= mask;
    memcpy(q + j, &w, sizeof w);
    if constexpr (Codec::kNanPayload) hit |= VK((k == amb.zero) | (k == amb.nan));
  }
  bool any = false;
  for (size_t l = 0; l < L; ++l) any |= hit[l] != 0;
  for (; j < m; ++j) {
    VW w = {};
    w[0] = q[j];
    const K k = key_of(w)[0];
    v[j] = c.dec(k);
    q[j] = W(q[j] & mask);
    any |= amb.any(k);
  }
  return any;
}

// After decode_words: the positions whose value came from an ambiguous key (it decoded to the
// canonical +0.0 or NaN; a true +0.0 there is copied again, harmlessly) copy the original
// element through their index.
template <class Codec, class W>
void fix_ambiguous(const Codec c, const typename Codec::T *src, const W *idx,
                   typename Codec::T *v, size_t m) {
  const AmbiguousKeys<Codec> amb(c);
  const typename Codec::T zero = c.dec(amb.zero), nan = c.dec(amb.nan);
  for (size_t j = 0; j < m; ++j)
    if (v[j] == zero || v[j] == nan) v[j] = src[idx[j]];
}

// Finishes a sorted range of packed words W = (key << S | index): the value goes to the same
// position of vals, the index replaces the word.
template <class Codec, class W, int S> struct PairFinish {
  using T = typename Codec::T;
  using K = typename Codec::K;
  Codec c;
  const T *src;
  T *vals;
  const W *base;  // the word buffer's start: vals[p - base] belongs to word p
  void operator()(W *q, size_t m) const {
    T *v = vals + (q - base);
    constexpr W mask = W((W(1) << S) - 1);
    if constexpr (AmbiguousKeys<Codec>::kAll) {
      for (size_t j = 0; j < m; ++j) {
        q[j] = W(q[j] & mask);
        v[j] = src[q[j]];
      }
    } else {
      constexpr size_t L = kDecodeLanes;
      typedef K VK __attribute__((vector_size(L * sizeof(K))));
      auto key_of = [](const auto &w) {
        if constexpr (S == 32 && sizeof(W) == 8 && sizeof(K) == 4) {
          // The keys are the words' upper halves: the odd 32-bit lanes, picked by one shuffle
          // rather than a shift and a narrowing (no vpmovqd before AVX-512).
          typedef uint32_t V2 __attribute__((vector_size(2 * L * sizeof(uint32_t))));
          static_assert(sizeof(w) == sizeof(V2), "L 64-bit words");
          V2 x;
          memcpy(&x, &w, sizeof x);
          if constexpr (L == 8)
            return VK(__builtin_shufflevector(x, x, 1, 3, 5, 7, 9, 11, 13, 15));
          else
            return VK(__builtin_shufflevector(x, x, 1, 3, 5, 7));
        } else {
          return __builtin_convertvector(w >> S, VK);
        }
      };
      if (decode_words(c, q, v, m, mask, key_of)) fix_ambiguous(c, src, q, v, m);
    }
  }
};

// The same for exactly packed 64-bit keys (Pack64 with drop == 0): key = (word >> B) + base.
template <class Codec> struct PairFinish64 {
  using T = typename Codec::T;
  using K = typename Codec::K;
  Codec c;
  const T *src;
  T *vals;
  const int64_t *base;
  Pack64 p;
  void operator()(int64_t *q, size_t m) const {
    T *v = vals + (q - base);
    constexpr size_t L = kDecodeLanes;
    typedef uint64_t VU64 __attribute__((vector_size(L * sizeof(uint64_t))));
    typedef K VK __attribute__((vector_size(L * sizeof(K))));
    const int B = p.B;
    const uint64_t lo = p.base;
    auto keys = [B, lo](const auto &w) {
      return VK((((VU64(w) ^ kSign64) >> B) + lo) ^ kSign64);
    };
    if (decode_words(c, q, v, m, p.index_mask(), keys)) fix_ambiguous(c, src, q, v, m);
  }
};

// vals[j] = src[idx[j]], split over the threads for large inputs.
template <class T>
void gather_values(CallCtx &ctx, const T *src, const int64_t *idx, T *vals, size_t n) {
  // A random-access gather (~1-2 ns per element), so the sort's own threshold, not a pass's.
  const int parts = want_parallel(ctx, n) ? (ctx.threads < kMaxBuckets ? ctx.threads : kMaxBuckets) : 1;
  auto task = [&](int t) {
    for (size_t j = chunk_begin(n, parts, t), e = chunk_begin(n, parts, t + 1); j < e; ++j)
      vals[j] = src[idx[j]];
  };
  parallel_tasks(ctx, parts, task);
}

// Stable counting sort of pairs for 8-bit keys: each element is scattered once, value
// and index together. Returns false when scratch is refused.
template <class Codec>
bool counting_pairs(const Codec c, const typename Codec::T *src, size_t n,
                    typename Codec::T *vals, int64_t *idx) {
  static_assert(sizeof(typename Codec::K) == 1, "8-bit keys (16-bit: radix16_argsort)");
  if constexpr (std::is_same<Codec, BoolCodec>::value) {
    bool_scatter(c, src, n, vals, idx);
    return true;
  }
  KeyCounts<Codec> counts(c, src, n);
  if (!counts) return false;
  size_t *start = counts.cnt.ptr;
  bucket_thread_offsets(start, KeyCounts<Codec>::kBuckets, 1);
  for_each_counter(c, src, 0, n, start, [&](size_t i, size_t &slot) {
    const size_t d = slot++;
    vals[d] = src[i];
    idx[d] = int64_t(i);
  });
  return true;
}

// Sorts the packed words pack(i) of n keys in the index buffer, each finished range handed to
// fin (decode and unpack): the sample partition sort for large inputs, else in one piece.
template <class Pack, class Fin>
void sort_packed_words(CallCtx &ctx, size_t n, Pack pack, int64_t *idx, const Fin &fin) {
  if (want_partition_sort(ctx, n, true)) {
    auto bucket = [&](int64_t *q, size_t, size_t len) { seq_sort_keys(q, len, fin); };
    sample_partition_sort<int64_t>(ctx, n, pack, idx, KeySorter(), bucket);
    return;
  }
  for (size_t i = 0; i < n; ++i) idx[i] = pack(i);
  seq_sort_keys(idx, n, fin);
}

// Keys of up to 32 bits: packed (key << 32 | index) words.
template <class Codec>
void sort_pairs_packed32(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
                         typename Codec::T *vals, int64_t *idx) {
  auto pack = [c, src](size_t i) { return pack32(c.enc(src[i]), i); };
  sort_packed_words(ctx, n, pack, idx, PairFinish<Codec, int64_t, 32>{c, src, vals, idx});
}

// 64-bit keys: exact packing decodes in cache; otherwise (or with the LSD radix) the stable
// argsort is followed by a gather.
template <class Codec>
void sort_pairs_64(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
                   typename Codec::T *vals, int64_t *idx) {
  uint64_t lo, hi;
  key_range64_all(ctx, c, src, n, lo, hi);
  const Pack64 p = make_pack64(lo, hi, n);
  if (p.drop || radix64_argsort_wanted(ctx, n, hi - lo)) {
    argsort_packed64(ctx, c, src, n, idx);
    gather_values(ctx, src, idx, vals, n);
    return;
  }
  auto pack = [c, src, p](size_t i) { return p.pack(c.enc(src[i]), i); };
  sort_packed_words(ctx, n, pack, idx, PairFinish64<Codec>{c, src, vals, idx, p});
}

// Stable sort of src[0..n): vals[j] = src[idx[j]] with idx the stable argsort. vals may be
// null (indices only).
template <class Codec>
void sort_pairs_impl(CallCtx &ctx, const Codec c, const typename Codec::T *src, size_t n,
                     typename Codec::T *vals, int64_t *idx) {
  using T = typename Codec::T;
  using K = typename Codec::K;
  if (!vals) {
    argsort_impl(ctx, c, src, n, idx);
    return;
  }
  auto argsort_then_gather = [&] {
    argsort_impl(ctx, c, src, n, idx);
    gather_values(ctx, src, idx, vals, n);
  };
  if (n <= short_argsort_limit<Codec>()) {  // in registers; the gather hits the cache
    argsort_short(c, src, n, idx);
    for (size_t j = 0; j < n; ++j) vals[j] = src[idx[j]];
    return;
  }
  // Presorted input: argsort_impl's O(n) path, and the gather then reads src in order.
  if (on(ctx, KWKER_ALGO_PRESORTED) && n >= knob(tune::kPresortedMin) && presorted(ctx, c, src, n)) {
    argsort_then_gather();
    return;
  }
  if constexpr (sizeof(K) == 1)
    if (on(ctx, KWKER_ALGO_RADIX) && counting_scatter_parallel(ctx, c, src, n, vals, idx))
      return;
  if constexpr (sizeof(K) <= 2) {
    if (on(ctx, KWKER_ALGO_RADIX)) {
      if constexpr (sizeof(K) == 1) {
        if (counting_pairs(c, src, n, vals, idx)) return;
      } else if (n >= knob(tune::kCount16ArgsortMin)) {
        if (radix16_argsort(ctx, c, src, n, vals, idx)) return;
      }
    }
    if (n <= (size_t(1) << 16)) {
      SmallBuffer<int32_t, 4096> packed(n);
      if (packed) {
        int32_t *w = packed.ptr;
        pack16_words(c, src, n, w);
        const PairFinish<Codec, int32_t, 16> fin{c, src, vals, w};
        seq_sort_keys(w, n, fin);
        for (size_t j = 0; j < n; ++j) idx[j] = int64_t(w[j]);
        return;
      }
    }
  }
  if constexpr (sizeof(K) == 4 && !Codec::kNanPayload)
    if (radix32_pairs_wanted(ctx, n) && radix_pairs32(ctx, c, src, n, vals, idx)) return;
  if constexpr (sizeof(K) == 4)
    if (argsort_words32_fits(ctx, n) && argsort_via_words32(c, src, n, idx, vals)) return;
  if constexpr (sizeof(K) <= 4) {
    if (n < (size_t(1) << 32)) {
      sort_pairs_packed32(ctx, c, src, n, vals, idx);
      return;
    }
  } else {
    if (n < (size_t(1) << 32)) {
      sort_pairs_64(ctx, c, src, n, vals, idx);
      return;
    }
  }
  (void)sizeof(T);
  argsort_then_gather();
}

// Every row or segment; indices relative to the segment's start.
inline int e_sort_pairs_segments(CallCtx &ctx, int dtype, const void *src, void *vals,
                                 int64_t *idx, const Segments &segs, unsigned flags) {
  return with_codec(dtype, flags, false, [&](auto c) {
    using T = typename decltype(c)::T;
    const T *s = static_cast<const T *>(src);
    T *v = static_cast<T *>(vals);
    if (v && try_argsort_rows_lanes(ctx, c, s, segs, idx, true)) {
      const size_t n = size_t(segs.count * segs.row_len), len = size_t(segs.row_len);
      for (size_t j = 0; j < n; ++j) v[j] = s[(j / len) * len + size_t(idx[j])];
      return;
    }
    for_segments(ctx, segs, [&](CallCtx &sub, int64_t i) {
      const int64_t b = segs.begin(i);
      sort_pairs_impl(sub, c, s + b, size_t(segs.end(i) - b), v ? v + b : nullptr, idx + b);
    });
  });
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
