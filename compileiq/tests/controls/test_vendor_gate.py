"""Vendor ACFs: CUDA 13.3+ and a dry compile that accepts the file, checked at setup with both versions named.

A valid vendor ACF cannot be produced here (they are encrypted; only NVIDIA's library writes them),
so the accepting path runs only when CIQ_TEST_VALID_ACF names one (and CIQ_TEST_VALID_ACF_PTXAS the
ptxas of its CUDA version); otherwise it is skipped with that reason.
"""

import os
from pathlib import Path

import pytest

from compileiq.compilers.discovery import find_ptxas, toolchain_at
from compileiq.controls import MIN_CUDA, VendorAcfError, check_vendor_acf, controls_args

REPO = Path(__file__).resolve().parents[3]
TOOLCHAINS = Path(os.environ.get("CIQ_TEST_TOOLCHAINS") or REPO / "build" / "toolchains")


def wheel_tool(minor, name="ptxas"):
    path = TOOLCHAINS / f"cuda-{minor}" / "nvidia" / "cu13" / "bin" / name
    if not path.is_file():
        pytest.skip(f"{path} is missing: run compileiq/scripts/install_toolchains.sh {TOOLCHAINS}")
    return toolchain_at(name, path)


@pytest.fixture
def fake_acf(tmp_path):
    path = tmp_path / "random.acf"
    path.write_bytes(os.urandom(2400))  # the size of a real ptxas ACF, but not one
    return path


def test_cuda_13_0_is_refused_with_the_reason_before_any_compile(fake_acf):
    tc = find_ptxas()
    if tc.version >= MIN_CUDA:
        pytest.skip(f"the installed ptxas is CUDA {tc.version_str}; this test needs one older than 13.3")
    with pytest.raises(VendorAcfError) as info:
        controls_args(fake_acf, "ptxas")
    msg = str(info.value)
    assert "needs CUDA 13.3 or newer" in msg and f"is CUDA {tc.version_str}" in msg and "CIQ_PTXAS" in msg


@pytest.mark.parametrize("minor", ["13.3", "13.5"])
def test_a_file_ptxas_refuses_fails_at_setup_naming_the_version(fake_acf, minor):
    tc = wheel_tool(minor)
    with pytest.raises(VendorAcfError) as info:
        controls_args(fake_acf, tc)
    msg = str(info.value)
    assert "Invalid compiler controls file" in msg and f"this compiler is CUDA {minor}" in msg and str(fake_acf) in msg


def test_nvcc_probes_the_file_too(fake_acf):
    tc = wheel_tool("13.5", "nvcc")
    with pytest.raises(VendorAcfError, match=r"nvcc 13.5.37 .* refuses the ACF .*Invalid compiler controls file"):
        check_vendor_acf(fake_acf, tc)


def test_gcc_cannot_apply_a_vendor_acf(fake_acf):
    with pytest.raises(VendorAcfError, match="only ptxas and nvcc read those, not gcc"):
        controls_args(fake_acf, "gcc")


def test_a_valid_acf_is_applied_with_apply_controls():
    acf, ptxas = os.environ.get("CIQ_TEST_VALID_ACF"), os.environ.get("CIQ_TEST_VALID_ACF_PTXAS")
    if not acf or not ptxas:
        pytest.skip("no valid vendor ACF is available here (ACFs are encrypted and only NVIDIA's library makes "
                    "them); set CIQ_TEST_VALID_ACF and CIQ_TEST_VALID_ACF_PTXAS to run this")
    args = controls_args(acf, toolchain_at("ptxas", ptxas))
    assert args == ["--apply-controls", acf] and args.kind == "vendor"
