// Scratch memory for sorts that need a buffer. Released buffers are cached (default 1 GiB) so
// repeated large calls do not page-fault; a limit caps what one call may hold (0 = none, which
// makes every algorithm choose its in-place variant).
#ifndef KWKER_RUNTIME_SCRATCH_H_
#define KWKER_RUNTIME_SCRATCH_H_
#include <cstddef>
#include <cstdint>

namespace kwker {
namespace rt {

// Returns nullptr when the limit forbids it or memory is exhausted: callers fall back to an
// in-place algorithm, never fail.
void *scratch_acquire(size_t bytes);
void scratch_release(void *p, size_t bytes);

void scratch_set_cache_limit(int64_t bytes);
void scratch_release_all();
void scratch_set_limit(int64_t bytes);  // -1 unlimited
int64_t scratch_limit();
int64_t scratch_cache_limit();
int64_t scratch_cached_bytes();
int64_t scratch_in_use_bytes();

}  // namespace rt
}  // namespace kwker
#endif
