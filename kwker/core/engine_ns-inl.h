// Core headers are compiled once per engine, each time with its own ISA flags. Every inline
// function and template they define lives in kwker::KWKER_ENGINE_NS so that the linker can never
// merge an AVX-512 instantiation into the portable engine (an ODR trap that would crash old CPUs).
// For the same reason core code instantiates no std:: algorithm or container on primitive types.
#ifndef KWKER_ENGINE_NS
#error "core/*-inl.h must be compiled through engines/<name>/engine.cc, which defines KWKER_ENGINE_NS"
#endif
