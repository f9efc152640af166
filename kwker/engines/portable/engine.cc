// The "portable" engine: the whole core compiled with this engine's ISA flags (see CMakeLists.txt).
#include "core/driver-inl.h"

namespace kwker {
const EngineTable &engine_portable() { return KWKER_ENGINE_NS::make_table("portable"); }
}  // namespace kwker
