// A minimal JSON writer for the versioned diagnostics documents (runtime info, self-check).
#ifndef KWKER_DISPATCH_JSON_H_
#define KWKER_DISPATCH_JSON_H_
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace kwker {

inline std::string json_str(const std::string &s) {
  std::string o = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') { o += '\\'; o += char(ch); }
    else if (ch < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", ch); o += b; }
    else o += char(ch);
  }
  return o + "\"";
}
inline std::string json_str_or_null(const std::string &s) { return s.empty() ? "null" : json_str(s); }
inline std::string json_bool(bool b) { return b ? "true" : "false"; }

// Copies a JSON document into a caller's buffer following the kwker.h contract.
int copy_out(const std::string &doc, char *buf, size_t cap, size_t *needed);

}  // namespace kwker
#endif
