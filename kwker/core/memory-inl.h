// Memory helpers every engine's code shares: a call's scratch buffer from the runtime cache,
// and software prefetch of a stream ahead of where a loop reads it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/engine_ns-inl.h"
#include "runtime/scratch.h"

namespace kwker {
namespace KWKER_ENGINE_NS {

// Scratch buffer owned by one call; released (to the cache) on every path out.
template <class T> struct Scratch {
  T *ptr = nullptr;
  size_t bytes = 0;
  explicit Scratch(size_t count) : bytes(count * sizeof(T)) {
    ptr = static_cast<T *>(rt::scratch_acquire(bytes));
  }
  ~Scratch() { rt::scratch_release(ptr, bytes); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  explicit operator bool() const { return ptr != nullptr; }
};

// Asks for the cache lines of [p + kAhead, p + kAhead + bytes): for loops that consume a stream
// faster than one core's hardware prefetchers bring it in. once: the stream is read once and
// not again soon (a decode step's weights at one row), so it is asked for as non-temporal
// (prefetchnta) and does not push out of the caches what the caller works on between calls.
// Speed only.
template <int64_t kAhead>
inline void prefetch_ahead(const void *p, int64_t bytes, bool once = false) {
  if (kAhead <= 0) return;
  const char *c = static_cast<const char *>(p) + kAhead;
  if (once) {
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b, 0, 0);
  } else {
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b, 0, 3);
  }
}

}  // namespace KWKER_ENGINE_NS
}  // namespace kwker
