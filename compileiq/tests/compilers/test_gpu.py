"""GPU helpers: without a GPU they raise GpuUnavailableError naming the cause; nvidia-smi handling is
checked against a stand-in nvidia-smi that records its arguments."""

import os
import stat
import textwrap

import pytest

from compileiq.compilers import gpu_timing
from compileiq.utils import gpu
from compileiq.utils.gpu import GpuBenchmarkModeError, GpuBenchmarkModeWarning, GpuUnavailableError


def _gpu_reason():
    try:
        gpu_timing.require_gpu()
    except GpuUnavailableError as exc:
        return str(exc)
    return None


NO_GPU = _gpu_reason()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"no usable GPU: {NO_GPU}")


@pytest.mark.skipif(NO_GPU is None, reason="a GPU is present, so nothing is unavailable")
def test_gpu_functions_raise_gpu_unavailable_here(spill_ptx, tmp_path):
    for call in (gpu_timing.require_gpu, gpu_timing.device_arch, lambda: gpu_timing.DeviceBuffer(16),
                 lambda: gpu_timing.time_kernel(tmp_path / "x.cubin", "k", (1,), (1,), [])):
        with pytest.raises(GpuUnavailableError) as info:
            call()
        assert str(info.value) == NO_GPU and ("cuda-python" in NO_GPU or "driver" in NO_GPU or "GPU" in NO_GPU)
    assert gpu_timing.gpu_available() is False


@needs_gpu
def test_time_kernel_on_the_spill_kernel(spill_ptx, tmp_path):
    import numpy as np

    from compileiq.compilers import ptxas
    arch = gpu_timing.device_arch()
    cubin = ptxas(spill_ptx, arch=arch, out=tmp_path / "k.cubin").artifact
    n = 256
    a = np.ones((n, n), np.float32)
    b = np.full((n, n), 2.0, np.float32)
    c = np.zeros((n, n), np.float32)
    with gpu_timing.DeviceBuffer.from_array(a) as da, gpu_timing.DeviceBuffer.from_array(b) as db, \
            gpu_timing.DeviceBuffer(c.nbytes) as dc:
        k = gpu_timing.CubinKernel(cubin, "spill_kernel")
        k.launch((n // 128, n // 128), (16, 16), [da, db, dc, n])
        dc.download(c)
        k.unload()
        assert np.allclose(c, 2.0 * n)
        t = gpu_timing.time_kernel(cubin, "spill_kernel", (n // 128, n // 128), (16, 16), [da, db, dc, n],
                                   warmup=2, repeats=5)
    assert len(t.samples) == 5 and t.median > 0


def _fake_smi(tmp_path, fail_on: str = "") -> tuple:
    """An nvidia-smi stand-in on PATH that logs each call and fails for arguments containing ``fail_on``."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "smi.log"
    script = bindir / "nvidia-smi"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        echo "$*" >> {log}
        case "$*" in
          *--query-gpu=power.limit*) echo "700.00"; exit 0;;
          *--query-gpu=index*) echo "0, NVIDIA H200, 580.65.06, 1980, 3201, 1980, Active"; exit 0;;
        esac
        if [ -n "{fail_on}" ]; then case "$*" in *{fail_on}*) echo "Insufficient Permissions" >&2; exit 4;; esac; fi
        exit 0
        """))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bindir, log


def test_benchmark_mode_locks_and_resets(tmp_path, monkeypatch):
    bindir, log = _fake_smi(tmp_path)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    with gpu.gpu_benchmark_mode(clock_mhz=1500, mem_clock_mhz=(2600, 3200), power_watts=500, gpu_id=[0, 1],
                                with_sudo=False):
        inside = log.read_text().splitlines()
    after = log.read_text().splitlines()[len(inside):]
    assert inside == ["-i 0,1 -lgc 1500,1500", "-i 0,1 -lmc 2600,3200",
                      "-i 0,1 --query-gpu=power.limit --format=csv,noheader,nounits", "-i 0,1 -pl 500"]
    assert after == ["-i 0,1 -pl 700", "-i 0,1 -rmc", "-i 0,1 -rgc"]  # undone in reverse order


def test_benchmark_mode_resets_when_the_block_raises(tmp_path, monkeypatch):
    bindir, log = _fake_smi(tmp_path)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(KeyError):
        with gpu.gpu_benchmark_mode(clock_mhz=1500, with_sudo=False):
            raise KeyError("boom")
    assert log.read_text().splitlines() == ["-lgc 1500,1500", "-rgc"]


def test_benchmark_mode_failure_raises_or_warns(tmp_path, monkeypatch):
    bindir, log = _fake_smi(tmp_path, fail_on="-lmc")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(GpuBenchmarkModeError, match="could not lock memory clocks .*Insufficient Permissions.*root"):
        with gpu.gpu_benchmark_mode(clock_mhz=1500, mem_clock_mhz=3000, with_sudo=False):
            pass
    assert log.read_text().splitlines()[-1] == "-rgc"  # what was locked is reset before raising
    with pytest.warns(GpuBenchmarkModeWarning, match="could not lock memory clocks"):
        with gpu.gpu_benchmark_mode(clock_mhz=1500, mem_clock_mhz=3000, with_sudo=False, raise_on_failure=False):
            pass


def test_list_gpus_parses_nvidia_smi(tmp_path, monkeypatch):
    bindir, _ = _fake_smi(tmp_path)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert gpu.has_nvidia_smi()
    (g,) = gpu.list_gpus()
    assert (g.index, g.name, g.driver, g.sm_clock_mhz, g.clocks_locked) == (0, "NVIDIA H200", "580.65.06", 1980, True)


def test_without_nvidia_smi(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not gpu.has_nvidia_smi()
    with pytest.raises(GpuUnavailableError, match="nvidia-smi is not on PATH"):
        gpu.list_gpus()
    with pytest.raises(GpuUnavailableError, match="nvidia-smi is not on PATH"):
        with gpu.gpu_benchmark_mode(clock_mhz=1500):
            pass
    with pytest.warns(GpuBenchmarkModeWarning, match="nvidia-smi not found"):
        with gpu.gpu_benchmark_mode(clock_mhz=1500, raise_on_failure=False):
            pass


def test_bad_clock_values_are_refused():
    with pytest.raises(ValueError, match="clock_mhz"):
        with gpu.gpu_benchmark_mode(clock_mhz=(1, 2, 3)):
            pass


def test_ctk_supports_compileiq(tmp_path):
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.5, V13.5.37'\n")
    fake.chmod(0o755)
    assert gpu.ctk_supports_compileiq(fake) is True
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    assert gpu.ctk_supports_compileiq(fake) is False
    assert gpu.ctk_supports_compileiq(tmp_path / "missing") is False
