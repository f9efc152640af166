// Engine selection: resolved lazily on the first call from the CPU, KWKER_ISA and set_isa.
#ifndef KWKER_DISPATCH_DISPATCH_H_
#define KWKER_DISPATCH_DISPATCH_H_
#include <string>

#include "core/engine.h"

namespace kwker {

enum EngineId { kPortable = 0, kSse42 = 1, kAvx2 = 2, kAvx512 = 3, kNumEngines = 4 };

// Whether dispatch may pick avx512 by default (true once its native and Python tests passed on
// a real AVX-512 CPU; the record is docs/avx512-validation.md). Until then it is opt-in.
extern const bool kAvx512Validated;

const char *engine_name(int id);
int engine_id(const char *name);  // -1 if unknown
const EngineTable &engine_table(int id);
bool engine_supported(int id);    // compiled in and runnable on this CPU
int best_default_engine();        // best supported, honouring the avx512 opt-in rule

struct Selection {
  int engine;
  std::string reason;
  std::string cap_value;   // "" when no cap
  std::string cap_source;  // "KWKER_ISA", "set_isa" or ""
  std::string warning;     // unknown KWKER_ISA value, "" when none
};

int current_engine();        // resolves on first use
Selection selection();       // snapshot for runtime info
// Returns a kwker_status and sets the last error on failure; name == nullptr restores the best.
int select_engine(const char *name);
std::string supported_list();  // "portable, sse4.2, avx2"

}  // namespace kwker
#endif
