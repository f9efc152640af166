#include "dispatch/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kwker/kwker.h"

namespace kwker {
namespace ref {
namespace {

struct Val {
  bool nan;
  bool neg_zero;
  long double v;  // exact for every integer dtype (64-bit mantissa) and every float
};

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    float f = std::ldexp(float(man), -24);
    return sign ? -f : f;
  }
  if (exp == 31) return man ? NAN : (sign ? -INFINITY : INFINITY);
  uint32_t bits = sign | ((exp + 112) << 23) | (man << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

Val load(int dtype, const uint8_t *p) {
  Val r{false, false, 0};
  auto from_double = [&](double d) {
    r.nan = std::isnan(d);
    r.neg_zero = d == 0 && std::signbit(d);
    r.v = r.nan ? 0 : (long double)d;
  };
  switch (dtype) {
    case KWKER_BOOL: r.v = *p != 0; break;
    case KWKER_INT8: r.v = *(const int8_t *)p; break;
    case KWKER_INT16: { int16_t x; std::memcpy(&x, p, 2); r.v = x; break; }
    case KWKER_INT32: { int32_t x; std::memcpy(&x, p, 4); r.v = x; break; }
    case KWKER_INT64: { int64_t x; std::memcpy(&x, p, 8); r.v = x; break; }
    case KWKER_UINT8: r.v = *p; break;
    case KWKER_UINT16: { uint16_t x; std::memcpy(&x, p, 2); r.v = x; break; }
    case KWKER_UINT32: { uint32_t x; std::memcpy(&x, p, 4); r.v = x; break; }
    case KWKER_UINT64: { uint64_t x; std::memcpy(&x, p, 8); r.v = x; break; }
    case KWKER_FLOAT16: { uint16_t x; std::memcpy(&x, p, 2); from_double(half_to_float(x)); break; }
    case KWKER_BFLOAT16: {
      uint16_t x; std::memcpy(&x, p, 2);
      uint32_t bits = uint32_t(x) << 16; float f; std::memcpy(&f, &bits, 4);
      from_double(f); break;
    }
    case KWKER_FLOAT32: { float x; std::memcpy(&x, p, 4); from_double(x); break; }
    case KWKER_FLOAT64: { double x; std::memcpy(&x, p, 8); from_double(x); break; }
    case KWKER_DATETIME: {
      int64_t x; std::memcpy(&x, p, 8);
      r.nan = x == INT64_MIN;
      r.v = r.nan ? 0 : x;
      break;
    }
  }
  return r;
}

// Strict weak order of the documented semantics.
struct Order {
  bool desc, nans_first, for_sort;
  bool operator()(const Val &a, const Val &b) const {
    if (a.nan != b.nan) return nans_first ? a.nan : b.nan;
    if (a.nan) return false;
    if (a.v != b.v) return desc ? a.v > b.v : a.v < b.v;
    if (for_sort && a.neg_zero != b.neg_zero) return desc ? b.neg_zero : a.neg_zero;
    return false;
  }
};

std::vector<Val> load_all(int dtype, const void *src, int64_t n) {
  std::vector<Val> v((size_t)(n));
  int w = dtype_size(dtype);
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = load(dtype, (const uint8_t *)src + i * w);
  return v;
}

void stable_order(int dtype, const void *src, int64_t n, unsigned flags, bool for_sort,
                  int64_t *out) {
  std::vector<Val> v = load_all(dtype, src, n);
  std::iota(out, out + n, int64_t(0));
  // KWKER_NAN_LARGEST (torch's order): NaN is the largest value, first when descending.
  const bool desc = (flags & KWKER_DESCENDING) != 0;
  const bool nans_first = (flags & KWKER_NAN_LARGEST) ? desc : (flags & KWKER_NANS_FIRST) != 0;
  Order less{desc, nans_first, for_sort};
  std::stable_sort(out, out + n, [&](int64_t a, int64_t b) { return less(v[a], v[b]); });
}

uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void put(int dtype, uint8_t *p, uint64_t bits) {
  int w = dtype_size(dtype);
  if (dtype == KWKER_BOOL) bits &= 1;
  std::memcpy(p, &bits, size_t(w));
}

uint64_t nan_bits(int dtype, uint64_t r) {
  switch (dtype) {
    case KWKER_FLOAT16: return 0x7C01 | (r & 0x83FF);       // random payload and sign
    case KWKER_BFLOAT16: return 0x7F81 | (r & 0x807F);
    case KWKER_FLOAT32: return 0x7F800001u | (r & 0x807FFFFFu);
    case KWKER_FLOAT64: return 0x7FF0000000000001ull | (r & 0x800FFFFFFFFFFFFFull);
    case KWKER_DATETIME: return uint64_t(INT64_MIN);
    default: return r;
  }
}

// Interesting values of each dtype: zeros of both signs, infinities, subnormals, extremes.
std::vector<uint64_t> specials(int dtype) {
  switch (dtype) {
    case KWKER_FLOAT16: return {0, 0x8000, 0x7C00, 0xFC00, 1, 0x8001, 0x3C00, 0xBC00, 0x7BFF, 0x7E00};
    case KWKER_BFLOAT16: return {0, 0x8000, 0x7F80, 0xFF80, 1, 0x8001, 0x3F80, 0xBF80, 0x7FC0};
    case KWKER_FLOAT32:
      return {0, 0x80000000u, 0x7F800000u, 0xFF800000u, 1, 0x80000001u, 0x3F800000u,
              0xBF800000u, 0x7F7FFFFFu, 0x7FC00000u, 0xFFC00000u};
    case KWKER_FLOAT64:
      return {0, 0x8000000000000000ull, 0x7FF0000000000000ull, 0xFFF0000000000000ull, 1,
              0x8000000000000001ull, 0x3FF0000000000000ull, 0x7FF8000000000000ull};
    case KWKER_DATETIME:
      return {uint64_t(INT64_MIN), uint64_t(INT64_MIN + 1), uint64_t(INT64_MAX), 0, 1,
              uint64_t(-1)};
    default: {
      int w = dtype_size(dtype) * 8;
      uint64_t top = w == 64 ? ~0ull : ((1ull << w) - 1);
      return {0, 1, top, top >> 1, (top >> 1) + 1, 2};
    }
  }
}

}  // namespace

int dtype_size(int dtype) {
  switch (dtype) {
    case KWKER_BOOL: case KWKER_INT8: case KWKER_UINT8: return 1;
    case KWKER_INT16: case KWKER_UINT16: case KWKER_FLOAT16: case KWKER_BFLOAT16: return 2;
    case KWKER_INT32: case KWKER_UINT32: case KWKER_FLOAT32: return 4;
    default: return 8;
  }
}

const char *dtype_name(int dtype) {
  static const char *const names[KWKER_DTYPE_COUNT] = {
      "bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
      "uint32", "uint64", "float16", "float32", "float64", "bfloat16", "datetime64"};
  return dtype >= 0 && dtype < KWKER_DTYPE_COUNT ? names[dtype] : "?";
}

bool is_float(int dtype) {
  return dtype == KWKER_FLOAT16 || dtype == KWKER_BFLOAT16 || dtype == KWKER_FLOAT32 ||
         dtype == KWKER_FLOAT64;
}

const char *dist_name(int dist) {
  static const char *const names[kNumDists] = {"uniform", "sorted", "reversed", "few-distinct",
                                               "all-equal", "nan-heavy", "specials"};
  return dist >= 0 && dist < kNumDists ? names[dist] : "?";
}

std::vector<uint8_t> generate(int dtype, int dist, int64_t n, uint64_t seed) {
  int w = dtype_size(dtype);
  std::vector<uint8_t> out((size_t)(n * w));
  uint64_t s = seed * 0x100000001B3ull + uint64_t(dtype) * 977 + uint64_t(dist) * 131 + uint64_t(n);
  std::vector<uint64_t> sp = specials(dtype);
  uint64_t few[4] = {splitmix(s), splitmix(s), splitmix(s), splitmix(s)};
  uint64_t same = splitmix(s);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = splitmix(s), bits = r;
    switch (dist) {
      case kFewDistinct: bits = few[r % 4]; break;
      case kAllEqual: bits = same; break;
      case kNanHeavy:
        if (is_float(dtype) || dtype == KWKER_DATETIME) bits = (r % 3 == 0) ? nan_bits(dtype, r >> 8) : (r >> 3);
        break;
      case kSpecials: bits = (r % 2) ? sp[(r >> 8) % sp.size()] : (r >> 1); break;
      default: break;
    }
    put(dtype, out.data() + i * w, bits);
  }
  if (dist == kSorted || dist == kReversed) {
    std::vector<uint8_t> sorted(out.size());
    sort(dtype, out.data(), sorted.data(), n, dist == kReversed ? KWKER_DESCENDING : 0);
    out.swap(sorted);
  }
  return out;
}

void sort(int dtype, const void *src, void *dst, int64_t n, unsigned flags) {
  std::vector<int64_t> order((size_t)(n));
  stable_order(dtype, src, n, flags, true, order.data());
  int w = dtype_size(dtype);
  std::vector<uint8_t> tmp((size_t)(n * w));
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(tmp.data() + i * w, (const uint8_t *)src + order[size_t(i)] * w, size_t(w));
  if (n) std::memcpy(dst, tmp.data(), tmp.size());
}

void argsort(int dtype, const void *src, int64_t n, int64_t *out, unsigned flags) {
  stable_order(dtype, src, n, flags, false, out);
}

bool values_equal(int dtype, const void *a, const void *b, int64_t n) {
  // Bit for bit: a sort is a permutation of its input, NaN payloads and order included.
  int w = dtype_size(dtype);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t *pa = (const uint8_t *)a + i * w, *pb = (const uint8_t *)b + i * w;
    if (std::memcmp(pa, pb, size_t(w)) == 0) continue;
    if (dtype == KWKER_BOOL && (*pa != 0) == (*pb != 0)) continue;
    return false;
  }
  return true;
}

}  // namespace ref
}  // namespace kwker
