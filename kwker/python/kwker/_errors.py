"""Map kwker_status codes to Python exceptions (shared by both backends)."""

OK = 0
E_INVALID_ARGUMENT = 1
E_DTYPE = 2
E_NO_MEMORY = 3
E_UNSUPPORTED_ISA = 4
E_BUFFER_TOO_SMALL = 5
E_SELF_CHECK_FAILED = 6
E_INTERNAL = 7

# The _fast extension applies the same table in C (fast.c: raise_status); keep them in step.
_EXCEPTIONS = {
    E_INVALID_ARGUMENT: ValueError,
    E_DTYPE: TypeError,
    E_NO_MEMORY: MemoryError,
    E_UNSUPPORTED_ISA: ValueError,
}


def exception_for(status, message):
    """The exception a failing C call with `status` raises; message is kwker_last_error()."""
    cls = _EXCEPTIONS.get(status, RuntimeError)
    if not message:
        message = f"libkwker call failed with status {status} and no message"
    return cls(message)
