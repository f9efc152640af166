// kwker_runtime_info: one JSON document (schema kwker.runtime_info v1, docs/runtime-info.md)
// that both doctors read, so they never disagree.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "capi/errors.h"
#include "dispatch/cpu.h"
#include "dispatch/dispatch.h"
#include "dispatch/json.h"
#include "kwker/kwker.h"
#include "runtime/counters.h"
#include "runtime/scratch.h"
#include "runtime/cpu_share.h"
#include "runtime/threads.h"

namespace kwker {
extern std::atomic<unsigned> g_algos;
std::string backend_name();

int copy_out(const std::string &doc, char *buf, size_t cap, size_t *needed) {
  if (needed) *needed = doc.size() + 1;
  if (!buf || cap < doc.size() + 1)
    return set_error(KWKER_E_BUFFER_TOO_SMALL,
                     "output buffer holds %zu bytes but the document needs %zu; call again with "
                     "a buffer of *needed bytes",
                     cap, doc.size() + 1);
  std::memcpy(buf, doc.c_str(), doc.size() + 1);
  return KWKER_OK;
}

namespace {

std::string build() {
  const CpuInfo &c = cpu_info();
  Selection sel = selection();
  std::string j = "{";
  j += "\"schema\": \"kwker.runtime_info\", \"schema_version\": " +
       std::to_string(KWKER_INFO_SCHEMA_VERSION);
  j += ", \"version\": " + json_str(KWKER_VERSION_STRING);
  j += ", \"abi_version\": " + std::to_string(KWKER_ABI_VERSION);
  j += ", \"cpu\": {\"vendor\": " + json_str(c.vendor) + ", \"brand\": " + json_str(c.brand) +
       ", \"logical_cpus\": " + std::to_string(rt::hardware_threads()) + ", \"features\": {" +
       "\"sse4.2\": " + json_bool(c.sse42) + ", \"avx2\": " + json_bool(c.avx2) +
       ", \"avx512f\": " + json_bool(c.avx512f) + ", \"avx512bw\": " + json_bool(c.avx512bw) +
       ", \"avx512dq\": " + json_bool(c.avx512dq) + ", \"avx512vl\": " + json_bool(c.avx512vl) +
       ", \"avx512_vbmi2\": " + json_bool(c.avx512_vbmi2) +
       ", \"amx\": " + json_bool(c.amx) + ", \"avx512_vnni\": " + json_bool(c.avx512_vnni) +
       ", \"avx512_bf16\": " + json_bool(c.avx512_bf16) + ", \"avx_vnni\": " +
       json_bool(c.avx_vnni) + ", \"amx_int8\": " + json_bool(c.amx_int8) +
       ", \"amx_bf16\": " + json_bool(c.amx_bf16) + "}}";
  std::string compiled, supported;
  for (int id = 0; id < kNumEngines; ++id) {
    compiled += std::string(compiled.empty() ? "" : ", ") + json_str(engine_name(id));
    if (engine_supported(id))
      supported += std::string(supported.empty() ? "" : ", ") + json_str(engine_name(id));
  }
  j += ", \"engines\": {\"compiled\": [" + compiled + "], \"supported\": [" + supported +
       "], \"default\": " + json_str(engine_name(best_default_engine())) +
       ", \"selected\": " + json_str(engine_name(sel.engine)) +
       ", \"reason\": " + json_str(sel.reason) +
       ", \"avx512_validated\": " + json_bool(kAvx512Validated) + "}";
  j += ", \"isa_cap\": {\"value\": " + json_str_or_null(sel.cap_value) +
       ", \"source\": " + json_str_or_null(sel.cap_source) +
       ", \"warning\": " + json_str_or_null(sel.warning) + "}";
  unsigned algos = g_algos.load();
  std::string enabled = "\"adaptive\"";
  const char *names[3] = {"radix", "parallel", "presorted"};
  for (int b = 0; b < 3; ++b)
    if (algos & (1u << b)) enabled += std::string(", ") + json_str(names[b]);
  j += ", \"algorithms\": {\"available\": [\"adaptive\", \"radix\", \"parallel\", \"presorted\"], "
       "\"enabled\": [" + enabled + "]}";
  int user = rt::user_max_threads();
  double cg = rt::cgroup_cpu_limit();
  char cgbuf[32];
  std::snprintf(cgbuf, sizeof cgbuf, "%g", cg);
  j += ", \"threads\": {\"max_threads\": " + (user > 0 ? std::to_string(user) : "null") +
       ", \"budget\": " + std::to_string(rt::thread_budget()) +
       ", \"hardware\": " + std::to_string(rt::hardware_threads()) +
       ", \"affinity\": " + std::to_string(rt::affinity_threads()) +
       ", \"cgroup_limit\": " + (cg > 0 ? std::string(cgbuf) : "null") +
       ", \"pool_workers\": " + std::to_string(rt::pool_workers()) +
       ", \"placed_wakes\": " + std::to_string(rt::placed_wakes()) +
       ", \"late_calls\": " + std::to_string(rt::late_calls()) +
       ", \"solo_spells\": " + std::to_string(rt::solo_spells()) +
       ", \"cpu_share\": " + json_str(rt::cpu_share_state()) +
       ", \"shared_calls\": " + std::to_string(rt::shared_reductions()) +
       ", \"shared_with\": " + std::to_string(rt::cpu_share_peers()) + "}";
  j += ", \"scratch\": {\"cache_limit_bytes\": " + std::to_string(rt::scratch_cache_limit()) +
       ", \"cached_bytes\": " + std::to_string(rt::scratch_cached_bytes()) +
       ", \"limit_bytes\": " + std::to_string(rt::scratch_limit()) +
       ", \"in_use_bytes\": " + std::to_string(rt::scratch_in_use_bytes()) + "}";
  j += ", \"backend\": " + json_str(backend_name());
  j += ", \"counters\": {";
  for (int id = 0; id < kNumEngines; ++id) {
    if (id) j += ", ";
    j += json_str(engine_name(id)) + ": {\"calls\": " + std::to_string(rt::counters_calls(id)) +
         ", \"max_threads\": " + std::to_string(rt::counters_max_threads(id)) + "}";
  }
  j += "}}";
  return j;
}

}  // namespace
}  // namespace kwker

extern "C" KWKER_API int kwker_runtime_info(char *buf, size_t cap, size_t *needed) {
  try {
    return kwker::copy_out(kwker::build(), buf, cap, needed);
  } catch (...) {
    return kwker::set_error(KWKER_E_INTERNAL, "kwker_runtime_info: internal error");
  }
}
