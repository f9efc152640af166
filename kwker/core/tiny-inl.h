// Tiny inputs (2..8 keys): fixed optimal comparator networks on scalars, branch-free. Below a
// vector's width a vector network pays for a whole register of padding and for a store-to-load
// forwarding stall on the partial vector; these pay only for their comparators.
// (Comparator lists: the known optimal networks for 2..8 inputs, Knuth TAOCP vol. 3, 5.3.4.)
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/engine_ns-inl.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

struct Comparator {
  uint8_t a, b;
};
constexpr Comparator kNet2[] = {{0, 1}};
constexpr Comparator kNet3[] = {{0, 2}, {0, 1}, {1, 2}};
constexpr Comparator kNet4[] = {{0, 2}, {1, 3}, {0, 1}, {2, 3}, {1, 2}};
constexpr Comparator kNet5[] = {{0, 3}, {1, 4}, {0, 2}, {1, 3}, {0, 1},
                                {2, 4}, {1, 2}, {3, 4}, {2, 3}};
constexpr Comparator kNet6[] = {{0, 5}, {1, 3}, {2, 4}, {1, 2}, {3, 4}, {0, 3},
                                {2, 5}, {0, 1}, {2, 3}, {4, 5}, {1, 2}, {3, 4}};
constexpr Comparator kNet7[] = {{0, 6}, {2, 3}, {4, 5}, {0, 2}, {1, 4}, {3, 6}, {0, 1}, {2, 5},
                                {3, 4}, {1, 2}, {4, 6}, {2, 3}, {4, 5}, {1, 2}, {3, 4}, {5, 6}};
constexpr Comparator kNet8[] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6},
                                {3, 7}, {0, 1}, {2, 3}, {4, 5}, {6, 7}, {2, 4}, {3, 5},
                                {1, 4}, {3, 6}, {1, 2}, {3, 4}, {5, 6}};
constexpr size_t kTinyMax = 8;

// Plain keys: min to the lower position. Written with selects so that it compiles to
// conditional moves or min/max.
struct TinyKeyCx {
  template <class K> inline __attribute__((always_inline)) void operator()(K &a, K &b) const {
    const K lo = b < a ? b : a, hi = b < a ? a : b;
    a = lo;
    b = hi;
  }
};

template <size_t N, class K, class Cx>
inline __attribute__((always_inline)) void run_net(const Comparator (&net)[N], K *k, Cx cx) {
#pragma GCC unroll 32
  for (size_t i = 0; i < N; ++i) cx(k[net[i].a], k[net[i].b]);
}

// Sorts k[0..n), n <= kTinyMax, with cx as the compare-exchange.
template <class K, class Cx = TinyKeyCx>
inline void tiny_sort(K *k, size_t n, Cx cx = Cx()) {
  switch (n) {
    case 2: run_net(kNet2, k, cx); break;
    case 3: run_net(kNet3, k, cx); break;
    case 4: run_net(kNet4, k, cx); break;
    case 5: run_net(kNet5, k, cx); break;
    case 6: run_net(kNet6, k, cx); break;
    case 7: run_net(kNet7, k, cx); break;
    case 8: run_net(kNet8, k, cx); break;
    default: break;
  }
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
