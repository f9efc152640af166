// kwker.hpp: header-only C++17 sugar over the C ABI in kwker.h. Every call maps the element
// type to its dtype code at compile time and turns a failing status into kwker::Error carrying
// kwker_last_error()'s message. Nothing here is compiled into libkwker, so the ABI stays C.
#ifndef KWKER_HPP_
#define KWKER_HPP_

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kwker/kwker.h"

namespace kwker {

class Error : public std::runtime_error {
 public:
  Error(int status, const std::string &what) : std::runtime_error(what), status_(status) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

inline void check(int status) {
  if (status != KWKER_OK) throw Error(status, kwker_last_error());
}

// dtype code of a C++ element type (bool, fixed-width integers, float, double).
template <class T> struct dtype_of;
template <> struct dtype_of<bool> : std::integral_constant<int, KWKER_BOOL> {};
template <> struct dtype_of<int8_t> : std::integral_constant<int, KWKER_INT8> {};
template <> struct dtype_of<int16_t> : std::integral_constant<int, KWKER_INT16> {};
template <> struct dtype_of<int32_t> : std::integral_constant<int, KWKER_INT32> {};
template <> struct dtype_of<int64_t> : std::integral_constant<int, KWKER_INT64> {};
template <> struct dtype_of<uint8_t> : std::integral_constant<int, KWKER_UINT8> {};
template <> struct dtype_of<uint16_t> : std::integral_constant<int, KWKER_UINT16> {};
template <> struct dtype_of<uint32_t> : std::integral_constant<int, KWKER_UINT32> {};
template <> struct dtype_of<uint64_t> : std::integral_constant<int, KWKER_UINT64> {};
template <> struct dtype_of<float> : std::integral_constant<int, KWKER_FLOAT32> {};
template <> struct dtype_of<double> : std::integral_constant<int, KWKER_FLOAT64> {};

struct Options {
  bool descending = false;
  bool nans_first = false;
  int threads = 0;  // 0: the process budget
  unsigned flags() const {
    return (descending ? KWKER_DESCENDING : 0u) | (nans_first ? KWKER_NANS_FIRST : 0u);
  }
};

// Sorts data[0..n) in place.
template <class T> void sort(T *data, size_t n, const Options &o = {}) {
  check(kwker_sort(dtype_of<T>::value, data, int64_t(n), o.flags(), o.threads));
}
template <class T> void sort(std::vector<T> &v, const Options &o = {}) {
  sort(v.data(), v.size(), o);
}

// Stable argsort: the permutation that sorts data.
template <class T> std::vector<int64_t> argsort(const T *data, size_t n, const Options &o = {}) {
  std::vector<int64_t> out(n);
  check(kwker_argsort(dtype_of<T>::value, data, int64_t(n), out.data(), o.flags(), o.threads));
  return out;
}
template <class T> std::vector<int64_t> argsort(const std::vector<T> &v, const Options &o = {}) {
  return argsort(v.data(), v.size(), o);
}

// Sorts each data[offsets[i]:offsets[i+1]] in place.
template <class T>
void sort_segments(std::vector<T> &v, const std::vector<int64_t> &offsets, const Options &o = {}) {
  check(kwker_sort_segments(dtype_of<T>::value, v.data(), int64_t(v.size()), offsets.data(),
                            int64_t(offsets.size()), o.flags(), o.threads));
}

// Engine control.
inline void set_isa(const char *name) { check(kwker_set_isa(name)); }
inline std::string get_isa() { return kwker_get_isa(); }

// The runtime-info JSON document (schema kwker.runtime_info).
inline std::string runtime_info() {
  size_t need = 0;
  kwker_runtime_info(nullptr, 0, &need);
  std::string buf(need, '\0');
  check(kwker_runtime_info(&buf[0], buf.size(), &need));
  buf.resize(need - 1);
  return buf;
}

}  // namespace kwker
#endif  // KWKER_HPP_
