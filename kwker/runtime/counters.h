// Per-engine call counters: the proof (for tests and doctor) that the requested engine and
// thread count really ran.
#ifndef KWKER_RUNTIME_COUNTERS_H_
#define KWKER_RUNTIME_COUNTERS_H_
#include <cstdint>

namespace kwker {
namespace rt {

enum { kEngineCount = 4 };
void counters_record(int engine, int threads_used);
int64_t counters_calls(int engine);
int counters_max_threads(int engine);
void counters_reset();

}  // namespace rt
}  // namespace kwker
#endif
