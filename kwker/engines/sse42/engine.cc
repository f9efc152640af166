// The "sse4.2" engine: the whole core compiled with this engine's ISA flags (see CMakeLists.txt).
#include "core/driver-inl.h"

namespace kwker {
const EngineTable &engine_sse42() { return KWKER_ENGINE_NS::make_table("sse4.2"); }
}  // namespace kwker
