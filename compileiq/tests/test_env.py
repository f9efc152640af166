"""CIQ_* variables: read only in compileiq/_env.py, every one documented there and checked by the doctor."""

import ast
import re
from pathlib import Path

import pytest

import compileiq
from compileiq import _env
from compileiq.errors import ConfigurationError

PACKAGE = Path(compileiq.__file__).parent
ENV_MODULE = PACKAGE / "_env.py"
_ENVIRON = {"environ", "getenv", "environb", "getenvb"}


def _touches_environ(node: ast.AST) -> bool:
    return any((isinstance(n, ast.Attribute) and n.attr in _ENVIRON) or (isinstance(n, ast.Name) and n.id in _ENVIRON)
               for n in ast.walk(node))


def _names_ciq(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and "CIQ_" in n.value for n in ast.walk(node))


def ciq_environ_reads(source: str, filename: str = "<src>") -> list[int]:
    """Lines of statements that touch os.environ / os.getenv and name a "CIQ_..." string in the same
    statement (a compound statement counts its header only: an `if` test, a `for` iterable)."""
    hits = []
    for stmt in ast.walk(ast.parse(source, filename)):
        if not isinstance(stmt, ast.stmt):
            continue
        own = [c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.expr)]
        if any(_touches_environ(e) for e in own) and any(_names_ciq(e) for e in own):
            hits.append(stmt.lineno)
    return hits


@pytest.mark.parametrize("snippet", [
    'import os\nx = os.environ.get("CIQ_NCU")',
    'import os\nx = os.getenv("CIQ_NCU", "")',
    'from os import environ\nx = environ["CIQ_KEEP_CACHE"]',
    'import os\nif "CIQ_X" in os.environ:\n    pass',
    'import os\nenv = {k: v for k, v in os.environ.items() if k.startswith("CIQ_")}',
    'import os\nx = os.environ.get(f"CIQ_{name.upper()}")',
    'import os\nfor k in (v for v in os.environ if v.startswith("CIQ_")):\n    pass',
])
def test_the_scan_sees_every_way_of_reading_a_variable(snippet):
    assert ciq_environ_reads(snippet)


def test_the_scan_ignores_messages_and_other_variables():
    assert not ciq_environ_reads('import os\nx = os.environ.get("CUDA_HOME")\nmsg = "set CIQ_PTXAS"\n'
                                 'if x:\n    y = "raise CIQ_SOCKET_TIMEOUT"\n')


def test_no_module_but_env_reads_a_ciq_variable():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == ENV_MODULE:
            continue
        for line in ciq_environ_reads(path.read_text(encoding="utf-8"), str(path)):
            offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    assert not offenders, ("CIQ_* variables are parsed only in compileiq/_env.py (one place that validates them and "
                           "that the doctor checks); add a function there and call it from: " + ", ".join(offenders))


def _table() -> set[str]:
    rows = [ln for ln in _env.__doc__.splitlines() if ln.startswith("| CIQ_")]
    return {name for ln in rows for name in re.findall(r"CIQ_[A-Z_]+", ln.split("|")[1])}


def test_every_variable_env_reads_is_in_its_table_and_every_checked_one_is_read():
    tree = ast.parse(ENV_MODULE.read_text(encoding="utf-8"))
    read = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and re.fullmatch(r"CIQ_[A-Z_]+", n.value)}
    read |= {_env.compiler_variable(c) for c in ("ptxas", "nvcc", "gcc", "clang")}
    assert read == _table()
    assert set(_env.CHECKED) <= _table()


@pytest.mark.parametrize("var, value, needle", [
    ("CIQ_SEARCH_SPACES_URL", "file:///tmp/spaces", "not an http(s) URL"),
    ("CIQ_SEARCH_SPACES_DIR", "/no/such/folder", "is not a folder"),
    ("CIQ_DOWNLOAD_TIMEOUT", "0", "not a finite number >= 0.1"),
    ("CIQ_SS_LATEST_TTL_DAYS", "inf", "not a finite number >= 0"),
    ("CIQ_PROCESS_MODE", "thread", "not a start method"),
])
def test_bad_values_are_refused_by_name_here_and_in_the_doctor(monkeypatch, var, value, needle):
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigurationError, match=re.escape(f"{var}={value!r}") + ".*" + re.escape(needle)):
        _env.CHECKED[var]()
    from compileiq.doctor.checks import Report, check_environment
    r = Report()
    check_environment(r)
    assert r.facts["ciq_environment"][var] == value
    bad = [p for p in r.problems if p.check == f"env:{var}"]
    assert bad and bad[0].severity == "error" and needle in bad[0].cause and var in bad[0].fix


def test_binary_names_are_read_trimmed_and_empty_means_unset(monkeypatch):
    monkeypatch.setenv("CIQ_NCU", "  /opt/ncu/ncu ")
    monkeypatch.setenv("CIQ_GCC", "")
    assert _env.ncu_override() == "/opt/ncu/ncu" and _env.compiler_override("gcc") is None
    assert _env.compiler_variable("ptxas") == "CIQ_PTXAS"
    monkeypatch.delenv("CIQ_NCU")
    assert _env.ncu_override() is None
    assert all(k.startswith("CIQ_") for k in _env.ciq_variables())
