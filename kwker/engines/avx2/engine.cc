// The "avx2" engine: the whole core compiled with this engine's ISA flags (see CMakeLists.txt).
#include "core/driver-inl.h"

namespace kwker {
const EngineTable &engine_avx2() { return KWKER_ENGINE_NS::make_table("avx2"); }
}  // namespace kwker
