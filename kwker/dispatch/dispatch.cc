#include "dispatch/dispatch.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "capi/errors.h"
#include "dispatch/cpu.h"
#include "kwker/kwker.h"

namespace kwker {

// Validated on an AVX-512 CPU (AMD EPYC, Zen 4) on 2026-11-29: native suite and Python suite
// passed on every engine; see docs/avx512-validation.md.
const bool kAvx512Validated = true;

namespace {

const char *const kNames[kNumEngines] = {"portable", "sse4.2", "avx2", "avx512"};

std::mutex g_mu;
bool g_resolved = false;
Selection g_sel;

Selection resolve_from_env() {
  Selection s;
  int best = best_default_engine();
  s.engine = best;
  s.reason = std::string("best engine this CPU supports");
  if (best == kAvx2 && engine_supported(kAvx512) && !kAvx512Validated)
    s.reason = "avx512 is supported but opt-in until validated (set_isa('avx512') or "
               "KWKER_ISA=avx512); using avx2";
  const char *env = std::getenv("KWKER_ISA");
  if (!env || !*env) return s;
  int cap = engine_id(env);
  if (cap < 0) {
    s.warning = std::string("KWKER_ISA='") + env +
                "' is not a Kwker engine and is ignored; use one of portable, sse4.2, avx2, "
                "avx512, or unset it";
    return s;
  }
  s.cap_value = kNames[cap];
  s.cap_source = "KWKER_ISA";
  // An explicit avx512 cap is also the opt-in for an engine not yet on by default.
  int top = cap;
  while (top > 0 && !engine_supported(top)) --top;
  if (top != cap) {
    s.engine = top;
    s.reason = std::string("KWKER_ISA=") + kNames[cap] + " asks for more than this CPU runs; " +
               "clamped to " + kNames[top];
  } else {
    s.engine = cap;
    s.reason = std::string("capped by KWKER_ISA=") + kNames[cap];
  }
  return s;
}

std::atomic<int> g_current{-1};

void ensure_resolved_locked() {
  if (!g_resolved) {
    g_sel = resolve_from_env();
    g_resolved = true;
  }
  g_current.store(g_sel.engine, std::memory_order_release);
}

}  // namespace

const char *engine_name(int id) { return (id >= 0 && id < kNumEngines) ? kNames[id] : "?"; }

int engine_id(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < kNumEngines; ++i)
    if (std::strcmp(name, kNames[i]) == 0) return i;
  return -1;
}

const EngineTable &engine_table(int id) {
  switch (id) {
    case kSse42: return engine_sse42();
    case kAvx2: return engine_avx2();
    case kAvx512: return engine_avx512();
    default: return engine_portable();
  }
}

bool engine_supported(int id) {
  const CpuInfo &c = cpu_info();
  switch (id) {
    case kPortable: return true;
    case kSse42: return c.sse42 && c.popcnt;
    case kAvx2:  // F16C: the high_f16 linear kernels (every AVX2 CPU made has it)
      return c.avx2 && c.bmi1 && c.bmi2 && c.fma && c.f16c && c.lzcnt && c.sse42 && c.popcnt;
    case kAvx512:
      return engine_supported(kAvx2) && c.avx512f && c.avx512bw && c.avx512dq && c.avx512vl;
    default: return false;
  }
}

int best_default_engine() {
  for (int id = kNumEngines - 1; id > 0; --id) {
    if (id == kAvx512 && !kAvx512Validated) continue;
    if (engine_supported(id)) return id;
  }
  return kPortable;
}

std::string supported_list() {
  std::string out;
  for (int id = 0; id < kNumEngines; ++id)
    if (engine_supported(id)) out += (out.empty() ? "" : ", ") + std::string(kNames[id]);
  return out;
}

int current_engine() {
  // Lock-free after the first call: the selection changes only under g_mu, and every change
  // also publishes the engine id here.
  int id = g_current.load(std::memory_order_acquire);
  if (id >= 0) return id;
  std::lock_guard<std::mutex> lk(g_mu);
  ensure_resolved_locked();
  return g_sel.engine;
}

Selection selection() {
  std::lock_guard<std::mutex> lk(g_mu);
  ensure_resolved_locked();
  return g_sel;
}

int select_engine(const char *name) {
  std::lock_guard<std::mutex> lk(g_mu);
  ensure_resolved_locked();
  if (name == nullptr) {
    // set_isa(None): the best engine, overriding KWKER_ISA from now on.
    Selection s;
    s.engine = best_default_engine();
    s.reason = "best engine this CPU supports (set_isa(None) overrides KWKER_ISA)";
    s.warning = g_sel.warning;
    g_sel = s;
    g_current.store(s.engine, std::memory_order_release);
    return KWKER_OK;
  }
  int id = engine_id(name);
  if (id < 0)
    return set_error(KWKER_E_UNSUPPORTED_ISA,
                     "unknown engine '%s'; Kwker's engines are portable, sse4.2, avx2, avx512 "
                     "(this CPU runs: %s)",
                     name, supported_list().c_str());
  if (!engine_supported(id))
    return set_error(KWKER_E_UNSUPPORTED_ISA,
                     "engine '%s' cannot run on this CPU (%s); this CPU runs: %s. Call "
                     "set_isa(None) to use the best of them",
                     name, cpu_info().brand.empty() ? "unknown model" : cpu_info().brand.c_str(),
                     supported_list().c_str());
  g_sel.engine = id;
  g_sel.reason = std::string("selected by set_isa('") + kNames[id] + "')";
  g_sel.cap_value = kNames[id];
  g_sel.cap_source = "set_isa";
  g_current.store(id, std::memory_order_release);
  return KWKER_OK;
}

}  // namespace kwker
