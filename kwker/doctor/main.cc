// kwker-doctor: the native doctor. Prints the runtime info (engines, CPU, selection and why)
// and self-checks every engine this CPU runs. --json prints one JSON object. Exit status 1
// when any engine gives a wrong result, 2 on a usage error.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kwker/kwker.h"

namespace {

std::string fetch(int (*fn)(char *, size_t, size_t *)) {
  size_t need = 0;
  fn(nullptr, 0, &need);
  std::vector<char> buf(need + 1);
  if (fn(buf.data(), buf.size(), &need) != KWKER_OK) return "{}";
  return buf.data();
}

const char *const kEngines[] = {"portable", "sse4.2", "avx2", "avx512"};

}  // namespace

int main(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json")) json = true;
    else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf("usage: kwker-doctor [--json]\n"
                  "Prints Kwker's engines and CPU, and checks every engine this CPU runs against\n"
                  "the scalar reference. Exit status 1 if any engine gives a wrong result.\n");
      return 0;
    } else {
      std::fprintf(stderr, "kwker-doctor: unknown option '%s' (try --help)\n", argv[i]);
      return 2;
    }
  }
  kwker_set_backend_name("c");
  std::string info = fetch(kwker_runtime_info);
  bool all_ok = true;
  std::string checks = "{";
  std::string text;
  for (const char *e : kEngines) {
    if (!kwker_isa_supported(e)) {
      text += std::string("  ") + e + ": not run by this CPU\n";
      continue;
    }
    size_t need = 0;
    kwker_self_check(e, nullptr, 0, &need);
    std::vector<char> buf(need + 1);
    int rc = kwker_self_check(e, buf.data(), buf.size(), &need);
    bool ok = rc == KWKER_OK;
    all_ok = all_ok && ok;
    checks += std::string(checks.size() > 1 ? ", " : "") + "\"" + e + "\": " +
              (rc == KWKER_OK || rc == KWKER_E_SELF_CHECK_FAILED ? std::string(buf.data()) : "null");
    text += std::string("  ") + e + ": " + (ok ? "ok" : std::string("WRONG RESULTS: ") + kwker_last_error()) + "\n";
  }
  checks += "}";
  if (json) {
    std::printf("{\"schema\": \"kwker.doctor\", \"schema_version\": 1, \"runtime_info\": %s, "
                "\"self_check\": %s, \"ok\": %s}\n",
                info.c_str(), checks.c_str(), all_ok ? "true" : "false");
  } else {
    std::printf("Kwker %s (ABI %d), native doctor\n", kwker_version(), kwker_abi_version());
    std::printf("engine in use: %s\n", kwker_get_isa());
    std::printf("runtime info: %s\n", info.c_str());
    std::printf("self-check:\n%s", text.c_str());
    std::printf("%s\n", all_ok ? "all engines give correct results" :
                                 "an engine gave WRONG results: avoid it with KWKER_ISA and report it");
  }
  return all_ok ? 0 : 1;
}
