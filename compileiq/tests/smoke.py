"""Run against the non-editable wheel: the package imports, its data files are inside, a search runs in workers."""
from importlib import resources

import compileiq
import compileiq.search_spaces.base as ss
from compileiq import Search, SearchConfiguration

assert compileiq.__version__ != "0.0.0+unknown", compileiq.__version__
assert (resources.files("compileiq.examples") / "stencil.c").is_file(), "examples/stencil.c missing from the wheel"
assert (resources.files("compileiq.examples") / "spill_kernel.ptx").is_file(), "examples/spill_kernel.ptx missing from the wheel"
spaces = resources.files("compileiq") / "spaces"
assert (spaces / "manifest.json").is_file(), "spaces/manifest.json missing from the wheel"


def objective(cfg):
    return (cfg["a"] - 3) ** 2


if __name__ == "__main__":
    res = Search(objective, {"a": ss.range(0, 7)}, SearchConfiguration(generations=2, pool_size=6, seed=1),
                 disable_progress_bar=True).start(num_workers=2)
    assert res.get_best_result()["params"] == {"a": 3}, res.get_best_result()
    from compileiq.search_spaces.compilers import GccSearchSpace
    assert GccSearchSpace().retrieve()
    print("compileiq smoke ok", compileiq.__version__)
