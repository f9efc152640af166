"""Test-only helpers. `echo` is an integration whose visible output changes when installed, so
tests (and audit) can check that KWKER_DISABLE really turns integrations off."""
from .. import _integrations

_state = {"suffix": ""}


def greeting():
    """'hello' normally; 'hello from kwker' while the echo integration is installed."""
    return "hello" + _state["suffix"]


def _install():
    _state["suffix"] = " from kwker"


def _uninstall():
    _state["suffix"] = ""


echo = _integrations.register("testing.echo", _install, _uninstall)
