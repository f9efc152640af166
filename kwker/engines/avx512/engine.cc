// The "avx512" engine: the whole core compiled with this engine's ISA flags (see CMakeLists.txt).
#include "core/driver-inl.h"

namespace kwker {
const EngineTable &engine_avx512() { return KWKER_ENGINE_NS::make_table("avx512"); }
}  // namespace kwker
