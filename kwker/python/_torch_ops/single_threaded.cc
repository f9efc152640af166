// Compiled into the operators only when they link against a glibc older than 2.32 (CMake's
// KWKER_GLIBC). GCC 12's libstdc++ headers read glibc 2.32's __libc_single_threaded to skip
// atomic reference counts (shared_ptr, strings) in a process without threads; that symbol would
// make the library need glibc 2.32. This hidden copy, never set, says "there may be threads":
// every count stays atomic, which is correct on every glibc, only never skipped.
#include <sys/single_threaded.h>

extern "C" {
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
}
