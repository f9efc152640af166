// Sharing the CPUs with other Kwker processes of the same user (web-server workers, two copies of
// a job): each parallel call takes its fair share of the thread budget among the processes that
// are in a parallel call at the same moment, so N processes do not run N x budget threads on the
// budget's CPUs. Compiled once (no ISA flags). See cpu_share.cc and docs/runtime-controls.md.
#ifndef KWKER_RUNTIME_CPU_SHARE_H_
#define KWKER_RUNTIME_CPU_SHARE_H_
#include <cstdint>

namespace kwker {
namespace rt {

// A parallel call of this process, from its start to its end (RAII). begin(threads) marks the
// process busy in the shared table and returns the threads the call should use: `threads`,
// or fewer where other Kwker processes on the same CPUs are busy too (never below 1). Calls
// asked for one thread, or made while sharing is off, change nothing and mark nothing.
class SharedCall {
 public:
  SharedCall() = default;
  ~SharedCall();
  int begin(int threads, int budget);
  SharedCall(const SharedCall &) = delete;
  SharedCall &operator=(const SharedCall &) = delete;

 private:
  bool marked_ = false;
};

// For runtime_info: "on", "off" (KWKER_CPU_SHARE=0) or "unavailable: <why>"; calls whose
// threads the other processes reduced; the other busy processes the last reduced call saw.
const char *cpu_share_state();
int64_t shared_reductions();
int cpu_share_peers();

}  // namespace rt
}  // namespace kwker
#endif
