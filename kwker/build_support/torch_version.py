"""The wheel's version, for scikit-build-core's [[tool.dynamic-metadata]] (see pyproject.toml).

The base version is CMakeLists.txt's `project(kwker VERSION x.y.z)` (kwker.__version__ comes
from there too). When the compiled PyTorch operators are built, which happens when torch
imports in the build environment and KWKER_BUILD_TORCH_OPS is not 0 (the same test as
python/_torch_ops/torch_ops.cmake), the local version `+torch<major>.<minor>` names the torch
they are built for: kwker-0.1.0+torch2.13, whose `torch` extra is torch>=2.13,<2.14.
"""
import os
import re


def base_version():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(here, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(\s*kwker\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("kwker build: CMakeLists.txt has no `project(kwker VERSION x.y.z)`")
    return m.group(1)


def torch_local():
    """'torch2.13' when the compiled operators will be built, else None."""
    if os.environ.get("KWKER_BUILD_TORCH_OPS") == "0":
        return None
    try:
        import torch
    except Exception:
        return None
    m = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return f"torch{m.group(1)}.{m.group(2)}" if m else None


def torch_requirement(local):
    """The `torch` extra: the minor the compiled operators are built for ('torch2.13' ->
    torch>=2.13,<2.14; they load in no other, libtorch's C++ ABI changes between minors), or any
    torch when only the Python-registered operators ship."""
    if not local:
        return "torch"
    major, minor = (int(x) for x in local[len("torch"):].split("."))
    return f"torch>={major}.{minor},<{major}.{minor + 1}"


def dynamic_metadata(settings, project):
    local = torch_local()
    return {"version": base_version() + (f"+{local}" if local else ""),
            "optional-dependencies": {"torch": [torch_requirement(local)]}}
