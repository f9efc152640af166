import logging
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # shared test helpers (_blockrun) import by name


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Every test gets its own cache folder, so no test writes to ~/.cache/compileiq."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.delenv("CIQ_KEEP_CACHE", raising=False)
    yield


@pytest.fixture
def ciq_log(caplog):
    caplog.set_level(logging.INFO, logger="compileiq")
    return caplog
