"""KWKER_DISABLE: the one switch every integration's install() goes through."""
import os
import subprocess
import sys

import pytest

from kwker import _integrations
from kwker.testing import echo, greeting


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv("KWKER_DISABLE", raising=False)
    echo.uninstall()
    yield
    echo.uninstall()


def test_install_changes_the_output_and_uninstall_restores_it():
    assert greeting() == "hello"
    assert echo.install() is True
    assert greeting() == "hello from kwker"
    state = _integrations.status()["testing.echo"]
    assert (state["installed"], state["disabled_by_env"]) == (True, False)
    echo.uninstall()
    assert greeting() == "hello"


def test_kwker_disable_makes_install_a_no_op(monkeypatch):
    monkeypatch.setenv("KWKER_DISABLE", "1")
    with pytest.warns(_integrations.DisabledWarning, match="testing.echo: KWKER_DISABLE=1 is set"):
        assert echo.install() is False
    assert echo.install() is False          # the notice comes once per process
    assert greeting() == "hello"
    state = _integrations.status()["testing.echo"]
    assert (state["installed"], state["disabled_by_env"]) == (False, True)
    monkeypatch.setenv("KWKER_DISABLE", "0")
    assert echo.install() is True and greeting() == "hello from kwker"


def test_invalid_value_is_rejected_with_the_fix(monkeypatch):
    monkeypatch.setenv("KWKER_DISABLE", "yes")
    with pytest.raises(ValueError, match=r"KWKER_DISABLE='yes' is not valid: set KWKER_DISABLE=1"):
        echo.install()
    assert greeting() == "hello"


def test_disable_from_the_environment_of_a_fresh_process():
    code = "from kwker.testing import echo, greeting; echo.install(); print(greeting())"
    env = dict(os.environ, KWKER_DISABLE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "hello"
    env["KWKER_DISABLE"] = "0"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "hello from kwker"


def test_registering_twice_returns_the_same_integration():
    again = _integrations.register("testing.echo", lambda: None, lambda: None)
    assert again is echo
