"""Bad input gives the documented exception with a message that says what to do."""
import numpy as np
import pytest

BAD_DTYPES = [
    (np.array([1 + 2j, 3j]), "complex128", "real numeric"),
    (np.array(["b", "a"]), "<U1", "strings"),
    (np.array([b"b", b"a"]), "|S1", "strings"),
    (np.array([object(), 1], dtype=object), "object", "numeric"),
    (np.zeros(2, dtype=[("x", "i4"), ("y", "f4")]), "x", "structured"),
    (np.zeros(2, dtype="V4"), "V4", "void"),
    (np.zeros(2, dtype=np.longdouble), "float128", "float64"),
]


@pytest.mark.parametrize("func", ["sort", "argsort", "topk", "sort_segments"])
def test_unsupported_dtypes(kw, func):
    for arr, name, hint in BAD_DTYPES:
        call = {"sort": lambda a: kw.sort(a), "argsort": lambda a: kw.argsort(a),
                "topk": lambda a: kw.topk(a, 1),
                "sort_segments": lambda a: kw.sort_segments(a, [0, 1])}[func]
        with pytest.raises(TypeError) as exc:
            call(arr)
        msg = str(exc.value)
        assert f"kwker.{func} does not support dtype" in msg and name in msg, msg
        assert hint in msg, msg


def test_axis_errors(kw):
    a = np.zeros((2, 3))
    for func in (kw.sort, kw.argsort):
        with pytest.raises(np.exceptions.AxisError):
            func(a, axis=2)
        with pytest.raises(np.exceptions.AxisError):
            func(a, axis=-3)
        with pytest.raises(TypeError):
            func(a, axis=1.0)


def test_threads_errors(kw):
    a = np.arange(10)
    for func in (kw.sort, kw.argsort, lambda x, **k: kw.sort_segments(x, [0, 5], **k)):
        with pytest.raises(ValueError, match=">= 1"):
            func(a, threads=0)
        with pytest.raises(ValueError):
            func(a, threads=-2)
        with pytest.raises(TypeError):
            func(a, threads=1.0)
        with pytest.raises(TypeError):
            func(a, threads="2")
        with pytest.raises(TypeError):
            func(a, threads=True)
    np.testing.assert_array_equal(kw.sort(a[::-1], threads=np.int64(2)), a)


def test_options_are_keyword_only(kw):
    with pytest.raises(TypeError):
        kw.sort(np.arange(3), None, True)
    with pytest.raises(TypeError):
        kw.topk(np.arange(3), 1, -1, True)


def test_c_status_mapping():
    from kwker._errors import exception_for
    assert type(exception_for(1, "m")) is ValueError
    assert type(exception_for(2, "m")) is TypeError
    assert type(exception_for(3, "m")) is MemoryError
    assert type(exception_for(4, "m")) is ValueError
    assert type(exception_for(7, "m")) is RuntimeError
    assert str(exception_for(1, "the message")) == "the message"


def test_c_layer_errors_carry_last_error(backend):
    """Bypass the Python checks: the C status becomes the mapped exception with its message."""
    from kwker import _backend
    with pytest.raises(ValueError) as exc:  # threads < 0 is out of range for the C API
        _backend.impl.sort_copy(4, np.zeros(4, np.int64), np.zeros(4, np.int64), 0, -7)
    assert str(exc.value)
    if backend == "ctypes":  # the fast backend checks dtype codes before calling C
        with pytest.raises(TypeError) as exc:
            _backend.impl.sort_copy(99, np.zeros(4, np.int64), np.zeros(4, np.int64), 0, 0)
        assert str(exc.value)


def test_fast_rejects_wrong_sizes():
    from kwker import _backend
    _backend.use("fast")
    with pytest.raises(ValueError, match="expected"):
        _backend.impl.argsort(4, np.zeros(4, np.int64), np.zeros(3, np.int64), 0, 0)
    with pytest.raises(ValueError, match="unknown dtype code"):
        _backend.impl.sort_copy(42, np.zeros(4, np.int64), np.zeros(4, np.int64), 0, 0)
