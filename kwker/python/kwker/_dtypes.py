"""NumPy dtype -> kwker dtype code, and the normalisation every call applies first.

The C API takes C-contiguous, native-endian data of one of its element types. datetime64 and
timedelta64 (any unit) travel as their int64 view with code DATETIME, where NaT orders like NaN.
"""
import numpy as np

BOOL, INT8, INT16, INT32, INT64 = 0, 1, 2, 3, 4
UINT8, UINT16, UINT32, UINT64 = 5, 6, 7, 8
FLOAT16, FLOAT32, FLOAT64, BFLOAT16, DATETIME = 9, 10, 11, 12, 13

# Keyed by native-order dtype; dtype equality includes byte order, so a non-native dtype
# misses this table and goes through normalisation.
CODES = {
    np.dtype(np.bool_): BOOL,
    np.dtype(np.int8): INT8,
    np.dtype(np.int16): INT16,
    np.dtype(np.int32): INT32,
    np.dtype(np.int64): INT64,
    np.dtype(np.uint8): UINT8,
    np.dtype(np.uint16): UINT16,
    np.dtype(np.uint32): UINT32,
    np.dtype(np.uint64): UINT64,
    np.dtype(np.float16): FLOAT16,
    np.dtype(np.float32): FLOAT32,
    np.dtype(np.float64): FLOAT64,
}

NAMES = {
    BOOL: "bool", INT8: "int8", INT16: "int16", INT32: "int32", INT64: "int64",
    UINT8: "uint8", UINT16: "uint16", UINT32: "uint32", UINT64: "uint64",
    FLOAT16: "float16", FLOAT32: "float32", FLOAT64: "float64", BFLOAT16: "bfloat16",
    DATETIME: "datetime",
}

SUPPORTED = ("bool, int8-int64, uint8-uint64, float16, float32, float64, "
             "datetime64 and timedelta64")

_INT64 = np.dtype(np.int64)


def _advice(dtype):
    kind = dtype.kind
    if kind == "c":
        return ("convert to a real numeric dtype first (e.g. a.real, np.abs(a) or "
                "a.view(np.float64) for a key of your choice)")
    if kind in "US":
        return "strings are not supported; use numpy.sort, or map the strings to integer codes"
    if kind == "O":
        return ("convert the objects to a numeric dtype first (e.g. a.astype(np.float64)) "
                "or use numpy.sort")
    if kind == "V":
        return ("structured and void dtypes are not supported; sort a numeric field "
                "(e.g. kwker.argsort(a['field'])) or use numpy.sort")
    return "convert to a supported numeric dtype first or use numpy.sort"


def resolve(dtype, func):
    """Return (code, native_dtype) for `dtype`, or raise TypeError naming it.

    native_dtype is the dtype the result has (dtype in native byte order)."""
    code = CODES.get(dtype)
    if code is not None:
        return code, dtype
    native = dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype
    code = CODES.get(native)
    if code is not None:
        return code, native
    if dtype.kind in "mM":
        return DATETIME, native
    if dtype.kind == "f" and dtype.itemsize > 8:
        hint = "convert to float64 first (a.astype(np.float64)) or use numpy.sort"
    else:
        hint = _advice(dtype)
    raise TypeError(
        f"kwker.{func} does not support dtype {dtype}; {hint}. "
        f"Supported dtypes: {SUPPORTED}.")


def c_view(arr, code):
    """The array the C call reads: the int64 view for datetime/timedelta, else arr itself."""
    if code == DATETIME:
        return arr.view(_INT64)
    return arr
