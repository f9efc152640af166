"""Timing a cubin on the GPU through the CUDA driver API (cuda-python): load, launch, CUDA events.

The kernel is loaded from the cubin a candidate produced, so what is timed is exactly what ptxas
built, with no framework cache in between. Each timed launch sits between two CUDA events on one
stream; between repeats a buffer twice the size of L2 is overwritten so every launch starts with
a cold L2, as a kernel inside a real workload usually does.

Every function raises GpuUnavailableError, naming the cause, when cuda-python, the NVIDIA driver
or a device is missing.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any, Sequence

from ..utils.gpu import GpuUnavailableError
from .cpu_timing import TimingResult

_lock = threading.Lock()
_contexts: dict[int, Any] = {}
# a CUDA context does not survive fork: a forked worker (IsoMultiProcessWorker, CIQ_PROCESS_MODE=fork)
# must create its own instead of using the parent's dead one
os.register_at_fork(after_in_child=_contexts.clear)


class GpuError(RuntimeError):
    """A CUDA driver call failed on a machine that has a GPU (bad launch, bad cubin, ...)."""


def _driver():
    try:
        from cuda.bindings import driver  # cuda-python >= 12.6
    except ImportError:
        try:
            from cuda import cuda as driver  # older cuda-python layout
        except ImportError:
            raise GpuUnavailableError("cuda-python is not installed, so CompileIQ cannot load or time cubins; "
                                      "install it with `pip install cuda-python`") from None
    return driver


def _check(result, what: str):
    drv = _driver()
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        name = drv.cuGetErrorName(err)[1]
        name = name.decode() if isinstance(name, bytes) else str(err)
        raise GpuError(f"{what} failed: {name}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


def _context(device: int):
    """The primary context of ``device``, made current on this thread (created once per process)."""
    drv = _driver()
    with _lock:
        if device not in _contexts:
            try:
                err, = drv.cuInit(0)
            except Exception as exc:  # cuda-python raises when libcuda.so itself is missing
                raise GpuUnavailableError(f"the NVIDIA driver (libcuda) could not be loaded: {exc}".rstrip()) from None
            if err != drv.CUresult.CUDA_SUCCESS:
                raise GpuUnavailableError(f"cuInit failed ({err}): the NVIDIA driver is not usable on this machine")
            count = _check(drv.cuDeviceGetCount(), "cuDeviceGetCount")
            if count == 0 or device >= count:
                raise GpuUnavailableError(f"GPU {device} requested but the driver sees {count} GPU(s)"
                                          + (" (check CUDA_VISIBLE_DEVICES)" if "CUDA_VISIBLE_DEVICES" in os.environ else ""))
            dev = _check(drv.cuDeviceGet(device), "cuDeviceGet")
            ctx = _check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
            _contexts[device] = (dev, ctx)
        dev, ctx = _contexts[device]
    _check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return dev


def gpu_available(device: int = 0) -> bool:
    try:
        _context(device)
    except GpuUnavailableError:
        return False
    return True


def require_gpu(device: int = 0) -> None:
    """Raise GpuUnavailableError (saying why) unless a GPU can run kernels here."""
    _context(device)


def device_arch(device: int = 0) -> str:
    """The ptxas architecture name of ``device``, e.g. "sm_90" for an H100/H200."""
    drv = _driver()
    dev = _context(device)
    attr = drv.CUdevice_attribute
    major = _check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
    minor = _check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
    return f"sm_{major}{minor}"


class DeviceBuffer:
    """``nbytes`` of device memory; pass it as a kernel argument. Use ``with`` or ``free()``."""

    def __init__(self, nbytes: int, device: int = 0):
        _context(device)
        self.nbytes = int(nbytes)
        self.ptr = _check(_driver().cuMemAlloc(self.nbytes), f"cuMemAlloc({self.nbytes})")

    @classmethod
    def from_array(cls, array, device: int = 0) -> "DeviceBuffer":
        """A device copy of a contiguous (numpy) array."""
        buf = cls(array.nbytes, device)
        buf.upload(array)
        return buf

    def upload(self, array) -> None:
        _check(_driver().cuMemcpyHtoD(self.ptr, array.ctypes.data, array.nbytes), "cuMemcpyHtoD")

    def download(self, array) -> None:
        _check(_driver().cuMemcpyDtoH(array.ctypes.data, self.ptr, array.nbytes), "cuMemcpyDtoH")

    def fill(self, byte: int = 0) -> None:
        _check(_driver().cuMemsetD8(self.ptr, byte, self.nbytes), "cuMemsetD8")

    def free(self) -> None:
        if self.ptr is not None:
            _check(_driver().cuMemFree(self.ptr), "cuMemFree")
            self.ptr = None

    def __enter__(self) -> "DeviceBuffer":
        return self

    def __exit__(self, *exc) -> None:
        self.free()


class CubinKernel:
    """One kernel of a cubin (or fatbin), loaded into the primary context of ``device``."""

    def __init__(self, cubin: str | os.PathLike | bytes, name: str, device: int = 0):
        self.device = device
        _context(device)
        drv = _driver()
        image = cubin if isinstance(cubin, bytes) else Path(cubin).read_bytes()
        self.module = _check(drv.cuModuleLoadData(image), f"cuModuleLoadData({cubin if not isinstance(cubin, bytes) else 'bytes'})")
        self.name = name
        try:
            self.function = _check(drv.cuModuleGetFunction(self.module, name.encode()), f"cuModuleGetFunction({name!r})")
        except GpuError as exc:
            raise GpuError(f"{exc}; is {name!r} the kernel's (extern \"C\" or mangled) name in the cubin?") from None

    def launch(self, grid: Sequence[int], block: Sequence[int], args: Sequence, shared_mem: int = 0, stream=None) -> None:
        drv = _driver()
        g = (tuple(grid) + (1, 1, 1))[:3]
        b = (tuple(block) + (1, 1, 1))[:3]
        _check(drv.cuLaunchKernel(self.function, *g, *b, int(shared_mem), stream if stream is not None else 0, kernel_params(args), 0),
               f"cuLaunchKernel({self.name})")

    def unload(self) -> None:
        if self.module is not None:
            _check(_driver().cuModuleUnload(self.module), "cuModuleUnload")
            self.module = None


def kernel_params(args: Sequence) -> tuple:
    """cuda-python's (values, types) form: buffers become pointers, ints int32, floats float32.

    Give ``(value, ctypes_type)`` for any other parameter type (e.g. ``(n, ctypes.c_size_t)``).
    """
    values, types = [], []
    for a in args:
        if isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], type):
            values.append(a[0])
            types.append(a[1])
        elif isinstance(a, DeviceBuffer):
            values.append(int(a.ptr))
            types.append(ctypes.c_void_p)
        elif isinstance(a, bool) or isinstance(a, int):
            values.append(int(a))
            types.append(ctypes.c_int)
        elif isinstance(a, float):
            values.append(a)
            types.append(ctypes.c_float)
        else:
            try:
                values.append(int(a))  # a raw CUdeviceptr
                types.append(ctypes.c_void_p)
            except (TypeError, ValueError):
                raise TypeError(f"kernel argument {a!r}: pass a DeviceBuffer, an int, a float or (value, ctypes type)") from None
    return (tuple(values), tuple(types))


def time_kernel(cubin: str | os.PathLike | bytes, name: str, grid: Sequence[int], block: Sequence[int],
                args: Sequence, *, shared_mem: int = 0, warmup: int = 10, repeats: int = 50,
                flush_l2: bool = True, device: int = 0) -> TimingResult:
    """Seconds per launch of kernel ``name`` from ``cubin``, measured with CUDA events (median, p5/p95, CV).

    ``warmup`` untimed launches first; then ``repeats`` timed ones, each preceded (outside the
    events) by an L2 flush when ``flush_l2``.
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"time_kernel(warmup={warmup}, repeats={repeats}): need warmup >= 0 and repeats >= 1")
    drv = _driver()
    dev = _context(device)
    kernel = CubinKernel(cubin, name, device)
    stream = _check(drv.cuStreamCreate(0), "cuStreamCreate")
    start = _check(drv.cuEventCreate(0), "cuEventCreate")
    stop = _check(drv.cuEventCreate(0), "cuEventCreate")
    scratch = None
    try:
        if flush_l2:
            l2 = _check(drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev),
                        "cuDeviceGetAttribute(L2_CACHE_SIZE)")
            scratch = DeviceBuffer(max(2 * int(l2), 1 << 20), device)
        for _ in range(warmup):
            kernel.launch(grid, block, args, shared_mem, stream)
        _check(drv.cuStreamSynchronize(stream), "cuStreamSynchronize")
        samples = []
        for i in range(repeats):
            if scratch is not None:
                _check(drv.cuMemsetD8Async(scratch.ptr, i & 0xFF, scratch.nbytes, stream), "cuMemsetD8Async")
            _check(drv.cuEventRecord(start, stream), "cuEventRecord")
            kernel.launch(grid, block, args, shared_mem, stream)
            _check(drv.cuEventRecord(stop, stream), "cuEventRecord")
            _check(drv.cuEventSynchronize(stop), "cuEventSynchronize")
            ms = _check(drv.cuEventElapsedTime(start, stop), "cuEventElapsedTime")
            samples.append(float(ms) / 1e3)
    finally:
        if scratch is not None:
            scratch.free()
        drv.cuEventDestroy(start)
        drv.cuEventDestroy(stop)
        drv.cuStreamDestroy(stream)
        kernel.unload()
    return TimingResult(samples=tuple(samples), warmup=warmup, cpu=None)


__all__ = ["time_kernel", "device_arch", "CubinKernel", "DeviceBuffer", "kernel_params", "gpu_available", "require_gpu",
           "GpuError", "GpuUnavailableError"]
