"""docs/nvidia-compatibility.md stays honest: what it calls same or differs exists, what it calls
not provided does not, and the environment variables it claims are read by the package."""

import importlib
import re
from pathlib import Path

import pytest

PRODUCT = Path(__file__).resolve().parents[2]
PAGE = (PRODUCT / "docs" / "nvidia-compatibility.md").read_text(encoding="utf-8")
ROW = re.compile(r"^\| `([\w.]+)` \| (same|differs|not provided) \|", re.M)
ROWS = ROW.findall(PAGE)
SOURCE = "\n".join(p.read_text(encoding="utf-8") for p in (PRODUCT / "src" / "compileiq").rglob("*.py"))


def resolve(dotted: str):
    """Import the longest module prefix of ``dotted`` and walk the rest as attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def test_the_page_lists_the_whole_api():
    names = {n for n, _ in ROWS}
    assert len(ROWS) == len(names) >= 110, "every row once"
    for must in ("compileiq.utils.validation.Score", "compileiq.backends.EngineConfig", "compileiq.worker.ManualWorker",
                 "compileiq.types.MultiScoreComparison", "compileiq.search_spaces.models.RangeParamConfig",
                 "compileiq.ciq.Search.evaluate", "compileiq.tracker.MLflowTracker", "CIQ_KEEP_CACHE"):
        assert must in names


@pytest.mark.parametrize("name, status", [r for r in ROWS if not r[0].startswith("CIQ_")], ids=lambda v: str(v))
def test_each_name_is_what_the_page_says(name, status):
    if status == "not provided":
        with pytest.raises((ImportError, AttributeError)):
            resolve(name)
    else:
        assert resolve(name) is not None


@pytest.mark.parametrize("var, status", [r for r in ROWS if r[0].startswith("CIQ_")], ids=lambda v: str(v))
def test_each_environment_variable_is_what_the_page_says(var, status):
    read = re.search(rf"\b{var}\b", SOURCE) is not None
    assert read == (status != "not provided"), f"{var}: the page says {status}"
