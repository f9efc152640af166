#include "capi/errors.h"

#include <cstdarg>
#include <cstdio>

namespace kwker {
namespace {
thread_local char t_message[1024] = "";
}

int set_error(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(t_message, sizeof(t_message), fmt, ap);
  va_end(ap);
  return code;
}
const char *last_error() { return t_message; }
void clear_error() { t_message[0] = '\0'; }
}  // namespace kwker
