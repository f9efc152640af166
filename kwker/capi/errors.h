// Thread-local last-error message behind kwker_last_error().
#ifndef KWKER_CAPI_ERRORS_H_
#define KWKER_CAPI_ERRORS_H_

namespace kwker {
// Formats the message, stores it for kwker_last_error() and returns code.
int set_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *last_error();
void clear_error();
}  // namespace kwker
#endif
