"""The package description says what the package does today: each integration is named there
exactly when it exists in this build (so the description grows as integrations land)."""
import importlib.metadata
import importlib.util

import pytest

INTEGRATIONS = {  # module -> the words the description uses for it
    "kwker.frame": "pandas, Polars and Dask dataframes",
    "kwker.torch_ops": "PyTorch",
    "kwker.cpu_backend": "CPU inference",
}


@pytest.mark.parametrize("module", sorted(INTEGRATIONS))
def test_description_names_an_integration_exactly_when_it_exists(module):
    summary = importlib.metadata.metadata("kwker")["Summary"]
    exists = importlib.util.find_spec(module) is not None
    assert (INTEGRATIONS[module] in summary) == exists, (module, summary)


def test_description_names_the_core():
    summary = importlib.metadata.metadata("kwker")["Summary"]
    assert summary.startswith("Fast sorting for NumPy arrays")
    for feature in ("stable argsort", "top-k", "SIMD engines"):
        assert feature in summary


def test_the_torch_extra_pins_the_minor_the_compiled_operators_are_built_for():
    # A wheel +torch2.13 loads its compiled operators in torch 2.13 only (libtorch's C++ ABI
    # changes between minors), so `pip install "kwker[torch]"` must not pick another minor.
    version = importlib.metadata.version("kwker")
    pins = [r for r in importlib.metadata.requires("kwker")
            if r.startswith("torch") and 'extra == "torch"' in r]
    if "+torch" in version:
        major, minor = version.rsplit("+torch", 1)[1].split(".")
        assert pins == [f'torch<{major}.{int(minor) + 1},>={major}.{minor}; extra == "torch"'], pins
    else:  # only the Python-registered operators: any torch
        assert pins == ['torch; extra == "torch"'], pins
