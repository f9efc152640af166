"""PyTorch smoke test against a non-editable wheel install (make test-wheel, run from /tmp):
the wheel's version names its torch, the compiled operators load and give torch's stable
results, the compile backend is found by name, and the doctor has no torch warning.

    python kwker/tests/smoke_torch.py            # the wheel as built
    python kwker/tests/smoke_torch.py mismatch   # a copy whose compiled operators claim torch 2.12
"""
import importlib.metadata as md
import json
import os
import subprocess
import sys
import tempfile

import torch

import kwker
import kwker.torch_ops as ops

os.environ["KWKER_CACHE_DIR"] = tempfile.mkdtemp(prefix="kwker-smoke-")
assert "site-packages" in kwker.__file__, kwker.__file__
mismatch = sys.argv[1:] == ["mismatch"]
minor = ".".join(torch.__version__.split(".")[:2])
version = md.version("kwker")
assert version.endswith("+torch" + ("2.12" if mismatch else minor)), version
# The `torch` extra requires the minor the compiled operators are built for, and no other.
built = version.rsplit("+torch", 1)[1]
pins = [r for r in md.requires("kwker") if r.startswith("torch") and 'extra == "torch"' in r]
major, low = built.split(".")
assert pins == [f'torch<{major}.{int(low) + 1},>={built}; extra == "torch"'], pins

x = torch.randn(300_000)
x[::11] = float("nan")
want = torch.sort(x, stable=True)
assert ops.install() is True
st = ops.status()
assert st["ops_on"] == list(ops.OPS), st
got = torch.sort(x)
assert torch.equal(got.indices, want.indices) and torch.equal(got.values.isnan(),
                                                              want.values.isnan())
doctor = json.loads(subprocess.run([sys.executable, "-m", "kwker", "doctor", "--json"],
                                   capture_output=True, text=True, check=True).stdout)
warnings = {w["id"]: w["message"] for w in doctor["warnings"]}
if mismatch:
    assert st["implementation"] == "python" and not st["compiled_available"], st
    assert warnings["torch-ops-version"].startswith(
        "the compiled PyTorch operators were built for torch 2.12.0, not " + md.version("torch")
    ), warnings
    try:
        ops.install(compiled=True)
    except RuntimeError as e:
        assert "built for torch 2.12.0" in str(e) and "+torch2.M" in str(e), e
    else:
        raise AssertionError("install(compiled=True) loaded operators built for another torch")
else:
    assert st["implementation"] == "compiled" and st["built_for_torch"] == torch.__version__, st
    assert "torch-ops-version" not in warnings and "torch-ops-mismatch" not in warnings, warnings
    ops.uninstall()
    step = torch.compile(lambda t: torch.topk(t, 5).values, backend="kwker",
                         options={"candidates": ["eager", "kwker"]})
    assert torch.equal(step(x[:1000].nan_to_num()), torch.topk(x[:1000].nan_to_num(), 5).values)
ops.uninstall()
print(f"torch smoke ok (kwker {version}, torch {torch.__version__}, "
      f"{'mismatch' if mismatch else st['implementation']})")
