#include "runtime/scratch.h"

#include <sys/mman.h>

#include <cstdlib>
#include <mutex>
#include <vector>

namespace kwker {
namespace rt {
namespace {

struct Cache {
  std::mutex mu;
  std::vector<std::pair<void *, size_t>> free_list;
  int64_t cached = 0;
  int64_t in_use = 0;
  int64_t cache_limit = int64_t(1) << 30;
  int64_t limit = -1;
};
Cache &cache() {
  static Cache *c = new Cache();  // never destroyed: buffers may be released at exit
  return *c;
}

constexpr size_t kHeader = 64;
constexpr size_t kHugeMin = size_t(4) << 20;
constexpr size_t kHugeAlign = size_t(2) << 20;
size_t real_size(void *p) { return *reinterpret_cast<size_t *>(static_cast<char *>(p) - kHeader); }
void free_buffer(void *p) { std::free(static_cast<char *>(p) - kHeader); }

void trim_locked(Cache &c) {
  while (c.cached > c.cache_limit && !c.free_list.empty()) {
    auto [p, sz] = c.free_list.back();
    c.free_list.pop_back();
    c.cached -= int64_t(sz);
    free_buffer(p);
  }
}

}  // namespace

void *scratch_acquire(size_t bytes) {
  if (bytes == 0) bytes = 64;
  Cache &c = cache();
  std::lock_guard<std::mutex> lk(c.mu);
  if (c.limit >= 0 && c.in_use + int64_t(bytes) > c.limit) return nullptr;
  // Best fit among cached buffers, so one huge buffer is not pinned by a tiny call.
  size_t best = SIZE_MAX;
  size_t best_i = 0;
  for (size_t i = 0; i < c.free_list.size(); ++i) {
    size_t sz = c.free_list[i].second;
    if (sz >= bytes && sz < best) best = sz, best_i = i;
  }
  if (best != SIZE_MAX && best <= 2 * bytes + (1 << 20)) {
    void *p = c.free_list[best_i].first;
    c.free_list.erase(c.free_list.begin() + long(best_i));
    c.cached -= int64_t(best);
    c.in_use += int64_t(best);
    return p;
  }
  size_t rounded = (bytes + 4095) & ~size_t(4095);
  // A 64-byte header before the buffer records its real size, so a cached buffer handed to a
  // smaller request is still accounted (and reused) at its full size.
  // Large buffers ask for transparent huge pages: on VMs a 4 KiB page fault can cost
  // microseconds, which would dominate the first large sort (later calls reuse the cache).
  const bool huge = rounded >= kHugeMin;
  size_t total = rounded + kHeader;
  if (huge) total = (total + kHugeAlign - 1) & ~(kHugeAlign - 1);
  char *raw = static_cast<char *>(std::aligned_alloc(huge ? kHugeAlign : 64, total));
  if (!raw) return nullptr;
  if (huge) madvise(raw, total, MADV_HUGEPAGE);  // advice only: failure changes nothing
  *reinterpret_cast<size_t *>(raw) = rounded;
  c.in_use += int64_t(rounded);
  return raw + kHeader;
}

void scratch_release(void *p, size_t) {
  if (!p) return;
  Cache &c = cache();
  std::lock_guard<std::mutex> lk(c.mu);
  size_t rounded = real_size(p);
  c.in_use -= int64_t(rounded);
  if (c.in_use < 0) c.in_use = 0;
  if (c.cached + int64_t(rounded) <= c.cache_limit) {
    c.free_list.emplace_back(p, rounded);
    c.cached += int64_t(rounded);
  } else {
    free_buffer(p);
  }
}

void scratch_set_cache_limit(int64_t bytes) {
  Cache &c = cache();
  std::lock_guard<std::mutex> lk(c.mu);
  c.cache_limit = bytes < 0 ? 0 : bytes;
  trim_locked(c);
}
void scratch_release_all() {
  Cache &c = cache();
  std::lock_guard<std::mutex> lk(c.mu);
  for (auto &e : c.free_list) free_buffer(e.first);
  c.free_list.clear();
  c.cached = 0;
}
void scratch_set_limit(int64_t bytes) {
  Cache &c = cache();
  std::lock_guard<std::mutex> lk(c.mu);
  c.limit = bytes < 0 ? -1 : bytes;
}
int64_t scratch_limit() { return cache().limit; }
int64_t scratch_cache_limit() { return cache().cache_limit; }
int64_t scratch_cached_bytes() { return cache().cached; }
int64_t scratch_in_use_bytes() { return cache().in_use; }

}  // namespace rt
}  // namespace kwker
