/* kwker._fast: the CPython fast path into libkwker.
 *
 * Argument unpacking only: every function takes buffer-protocol objects (NumPy arrays that
 * kwker/_api.py already made C-contiguous and native-endian) plus ints, calls one C API
 * function, and maps a failing status to the exception kwker/_errors.py documents. No NumPy
 * C API: results are created by the Python layer, or by numpy.empty in the last-axis fast paths,
 * which read exact ndarrays' fields in place (ndarray_view, below).
 * The GIL is released around calls on GIL_RELEASE_MIN elements or more.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <string.h>

#include "kwker/kwker.h"

#define GIL_RELEASE_MIN 10000

static PyObject *dtype_name; /* "dtype", interned */
static PyObject *np_empty;   /* numpy.empty */
static PyObject *int64_dtype; /* numpy.dtype("int64") */

static const Py_ssize_t ITEMSIZE[KWKER_DTYPE_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8};

/* Same table as kwker/_errors.py. */
static PyObject *raise_status(int st) {
  const char *msg = kwker_last_error();
  PyObject *exc;
  switch (st) {
    case KWKER_E_INVALID_ARGUMENT:
    case KWKER_E_UNSUPPORTED_ISA: exc = PyExc_ValueError; break;
    case KWKER_E_DTYPE: exc = PyExc_TypeError; break;
    case KWKER_E_NO_MEMORY: exc = PyExc_MemoryError; break;
    default: exc = PyExc_RuntimeError; break;
  }
  if (msg == NULL || msg[0] == '\0')
    PyErr_Format(exc, "libkwker call failed with status %d and no message", st);
  else
    PyErr_SetString(exc, msg);
  return NULL;
}

static PyObject *status_result(int st) {
  if (st != KWKER_OK) return raise_status(st);
  Py_RETURN_NONE;
}

/* Element count of a C-contiguous buffer of dtype `code`; -1 with an exception on mismatch. */
static Py_ssize_t count(int code, Py_buffer *v, const char *what) {
  if (code < 0 || code >= KWKER_DTYPE_COUNT) {
    PyErr_Format(PyExc_ValueError, "kwker._fast: unknown dtype code %d", code);
    return -1;
  }
  if (v->len % ITEMSIZE[code] != 0) {
    PyErr_Format(PyExc_ValueError, "kwker._fast: %s holds %zd bytes, not a whole number of "
                 "%zd-byte elements", what, v->len, ITEMSIZE[code]);
    return -1;
  }
  return v->len / ITEMSIZE[code];
}

static int need(Py_ssize_t have, long long want, const char *what) {
  if ((long long)have != want) {
    PyErr_Format(PyExc_ValueError, "kwker._fast: %s has %zd elements, expected %lld", what,
                 have, want);
    return -1;
  }
  return 0;
}

#define IN_FLAGS PyBUF_C_CONTIGUOUS
#define OUT_FLAGS (PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE)

#define CALL(big, expr)            \
  do {                             \
    if (big) {                     \
      Py_BEGIN_ALLOW_THREADS       \
      st = (expr);                 \
      Py_END_ALLOW_THREADS         \
    } else {                       \
      st = (expr);                 \
    }                              \
  } while (0)

/* ---- the hot path: sorted copy of a 1-D contiguous native array ---- */

/* dtype code of a struct-module format with itemsize, or -1 when kwker does not take it. */
static int format_code(const char *fmt, Py_ssize_t itemsize) {
  if (fmt == NULL) return KWKER_UINT8;
  if (fmt[0] == '@' || fmt[0] == '=') fmt++;
#if PY_LITTLE_ENDIAN
  else if (fmt[0] == '<') fmt++;
#else
  else if (fmt[0] == '>' || fmt[0] == '!') fmt++;
#endif
  if (fmt[0] == '\0' || fmt[1] != '\0') return -1;
  switch (fmt[0]) {
    case '?': return itemsize == 1 ? KWKER_BOOL : -1;
    case 'b': case 'h': case 'i': case 'l': case 'q':
      switch (itemsize) {
        case 1: return KWKER_INT8;
        case 2: return KWKER_INT16;
        case 4: return KWKER_INT32;
        case 8: return KWKER_INT64;
      }
      return -1;
    case 'B': case 'H': case 'I': case 'L': case 'Q':
      switch (itemsize) {
        case 1: return KWKER_UINT8;
        case 2: return KWKER_UINT16;
        case 4: return KWKER_UINT32;
        case 8: return KWKER_UINT64;
      }
      return -1;
    case 'e': return itemsize == 2 ? KWKER_FLOAT16 : -1;
    case 'f': return itemsize == 4 ? KWKER_FLOAT32 : -1;
    case 'd': return itemsize == 8 ? KWKER_FLOAT64 : -1;
  }
  return -1;
}

/* The fast paths: sort_last(a) / argsort_last(a) sort a C-contiguous array of a native kwker
 * dtype along its last axis (a 1-D array as a whole; a strided 1-D array through one gathering
 * pass), with the default options or those kwker/_api.py checked and passes on, in one C call
 * with no Python work; they return None to decline anything else (the Python layer then takes
 * its general path). Results come from numpy.empty (a's dtype, or int64) and the C call fills them
 * straight from `a`: no separate copy pass. */

/* The fast paths read an exact ndarray's fields in place rather than through the buffer
 * protocol: datetime64 / timedelta64 arrays export no buffer at all (NumPy refuses the formats
 * 'M' and 'm'), and for the other dtypes NumPy's buffer export (format string, shape and stride
 * tuples) costs about 150 ns, a third of a short array's whole call. The mirror below is the
 * head of NumPy's PyArrayObject_fields and PyArray_Descr: every compiled extension reads these
 * fields by offset (PyArray_DATA, PyArray_NDIM, PyArray_DESCR are macros), so they have kept
 * their places from NumPy 1.x through 2.x; pybind11's numpy.h mirrors the same fields
 * (PyArray_Proxy, PyArray_Descr_Proxy) for the same reason: no NumPy headers at build time.
 * Anything else (subclasses, other dtypes, strided or foreign-order data) takes the buffer
 * protocol as before. */
typedef struct {
  PyObject_HEAD
  char *data;
  int nd;
  Py_ssize_t *dimensions;
  Py_ssize_t *strides;
  PyObject *base;
  PyObject *descr;
  int flags;
} ArrayHead;

typedef struct {
  PyObject_HEAD
  PyTypeObject *typeobj;
  char kind, type, byteorder, former_flags;
  int type_num;
} DescrHead;

enum { NPY_C_CONTIGUOUS_FLAG = 0x0001, NPY_ALIGNED_FLAG = 0x0100 }; /* NPY_ARRAY_* flags */

static PyTypeObject *ndarray_type; /* numpy.ndarray */

/* kwker dtype code of a NumPy type number (enum NPY_TYPES, part of NumPy's stable ABI), or -1.
 * NPY_LONG / NPY_ULONG are C long, whose width is the platform's. */
static int type_num_code(int type_num) {
  switch (type_num) {
    case 0: return KWKER_BOOL;
    case 1: return KWKER_INT8;
    case 2: return KWKER_UINT8;
    case 3: return KWKER_INT16;
    case 4: return KWKER_UINT16;
    case 5: return sizeof(int) == 4 ? KWKER_INT32 : -1;
    case 6: return sizeof(int) == 4 ? KWKER_UINT32 : -1;
    case 7: return sizeof(long) == 8 ? KWKER_INT64 : KWKER_INT32;
    case 8: return sizeof(long) == 8 ? KWKER_UINT64 : KWKER_UINT32;
    case 9: return KWKER_INT64;
    case 10: return KWKER_UINT64;
    case 11: return KWKER_FLOAT32;
    case 12: return KWKER_FLOAT64;
    case 21: case 22: return KWKER_DATETIME; /* datetime64, timedelta64: int64, NaT last */
    case 23: return KWKER_FLOAT16;
  }
  return -1;
}

/* The head of an exact ndarray of a kwker dtype whose data are aligned and in native byte order,
 * with its dtype code; NULL to decline. */
static const ArrayHead *kwker_array(PyObject *a, int *code) {
  if (Py_TYPE(a) != ndarray_type) return NULL;
  const ArrayHead *arr = (const ArrayHead *)a;
  const DescrHead *d = (const DescrHead *)arr->descr;
  const int c = d == NULL ? -1 : type_num_code(d->type_num);
#if PY_LITTLE_ENDIAN
  const char foreign = '>';
#else
  const char foreign = '<';
#endif
  if (c < 0 || !(arr->flags & NPY_ALIGNED_FLAG) || d->byteorder == foreign) return NULL;
  *code = c;
  return arr;
}

/* A Py_buffer over a C-contiguous kwker_array (obj NULL, so PyBuffer_Release leaves it alone)
 * with its dtype code, or 0 to decline. */
static int ndarray_view(PyObject *a, Py_buffer *v, int *code) {
  const ArrayHead *arr = kwker_array(a, code);
  if (arr == NULL || !(arr->flags & NPY_C_CONTIGUOUS_FLAG) || arr->nd < 1) return 0;
  Py_ssize_t n = 1;
  for (int i = 0; i < arr->nd; ++i) n *= arr->dimensions[i];
  memset(v, 0, sizeof *v);
  v->buf = arr->data;
  v->itemsize = ITEMSIZE[*code];
  v->len = n * v->itemsize;
  v->ndim = arr->nd;
  v->shape = arr->dimensions;
  return 1;
}

/* A writable buffer over a result made by new_result (numpy.empty: C-contiguous, aligned). */
static int result_view(PyObject *out, Py_buffer *o) {
  int code;
  if (ndarray_view(out, o, &code)) return 0;
  return PyObject_GetBuffer(out, o, OUT_FLAGS);
}

static int last_axis_view(PyObject *a, Py_buffer *v, int *code, Py_ssize_t *rows,
                          Py_ssize_t *cols) {
  if (ndarray_view(a, v, code)) {
    *cols = v->shape[v->ndim - 1];
    *rows = *cols ? v->len / v->itemsize / *cols : 0;
    return 1;
  }
  if (PyObject_GetBuffer(a, v, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
    PyErr_Clear();
    return 0;
  }
  *code = v->ndim >= 1 ? format_code(v->format, v->itemsize) : -1;
  if (*code < 0) {
    PyBuffer_Release(v);
    return 0;
  }
  *cols = v->shape[v->ndim - 1];
  *rows = *cols ? v->len / v->itemsize / *cols : 0;
  return 1;
}

/* numpy.empty(shape, dtype) for a shape of ndim lengths: for the exact, C-contiguous ndarrays the
 * fast paths take, the same array numpy.empty_like(a) gives, in about half its time (100 ns of a
 * 500 ns call). */
static PyObject *new_array(int ndim, const Py_ssize_t *lengths, PyObject *dtype) {
  PyObject *shape = ndim == 1 ? PyLong_FromSsize_t(lengths[0]) : PyTuple_New(ndim);
  for (int d = 0; shape != NULL && ndim > 1 && d < ndim; ++d) {
    PyObject *len = PyLong_FromSsize_t(lengths[d]);
    if (len == NULL) Py_CLEAR(shape);
    else PyTuple_SET_ITEM(shape, d, len);
  }
  PyObject *args[2] = {shape, dtype};
  PyObject *out = shape && dtype ? PyObject_Vectorcall(np_empty, args, 2, NULL) : NULL;
  Py_XDECREF(shape);
  return out;
}

static PyObject *new_result(const Py_buffer *v, PyObject *dtype) {
  return new_array(v->ndim, v->shape, dtype);
}

/* A new reference to the result's dtype: int64 for indices, else a's own. */
static PyObject *result_dtype(PyObject *a, int indices) {
  if (!indices) return PyObject_GetAttr(a, dtype_name);
  Py_INCREF(int64_dtype);
  return int64_dtype;
}

/* The options of sort_last / argsort_last / sort_axis / argsort_axis after their leading
 * arguments: flags (kwker_sort's DESCENDING | NANS_FIRST) and threads (0: the process budget),
 * both checked by kwker/_api.py, and for the last-axis calls `flat` (axis=None: an N-d array
 * sorted as one 1-D run in C order). */
typedef struct {
  unsigned flags;
  int threads;
  int flat;
} Options;

static int parse_options(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t lead, int with_flat,
                         const char *usage, Options *opt) {
  opt->flags = 0;
  opt->threads = 0;
  opt->flat = 0;
  if (nargs < lead || nargs > lead + 2 + with_flat) {
    PyErr_Format(PyExc_TypeError, "kwker._fast.%s", usage);
    return -1;
  }
  if (nargs > lead) {
    const long f = PyLong_AsLong(args[lead]);
    if (f == -1 && PyErr_Occurred()) return -1;
    opt->flags = (unsigned)f;
  }
  if (nargs > lead + 1) {
    const long t = PyLong_AsLong(args[lead + 1]);
    if (t == -1 && PyErr_Occurred()) return -1;
    opt->threads = t > INT_MAX ? INT_MAX : (int)t;
  }
  if (nargs > lead + 2 && (opt->flat = PyObject_IsTrue(args[lead + 2])) < 0) return -1;
  return 0;
}

/* A strided 1-D ndarray (a slice a[::k], a column m[:, j]) read in place: its first element,
 * length, byte stride and dtype code; 0 to decline. Gathered into a contiguous run by copy_run
 * below, in the pass the general path's numpy.ascontiguousarray would make, without its array. */
static int strided_view(PyObject *a, const char **data, Py_ssize_t *n, Py_ssize_t *stride,
                        int *code) {
  const ArrayHead *arr = kwker_array(a, code);
  if (arr == NULL || arr->nd != 1) return 0;
  *data = arr->data;
  *n = arr->dimensions[0];
  *stride = arr->strides[0];
  return 1;
}

static void copy_run(char *dst, const char *src, Py_ssize_t n, Py_ssize_t stride,
                     Py_ssize_t size) {
  switch (size) {
    case 1: for (Py_ssize_t i = 0; i < n; ++i) dst[i] = src[i * stride]; break;
#define KWKER_COPY_RUN(T)                                                               \
  for (Py_ssize_t i = 0; i < n; ++i) ((T *)dst)[i] = *(const T *)(src + i * stride); \
  break;
    case 2: KWKER_COPY_RUN(uint16_t)
    case 4: KWKER_COPY_RUN(uint32_t)
    case 8: KWKER_COPY_RUN(uint64_t)
#undef KWKER_COPY_RUN
  }
}

/* Sort / stable argsort of a strided 1-D ndarray (strided_view), or None to decline. */
static PyObject *strided_call(PyObject *a, const Options *opt, int indices) {
  const char *data;
  Py_ssize_t n, stride;
  int code;
  if (!strided_view(a, &data, &n, &stride, &code)) Py_RETURN_NONE;
  PyObject *dtype = result_dtype(a, indices);
  PyObject *out = new_array(1, &n, dtype);
  Py_XDECREF(dtype);
  Py_buffer o;
  if (out == NULL || result_view(out, &o) < 0) {
    Py_XDECREF(out);
    return NULL;
  }
  const Py_ssize_t size = ITEMSIZE[code];
  int st = KWKER_OK;
  if (n > 0 && !indices) {
    copy_run(o.buf, data, n, stride, size);
    CALL(n >= GIL_RELEASE_MIN, kwker_sort(code, o.buf, n, opt->flags, opt->threads));
  } else if (n > 0) {
    char *run = PyMem_Malloc((size_t)(n * size));
    if (run == NULL) {
      PyBuffer_Release(&o);
      Py_DECREF(out);
      return PyErr_NoMemory();
    }
    copy_run(run, data, n, stride, size);
    CALL(n >= GIL_RELEASE_MIN,
         kwker_argsort(code, run, n, (int64_t *)o.buf, opt->flags, opt->threads));
    PyMem_Free(run);
  }
  PyBuffer_Release(&o);
  if (st != KWKER_OK) {
    Py_DECREF(out);
    return raise_status(st);
  }
  return out;
}

/* sort_last(a[, flags, threads[, flat]]) / argsort_last(...): along the last axis (a 1-D array,
 * or with flat any C-contiguous array, as one run), or None to decline. */
static PyObject *last_call(PyObject *const *args, Py_ssize_t nargs, int indices) {
  Options opt;
  if (parse_options(args, nargs, 1, 1,
                    indices ? "argsort_last(a[, flags, threads[, flat]])"
                            : "sort_last(a[, flags, threads[, flat]])",
                    &opt) < 0)
    return NULL;
  PyObject *a = args[0];
  Py_buffer v, o;
  int code;
  Py_ssize_t rows, cols;
  if (!last_axis_view(a, &v, &code, &rows, &cols)) return strided_call(a, &opt, indices);
  const Py_ssize_t n = rows * cols;
  PyObject *dtype = result_dtype(a, indices);
  const int one_run = v.ndim == 1 || opt.flat;
  PyObject *out = one_run ? new_array(1, &n, dtype) : new_result(&v, dtype);
  Py_XDECREF(dtype);
  if (out == NULL || result_view(out, &o) < 0) {
    Py_XDECREF(out);
    PyBuffer_Release(&v);
    return NULL;
  }
  int st = KWKER_OK;
  const unsigned f = opt.flags;
  const int th = opt.threads;
  if (n > 0 && one_run) {
    if (indices) CALL(n >= GIL_RELEASE_MIN, kwker_argsort(code, v.buf, n, (int64_t *)o.buf, f, th));
    else CALL(n >= GIL_RELEASE_MIN, kwker_sort_copy(code, v.buf, o.buf, n, f, th));
  } else if (n > 0) {
    if (indices)
      CALL(n >= GIL_RELEASE_MIN,
           kwker_argsort_rows(code, v.buf, rows, cols, (int64_t *)o.buf, f, th));
    else CALL(n >= GIL_RELEASE_MIN, kwker_sort_rows_copy(code, v.buf, o.buf, rows, cols, f, th));
  }
  PyBuffer_Release(&o);
  PyBuffer_Release(&v);
  if (st != KWKER_OK) {
    Py_DECREF(out);
    return raise_status(st);
  }
  return out;
}

static PyObject *fast_sort_last(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  return last_call(args, nargs, 0);
}

static PyObject *fast_argsort_last(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  return last_call(args, nargs, 1);
}

/* The tuple (a, b), taking over both references (released if the tuple cannot be made). */
static PyObject *steal_pair(PyObject *a, PyObject *b) {
  PyObject *pair = PyTuple_Pack(2, a, b);
  Py_DECREF(a);
  Py_DECREF(b);
  return pair;
}

/* topk_last(a, k, flags, sorted) -> (values, indices): kwker_topk_rows along the last axis of a
 * C-contiguous native ndarray (k checked by kwker/_api.py), or None to decline. */
static PyObject *fast_topk_last(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "kwker._fast.topk_last(a, k, flags, sorted)");
    return NULL;
  }
  const long long k = PyLong_AsLongLong(args[1]);
  if (k == -1 && PyErr_Occurred()) return NULL;
  const long f = PyLong_AsLong(args[2]);
  if (f == -1 && PyErr_Occurred()) return NULL;
  const int sorted = PyObject_IsTrue(args[3]);
  if (sorted < 0) return NULL;
  Py_buffer v, ov, oi;
  int code;
  Py_ssize_t rows, cols;
  if (!last_axis_view(args[0], &v, &code, &rows, &cols)) Py_RETURN_NONE;
  if (k < 0 || k > cols || v.ndim > 64) {
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
  }
  Py_ssize_t shape[64];
  memcpy(shape, v.shape, (size_t)v.ndim * sizeof shape[0]);
  shape[v.ndim - 1] = (Py_ssize_t)k;
  PyObject *dtype = PyObject_GetAttr(args[0], dtype_name);
  PyObject *values = new_array(v.ndim, shape, dtype);
  Py_XDECREF(dtype);
  PyObject *indices = values ? new_array(v.ndim, shape, int64_dtype) : NULL;
  if (indices == NULL || result_view(values, &ov) < 0) {
    Py_XDECREF(values);
    Py_XDECREF(indices);
    PyBuffer_Release(&v);
    return NULL;
  }
  if (result_view(indices, &oi) < 0) {
    PyBuffer_Release(&ov);
    Py_DECREF(values);
    Py_DECREF(indices);
    PyBuffer_Release(&v);
    return NULL;
  }
  int st = KWKER_OK;
  if (rows * k > 0)
    CALL(rows * cols >= GIL_RELEASE_MIN,
         kwker_topk_rows(code, v.buf, rows, cols, k, (unsigned)f, sorted, ov.buf,
                         (int64_t *)oi.buf, 0));
  PyBuffer_Release(&oi);
  PyBuffer_Release(&ov);
  PyBuffer_Release(&v);
  if (st != KWKER_OK) {
    Py_DECREF(values);
    Py_DECREF(indices);
    return raise_status(st);
  }
  return steal_pair(values, indices);
}

/* segments(values, offsets, flags, threads, return_indices): kwker.sort_segments of a 1-D
 * C-contiguous native ndarray with int64 offsets in one call: the sorted copy, or (values taken
 * in the argsort's order, indices). None to decline, and where the library rejects the offsets:
 * kwker/_api.py then checks them itself and raises its own message. */
static PyObject *fast_segments(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError,
                    "kwker._fast.segments(values, offsets, flags, threads, return_indices)");
    return NULL;
  }
  Options opt;
  if (parse_options(args + 1, 3, 1, 0, "segments(...)", &opt) < 0) return NULL;
  const int with_indices = PyObject_IsTrue(args[4]);
  if (with_indices < 0) return NULL;
  Py_buffer v, off, o, oi;
  int code, off_code;
  if (!ndarray_view(args[0], &v, &code) || v.ndim != 1) Py_RETURN_NONE;
  if (!ndarray_view(args[1], &off, &off_code) || off.ndim != 1 || off_code != KWKER_INT64)
    Py_RETURN_NONE;
  const Py_ssize_t n = v.shape[0], noff = off.shape[0], size = ITEMSIZE[code];
  const int64_t *offsets = (const int64_t *)off.buf;
  PyObject *dtype = PyObject_GetAttr(args[0], dtype_name);
  PyObject *out = new_array(1, &n, dtype);
  Py_XDECREF(dtype);
  PyObject *idx = out && with_indices ? new_array(1, &n, int64_dtype) : NULL;
  if (out == NULL || (with_indices && idx == NULL) || result_view(out, &o) < 0) {
    Py_XDECREF(out);
    Py_XDECREF(idx);
    return NULL;
  }
  if (with_indices && result_view(idx, &oi) < 0) {
    Py_DECREF(out);
    Py_DECREF(idx);
    return NULL;
  }
  int st = KWKER_OK;
  if (!with_indices) {
    memcpy(o.buf, v.buf, (size_t)(n * size));
    CALL(n >= GIL_RELEASE_MIN,
         kwker_sort_segments(code, o.buf, n, offsets, noff, opt.flags, opt.threads));
  } else {
    int64_t *order = (int64_t *)oi.buf;
    CALL(n >= GIL_RELEASE_MIN, kwker_argsort_segments(code, v.buf, n, offsets, noff, order,
                                                      opt.flags, opt.threads));
    if (st == KWKER_OK) {
      const char *src = v.buf;
      char *dst = o.buf;
      switch (size) {
#define KWKER_TAKE(T) \
  for (Py_ssize_t j = 0; j < n; ++j) ((T *)dst)[j] = ((const T *)src)[order[j]]; \
  break;
        case 1: KWKER_TAKE(uint8_t)
        case 2: KWKER_TAKE(uint16_t)
        case 4: KWKER_TAKE(uint32_t)
        case 8: KWKER_TAKE(uint64_t)
#undef KWKER_TAKE
      }
    }
  }
  if (st != KWKER_OK) {
    Py_DECREF(out);
    Py_XDECREF(idx);
    if (st == KWKER_E_INVALID_ARGUMENT) Py_RETURN_NONE; /* bad offsets: _api.py says how */
    return raise_status(st);
  }
  return with_indices ? steal_pair(out, idx) : out;
}

/* Along an axis before the last of a C-contiguous native ndarray, default options: outer, the
 * axis length (rows) and the product of the lengths after it (cols), for kwker_sort_cols.
 * 0 to decline (the caller checked -ndim <= axis < ndim). */
static int axis_view(PyObject *a, int axis, Py_buffer *v, int *code, long long *outer,
                     long long *rows, long long *cols) {
  Py_ssize_t r, c;
  if (!last_axis_view(a, v, code, &r, &c)) return 0;
  const int ax = axis < 0 ? axis + v->ndim : axis;
  if (ax < 0 || ax >= v->ndim - 1) {
    PyBuffer_Release(v);
    return 0;
  }
  long long o = 1, k = 1;
  for (int d = 0; d < ax; ++d) o *= v->shape[d];
  for (int d = ax + 1; d < v->ndim; ++d) k *= v->shape[d];
  *outer = o;
  *rows = v->shape[ax];
  *cols = k;
  return 1;
}

/* sort_axis(a, axis[, flags, threads]) / argsort_axis(...): the fast paths of sort and argsort
 * along an axis before the last (kwker_sort_cols), or None to decline. */
static PyObject *axis_call(PyObject *const *args, Py_ssize_t nargs, int indices) {
  Options opt;
  if (parse_options(args, nargs, 2, 0,
                    indices ? "argsort_axis(a, axis[, flags, threads])"
                            : "sort_axis(a, axis[, flags, threads])",
                    &opt) < 0)
    return NULL;
  PyObject *a = args[0];
  const long axis = PyLong_AsLong(args[1]);
  if (axis == -1 && PyErr_Occurred()) return NULL;
  if (axis < -64 || axis > 64) Py_RETURN_NONE;
  Py_buffer v, o;
  int code;
  long long outer, rows, cols;
  if (!axis_view(a, (int)axis, &v, &code, &outer, &rows, &cols)) Py_RETURN_NONE;
  PyObject *dtype = result_dtype(a, indices);
  PyObject *out = new_result(&v, dtype);
  Py_XDECREF(dtype);
  if (out == NULL || result_view(out, &o) < 0) {
    Py_XDECREF(out);
    PyBuffer_Release(&v);
    return NULL;
  }
  int st = KWKER_OK;
  const long long n = outer * rows * cols;
  if (n > 0)
    CALL(n >= GIL_RELEASE_MIN,
         kwker_sort_cols(code, v.buf, indices ? NULL : o.buf, indices ? (int64_t *)o.buf : NULL,
                         outer, rows, cols, opt.flags, opt.threads));
  PyBuffer_Release(&o);
  PyBuffer_Release(&v);
  if (st != KWKER_OK) {
    Py_DECREF(out);
    return raise_status(st);
  }
  return out;
}

static PyObject *fast_sort_axis(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  return axis_call(args, nargs, 0);
}
static PyObject *fast_argsort_axis(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  return axis_call(args, nargs, 1);
}

/* ---- general calls (arrays prepared by _api.py) ---- */


static PyObject *fast_sort_copy(PyObject *self, PyObject *args) {
  int code, threads, st;
  unsigned flags;
  Py_buffer d, o;
  if (!PyArg_ParseTuple(args, "iy*w*Ii", &code, &d, &o, &flags, &threads)) return NULL;
  Py_ssize_t n = count(code, &d, "src");
  if (n < 0 || need(count(code, &o, "dst"), n, "dst") < 0) goto fail;
  CALL(n >= GIL_RELEASE_MIN, kwker_sort_copy(code, d.buf, o.buf, n, flags, threads));
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return status_result(st);
fail:
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return NULL;
}

static PyObject *fast_argsort(PyObject *self, PyObject *args) {
  int code, threads, st;
  unsigned flags;
  Py_buffer d, o;
  if (!PyArg_ParseTuple(args, "iy*w*Ii", &code, &d, &o, &flags, &threads)) return NULL;
  Py_ssize_t n = count(code, &d, "data");
  if (n < 0 || need(count(KWKER_INT64, &o, "out"), n, "out") < 0) goto fail;
  CALL(n >= GIL_RELEASE_MIN, kwker_argsort(code, d.buf, n, (int64_t *)o.buf, flags, threads));
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return status_result(st);
fail:
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return NULL;
}

static PyObject *fast_sort_rows(PyObject *self, PyObject *args) {
  int code, threads, st;
  long long rows, cols;
  unsigned flags;
  Py_buffer d, o;
  if (!PyArg_ParseTuple(args, "iy*w*LLIi", &code, &d, &o, &rows, &cols, &flags, &threads))
    return NULL;
  Py_ssize_t n = count(code, &d, "src");
  if (n < 0 || need(n, rows * cols, "src") < 0 || need(count(code, &o, "dst"), n, "dst") < 0)
    goto fail;
  CALL(n >= GIL_RELEASE_MIN,
       kwker_sort_rows_copy(code, d.buf, o.buf, rows, cols, flags, threads));
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return status_result(st);
fail:
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return NULL;
}

static PyObject *fast_argsort_rows(PyObject *self, PyObject *args) {
  int code, threads, st;
  long long rows, cols;
  unsigned flags;
  Py_buffer d, o;
  if (!PyArg_ParseTuple(args, "iy*LLw*Ii", &code, &d, &rows, &cols, &o, &flags, &threads))
    return NULL;
  Py_ssize_t n = count(code, &d, "data");
  if (n < 0 || need(n, rows * cols, "data") < 0 ||
      need(count(KWKER_INT64, &o, "out"), n, "out") < 0)
    goto fail;
  CALL(n >= GIL_RELEASE_MIN,
       kwker_argsort_rows(code, d.buf, rows, cols, (int64_t *)o.buf, flags, threads));
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return status_result(st);
fail:
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return NULL;
}

/* Down the columns of (outer, rows, cols) matrices: the sorted values into dst (which may be
 * src), or the stable argsort into out. */
static PyObject *fast_sort_cols(PyObject *self, PyObject *args) {
  int code, threads, st;
  long long outer, rows, cols;
  unsigned flags;
  Py_buffer d, o;
  if (!PyArg_ParseTuple(args, "iy*w*LLLIi", &code, &d, &o, &outer, &rows, &cols, &flags,
                        &threads))
    return NULL;
  Py_ssize_t n = count(code, &d, "src");
  if (n < 0 || need(n, outer * rows * cols, "src") < 0 ||
      need(count(code, &o, "dst"), n, "dst") < 0)
    goto fail;
  CALL(n >= GIL_RELEASE_MIN,
       kwker_sort_cols(code, d.buf, o.buf, NULL, outer, rows, cols, flags, threads));
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return status_result(st);
fail:
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return NULL;
}

static PyObject *fast_argsort_cols(PyObject *self, PyObject *args) {
  int code, threads, st;
  long long outer, rows, cols;
  unsigned flags;
  Py_buffer d, o;
  if (!PyArg_ParseTuple(args, "iy*LLLw*Ii", &code, &d, &outer, &rows, &cols, &o, &flags,
                        &threads))
    return NULL;
  Py_ssize_t n = count(code, &d, "data");
  if (n < 0 || need(n, outer * rows * cols, "data") < 0 ||
      need(count(KWKER_INT64, &o, "out"), n, "out") < 0)
    goto fail;
  CALL(n >= GIL_RELEASE_MIN,
       kwker_sort_cols(code, d.buf, NULL, (int64_t *)o.buf, outer, rows, cols, flags, threads));
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return status_result(st);
fail:
  PyBuffer_Release(&d);
  PyBuffer_Release(&o);
  return NULL;
}

static PyObject *fast_sort_segments(PyObject *self, PyObject *args) {
  int code, threads, st;
  unsigned flags;
  Py_buffer d, off;
  if (!PyArg_ParseTuple(args, "iw*y*Ii", &code, &d, &off, &flags, &threads)) return NULL;
  Py_ssize_t n = count(code, &d, "data");
  Py_ssize_t noff = n < 0 ? -1 : count(KWKER_INT64, &off, "offsets");
  if (noff < 0) goto fail;
  CALL(n >= GIL_RELEASE_MIN,
       kwker_sort_segments(code, d.buf, n, (const int64_t *)off.buf, noff, flags, threads));
  PyBuffer_Release(&d);
  PyBuffer_Release(&off);
  return status_result(st);
fail:
  PyBuffer_Release(&d);
  PyBuffer_Release(&off);
  return NULL;
}

static PyObject *fast_argsort_segments(PyObject *self, PyObject *args) {
  int code, threads, st;
  unsigned flags;
  Py_buffer d, off, o;
  if (!PyArg_ParseTuple(args, "iy*y*w*Ii", &code, &d, &off, &o, &flags, &threads)) return NULL;
  Py_ssize_t n = count(code, &d, "data");
  Py_ssize_t noff = n < 0 ? -1 : count(KWKER_INT64, &off, "offsets");
  if (noff < 0 || need(count(KWKER_INT64, &o, "out"), n, "out") < 0) goto fail;
  CALL(n >= GIL_RELEASE_MIN,
       kwker_argsort_segments(code, d.buf, n, (const int64_t *)off.buf, noff,
                              (int64_t *)o.buf, flags, threads));
  PyBuffer_Release(&d);
  PyBuffer_Release(&off);
  PyBuffer_Release(&o);
  return status_result(st);
fail:
  PyBuffer_Release(&d);
  PyBuffer_Release(&off);
  PyBuffer_Release(&o);
  return NULL;
}

static PyObject *fast_topk_rows(PyObject *self, PyObject *args) {
  int code, threads, sorted, st;
  long long rows, cols, k;
  unsigned flags;
  Py_buffer d, ov, oi;
  if (!PyArg_ParseTuple(args, "iy*LLLIpw*w*i", &code, &d, &rows, &cols, &k, &flags, &sorted,
                        &ov, &oi, &threads))
    return NULL;
  Py_ssize_t n = count(code, &d, "data");
  if (n < 0 || need(n, rows * cols, "data") < 0 ||
      need(count(code, &ov, "out_values"), rows * k, "out_values") < 0 ||
      need(count(KWKER_INT64, &oi, "out_indices"), rows * k, "out_indices") < 0)
    goto fail;
  CALL(n >= GIL_RELEASE_MIN,
       kwker_topk_rows(code, d.buf, rows, cols, k, flags, sorted, ov.buf, (int64_t *)oi.buf,
                       threads));
  PyBuffer_Release(&d);
  PyBuffer_Release(&ov);
  PyBuffer_Release(&oi);
  return status_result(st);
fail:
  PyBuffer_Release(&d);
  PyBuffer_Release(&ov);
  PyBuffer_Release(&oi);
  return NULL;
}

static PyObject *fast_topk_cols(PyObject *self, PyObject *args) {
  int code, threads, sorted, st;
  long long outer, rows, cols, k;
  unsigned flags;
  Py_buffer d, ov, oi;
  if (!PyArg_ParseTuple(args, "iy*LLLLIpw*w*i", &code, &d, &outer, &rows, &cols, &k, &flags,
                        &sorted, &ov, &oi, &threads))
    return NULL;
  Py_ssize_t n = count(code, &d, "data");
  if (n < 0 || need(n, outer * rows * cols, "data") < 0 ||
      need(count(code, &ov, "out_values"), outer * k * cols, "out_values") < 0 ||
      need(count(KWKER_INT64, &oi, "out_indices"), outer * k * cols, "out_indices") < 0)
    goto fail;
  CALL(n >= GIL_RELEASE_MIN,
       kwker_topk_cols(code, d.buf, outer, rows, cols, k, flags, sorted, ov.buf,
                       (int64_t *)oi.buf, threads));
  PyBuffer_Release(&d);
  PyBuffer_Release(&ov);
  PyBuffer_Release(&oi);
  return status_result(st);
fail:
  PyBuffer_Release(&d);
  PyBuffer_Release(&ov);
  PyBuffer_Release(&oi);
  return NULL;
}

/* ---- kwker.torch_ops: raw addresses ----
 * torch tensors have no buffer protocol, so kwker.torch_ops passes data_ptr() addresses of
 * contiguous CPU tensors it allocated or checked itself (sizes included). Internal: nothing else
 * calls these. */

static PyObject *fast_sort_pairs_ptr(PyObject *self, PyObject *args) {
  int code, threads, st;
  unsigned long long src, vals, idx;
  long long rows, cols;
  unsigned flags;
  if (!PyArg_ParseTuple(args, "iKKKLLIi", &code, &src, &vals, &idx, &rows, &cols, &flags,
                        &threads))
    return NULL;
  CALL(rows * cols >= GIL_RELEASE_MIN,
       kwker_sort_pairs_rows(code, (const void *)(uintptr_t)src, (void *)(uintptr_t)vals,
                             (int64_t *)(uintptr_t)idx, rows, cols, flags, threads));
  return status_result(st);
}

static PyObject *fast_topk_rows_ptr(PyObject *self, PyObject *args) {
  int code, threads, sorted, st;
  unsigned long long src, vals, idx;
  long long rows, cols, k;
  unsigned flags;
  if (!PyArg_ParseTuple(args, "iKLLLIpKKi", &code, &src, &rows, &cols, &k, &flags, &sorted,
                        &vals, &idx, &threads))
    return NULL;
  CALL(rows * cols >= GIL_RELEASE_MIN,
       kwker_topk_rows(code, (const void *)(uintptr_t)src, rows, cols, k, flags, sorted,
                       (void *)(uintptr_t)vals, (int64_t *)(uintptr_t)idx, threads));
  return status_result(st);
}

static PyObject *fast_topk_cols_ptr(PyObject *self, PyObject *args) {
  int code, threads, sorted, st;
  unsigned long long src, vals, idx;
  long long outer, rows, cols, k;
  unsigned flags;
  if (!PyArg_ParseTuple(args, "iKLLLLIpKKi", &code, &src, &outer, &rows, &cols, &k, &flags,
                        &sorted, &vals, &idx, &threads))
    return NULL;
  CALL(outer * rows * cols >= GIL_RELEASE_MIN,
       kwker_topk_cols(code, (const void *)(uintptr_t)src, outer, rows, cols, k, flags, sorted,
                       (void *)(uintptr_t)vals, (int64_t *)(uintptr_t)idx, threads));
  return status_result(st);
}

static PyObject *fast_kth_rows_ptr(PyObject *self, PyObject *args) {
  int code, threads, st;
  unsigned long long src, vals, idx;
  long long rows, cols, rank;
  unsigned flags;
  if (!PyArg_ParseTuple(args, "iKLLLIKKi", &code, &src, &rows, &cols, &rank, &flags, &vals,
                        &idx, &threads))
    return NULL;
  CALL(rows * cols >= GIL_RELEASE_MIN,
       kwker_kth_rows(code, (const void *)(uintptr_t)src, rows, cols, rank, flags,
                      (void *)(uintptr_t)vals, (int64_t *)(uintptr_t)idx, threads));
  return status_result(st);
}

static PyObject *fast_sort_cols_ptr(PyObject *self, PyObject *args) {
  int code, threads, st;
  unsigned long long src, vals, idx;
  long long outer, rows, cols;
  unsigned flags;
  if (!PyArg_ParseTuple(args, "iKKKLLLIi", &code, &src, &vals, &idx, &outer, &rows, &cols,
                        &flags, &threads))
    return NULL;
  CALL(outer * rows * cols >= GIL_RELEASE_MIN,
       kwker_sort_cols(code, (const void *)(uintptr_t)src, (void *)(uintptr_t)vals,
                       (int64_t *)(uintptr_t)idx, outer, rows, cols, flags, threads));
  return status_result(st);
}

static PyObject *fast_kth_cols_ptr(PyObject *self, PyObject *args) {
  int code, threads, st;
  unsigned long long src, vals, idx;
  long long outer, rows, cols, rank;
  unsigned flags;
  if (!PyArg_ParseTuple(args, "iKLLLLIKKi", &code, &src, &outer, &rows, &cols, &rank, &flags,
                        &vals, &idx, &threads))
    return NULL;
  CALL(outer * rows * cols >= GIL_RELEASE_MIN,
       kwker_kth_cols(code, (const void *)(uintptr_t)src, outer, rows, cols, rank, flags,
                      (void *)(uintptr_t)vals, (int64_t *)(uintptr_t)idx, threads));
  return status_result(st);
}

/* ---- runtime controls and diagnostics ---- */

static PyObject *fast_abi_version(PyObject *self, PyObject *unused) {
  return PyLong_FromLong(kwker_abi_version());
}
static PyObject *fast_version(PyObject *self, PyObject *unused) {
  return PyUnicode_FromString(kwker_version());
}
static PyObject *fast_last_error(PyObject *self, PyObject *unused) {
  const char *m = kwker_last_error();
  return PyUnicode_FromString(m ? m : "");
}
static PyObject *fast_get_isa(PyObject *self, PyObject *unused) {
  return PyUnicode_FromString(kwker_get_isa());
}
static PyObject *fast_get_max_threads(PyObject *self, PyObject *unused) {
  return PyLong_FromLong(kwker_get_max_threads());
}
static PyObject *fast_get_algorithms(PyObject *self, PyObject *unused) {
  return PyLong_FromUnsignedLong(kwker_get_algorithms());
}
static PyObject *fast_release_scratch(PyObject *self, PyObject *unused) {
  return status_result(kwker_release_scratch());
}
static PyObject *fast_reset_counters(PyObject *self, PyObject *unused) {
  return status_result(kwker_reset_counters());
}

static PyObject *fast_set_isa(PyObject *self, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "z", &name)) return NULL;
  return status_result(kwker_set_isa(name));
}
static PyObject *fast_isa_supported(PyObject *self, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  return PyBool_FromLong(kwker_isa_supported(name));
}
static PyObject *fast_set_backend_name(PyObject *self, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  return status_result(kwker_set_backend_name(name));
}
static PyObject *fast_set_max_threads(PyObject *self, PyObject *args) {
  int n;
  if (!PyArg_ParseTuple(args, "i", &n)) return NULL;
  return status_result(kwker_set_max_threads(n));
}
static PyObject *fast_set_scratch_cache(PyObject *self, PyObject *args) {
  long long n;
  if (!PyArg_ParseTuple(args, "L", &n)) return NULL;
  return status_result(kwker_set_scratch_cache(n));
}
static PyObject *fast_set_scratch_limit(PyObject *self, PyObject *args) {
  long long n;
  if (!PyArg_ParseTuple(args, "L", &n)) return NULL;
  return status_result(kwker_set_scratch_limit(n));
}
static PyObject *fast_set_algorithms(PyObject *self, PyObject *args) {
  unsigned mask;
  if (!PyArg_ParseTuple(args, "I", &mask)) return NULL;
  return status_result(kwker_set_algorithms(mask));
}

static PyObject *fast_set_tuning(PyObject *self, PyObject *args) {
  const char *name;
  long long v;
  if (!PyArg_ParseTuple(args, "sL", &name, &v)) return NULL;
  return status_result(kwker_set_tuning(name, v));
}
static PyObject *fast_get_tuning(PyObject *self, PyObject *args) {
  const char *name;
  int64_t v = 0;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  int st = kwker_get_tuning(name, &v);
  if (st != KWKER_OK) return raise_status(st);
  return PyLong_FromLongLong((long long)v);
}

/* Calls a (..., buf, cap, needed) JSON query, growing the buffer when it is too small.
 * Returns (status, text) so the caller can treat SELF_CHECK_FAILED as a report. */
static PyObject *json_query(const char *name) {
  size_t cap = 8192, needed = 0;
  for (int attempt = 0; attempt < 3; attempt++) {
    char *buf = PyMem_Malloc(cap);
    if (buf == NULL) return PyErr_NoMemory();
    buf[0] = '\0';
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = name ? kwker_self_check(name, buf, cap, &needed) : kwker_runtime_info(buf, cap, &needed);
    Py_END_ALLOW_THREADS
    if (st != KWKER_E_BUFFER_TOO_SMALL) {
      PyObject *res = Py_BuildValue("(is)", st, buf);
      PyMem_Free(buf);
      return res;
    }
    PyMem_Free(buf);
    cap = needed > cap * 2 ? needed : cap * 2;
  }
  return raise_status(KWKER_E_BUFFER_TOO_SMALL);
}

static PyObject *fast_runtime_info(PyObject *self, PyObject *unused) {
  PyObject *res = json_query(NULL);
  if (res == NULL) return NULL;
  int st = (int)PyLong_AsLong(PyTuple_GET_ITEM(res, 0));
  if (st != KWKER_OK) {
    Py_DECREF(res);
    return raise_status(st);
  }
  PyObject *text = PyTuple_GET_ITEM(res, 1);
  Py_INCREF(text);
  Py_DECREF(res);
  return text;
}

static PyObject *fast_self_check(PyObject *self, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  return json_query(name);
}

static PyMethodDef methods[] = {
    {"sort_last", (PyCFunction)(void (*)(void))fast_sort_last, METH_FASTCALL,
     "sort_last(a[, flags, threads[, flat]]) -> sorted along the last axis (flat: the whole "
     "array as one run), or None to decline"},
    {"argsort_last", (PyCFunction)(void (*)(void))fast_argsort_last, METH_FASTCALL,
     "argsort_last(a[, flags, threads[, flat]]) -> stable argsort along the last axis, or None"},
    {"segments", (PyCFunction)(void (*)(void))fast_segments, METH_FASTCALL,
     "segments(values, offsets, flags, threads, return_indices) -> sort_segments' result, "
     "or None"},
    {"topk_last", (PyCFunction)(void (*)(void))fast_topk_last, METH_FASTCALL,
     "topk_last(a, k, flags, sorted) -> (values, indices) along the last axis, or None"},
    {"sort_axis", (PyCFunction)(void (*)(void))fast_sort_axis, METH_FASTCALL,
     "sort_axis(a, axis[, flags, threads]) -> sorted along an axis before the last, or None"},
    {"argsort_axis", (PyCFunction)(void (*)(void))fast_argsort_axis, METH_FASTCALL,
     "argsort_axis(a, axis[, flags, threads]) -> stable argsort along an axis before the last, "
     "or None"},
    {"sort_copy", fast_sort_copy, METH_VARARGS, "sort_copy(code, src, dst, flags, threads)"},
    {"argsort", fast_argsort, METH_VARARGS, "argsort(code, data, out, flags, threads)"},
    {"sort_rows", fast_sort_rows, METH_VARARGS, "sort_rows(code, src, dst, rows, cols, flags, threads)"},
    {"argsort_rows", fast_argsort_rows, METH_VARARGS,
     "argsort_rows(code, data, rows, cols, out, flags, threads)"},
    {"sort_cols", fast_sort_cols, METH_VARARGS,
     "sort_cols(code, src, dst, outer, rows, cols, flags, threads): down the columns"},
    {"argsort_cols", fast_argsort_cols, METH_VARARGS,
     "argsort_cols(code, data, outer, rows, cols, out, flags, threads): down the columns"},
    {"sort_segments", fast_sort_segments, METH_VARARGS,
     "sort_segments(code, data, offsets, flags, threads)"},
    {"argsort_segments", fast_argsort_segments, METH_VARARGS,
     "argsort_segments(code, data, offsets, out, flags, threads)"},
    {"topk_rows", fast_topk_rows, METH_VARARGS,
     "topk_rows(code, data, rows, cols, k, flags, sorted, out_values, out_indices, threads)"},
    {"sort_pairs_ptr", fast_sort_pairs_ptr, METH_VARARGS,
     "sort_pairs_ptr(code, src, vals, idx, rows, cols, flags, threads): addresses (torch_ops)"},
    {"topk_cols", fast_topk_cols, METH_VARARGS,
     "topk_cols(code, data, outer, rows, cols, k, flags, sorted, out_values, out_indices, "
     "threads)"},
    {"topk_cols_ptr", fast_topk_cols_ptr, METH_VARARGS,
     "topk_cols_ptr(code, src, outer, rows, cols, k, flags, sorted, vals, idx, threads): "
     "addresses"},
    {"topk_rows_ptr", fast_topk_rows_ptr, METH_VARARGS,
     "topk_rows_ptr(code, src, rows, cols, k, flags, sorted, vals, idx, threads): addresses"},
    {"sort_cols_ptr", fast_sort_cols_ptr, METH_VARARGS,
     "sort_cols_ptr(code, src, vals, idx, outer, rows, cols, flags, threads): addresses"},
    {"kth_cols_ptr", fast_kth_cols_ptr, METH_VARARGS,
     "kth_cols_ptr(code, src, outer, rows, cols, rank, flags, vals, idx, threads): addresses"},
    {"kth_rows_ptr", fast_kth_rows_ptr, METH_VARARGS,
     "kth_rows_ptr(code, src, rows, cols, rank, flags, vals, idx, threads): addresses"},
    {"abi_version", fast_abi_version, METH_NOARGS, NULL},
    {"version", fast_version, METH_NOARGS, NULL},
    {"last_error", fast_last_error, METH_NOARGS, NULL},
    {"set_isa", fast_set_isa, METH_VARARGS, NULL},
    {"get_isa", fast_get_isa, METH_NOARGS, NULL},
    {"isa_supported", fast_isa_supported, METH_VARARGS, NULL},
    {"set_max_threads", fast_set_max_threads, METH_VARARGS, NULL},
    {"get_max_threads", fast_get_max_threads, METH_NOARGS, NULL},
    {"set_scratch_cache", fast_set_scratch_cache, METH_VARARGS, NULL},
    {"release_scratch", fast_release_scratch, METH_NOARGS, NULL},
    {"set_scratch_limit", fast_set_scratch_limit, METH_VARARGS, NULL},
    {"set_algorithms", fast_set_algorithms, METH_VARARGS, NULL},
    {"get_algorithms", fast_get_algorithms, METH_NOARGS, NULL},
    {"reset_counters", fast_reset_counters, METH_NOARGS, NULL},
    {"set_backend_name", fast_set_backend_name, METH_VARARGS, NULL},
    {"set_tuning", fast_set_tuning, METH_VARARGS, "set_tuning(name, value); -1 restores"},
    {"get_tuning", fast_get_tuning, METH_VARARGS, "get_tuning(name) -> value in effect"},
    {"runtime_info", fast_runtime_info, METH_NOARGS, "runtime-info JSON text"},
    {"self_check", fast_self_check, METH_VARARGS, "self_check(name) -> (status, JSON text)"},
    {NULL, NULL, 0, NULL}};

/* Module state is four references into numpy, set once by exec_module and only read after
 * that, and the C library keeps its own state thread-safe (atomics, thread-local errors, locked
 * caches), so the module runs without the GIL on free-threaded builds. */
static int exec_module(PyObject *m) {
  (void)m;
  if (np_empty != NULL) return 0; /* a second import of the same extension shares them */
  PyObject *np = PyImport_ImportModule("numpy");
  if (np == NULL) return -1;
  PyObject *el = PyUnicode_InternFromString("dtype");
  PyObject *em = PyObject_GetAttrString(np, "empty");
  PyObject *dtype = PyObject_GetAttrString(np, "dtype");
  PyObject *i64 = dtype ? PyObject_CallFunction(dtype, "s", "int64") : NULL;
  PyObject *nd = PyObject_GetAttrString(np, "ndarray");
  Py_XDECREF(dtype);
  Py_DECREF(np);
  if (el == NULL || em == NULL || i64 == NULL || nd == NULL || !PyType_Check(nd)) {
    Py_XDECREF(el);
    Py_XDECREF(em);
    Py_XDECREF(i64);
    Py_XDECREF(nd);
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ImportError, "numpy.ndarray is not a type");
    return -1;
  }
  dtype_name = el;
  int64_dtype = i64;
  np_empty = em;
  ndarray_type = (PyTypeObject *)nd;
  return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kwker._fast",
                                    "CPython fast path into libkwker (see kwker/_backend.py)",
                                    0, methods, slots, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast(void) { return PyModuleDef_Init(&module); }
