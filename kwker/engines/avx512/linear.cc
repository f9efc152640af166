// The "avx512" engine's linear kernels (core/linear-inl.h) with this engine's ISA flags.
#include "core/linear-inl.h"

namespace kwker {
const LinearTable &linear_avx512() { return KWKER_ENGINE_NS::lin::make_linear_table("avx512"); }
}  // namespace kwker
