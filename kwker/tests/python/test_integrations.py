"""The integration contract (kwker._integrations) as the four integrations use it: no private
imports between them, KWKER_DISABLE=1 the same way in each, one doctor format, the cache store,
loading compiled code only when it is safe, and the deprecated kwker:: operator aliases."""
import ast
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import kwker
from kwker import _cache, _doctor, _integrations

PKG = pathlib.Path(kwker.__file__).parent
INTEGRATIONS = ("frame", "torch_ops", "dynamo", "cpu_backend")


# --- no integration imports another's private modules ------------------------------------------

def _imports(path, package):
    """(line, module, names) of every import in a file, relative imports made absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = package.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield node.lineno, mod, [a.name for a in node.names]


def private_crossings(path, package):
    """What a file of integration `package` (kwker.<name>) imports that is private to another
    integration: kwker.<other>._x modules, or _x names from kwker.<other>."""
    own = package.split(".")[1]
    bad = []
    for line, mod, names in _imports(path, package):
        parts = mod.split(".")
        if len(parts) < 2 or parts[0] != "kwker" or parts[1] not in INTEGRATIONS or parts[1] == own:
            continue
        if any(p.startswith("_") for p in parts[2:]):
            bad.append(f"{path.name}:{line} imports {mod}")
        elif len(parts) == 2:
            bad += [f"{path.name}:{line} imports {mod}.{n}" for n in names if n.startswith("_")]
    return bad


def test_the_checker_finds_a_private_import(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("from kwker.torch_ops import _compiled\nimport kwker.cpu_backend._linear\n"
                 "from kwker.cpu_backend import optimize\nfrom ..torch_ops._kernels import K\n"
                 "from ._choice import Store\n")
    assert private_crossings(f, "kwker.dynamo") == [
        "x.py:1 imports kwker.torch_ops._compiled", "x.py:2 imports kwker.cpu_backend._linear",
        "x.py:4 imports kwker.torch_ops._kernels"]


@pytest.mark.parametrize("name", INTEGRATIONS)
def test_no_integration_imports_another_integrations_private_modules(name):
    bad = []
    for path in sorted((PKG / name).rglob("*.py")):
        package = ".".join(("kwker",) + path.relative_to(PKG).parts[:-1])
        bad += private_crossings(path, package)
    assert bad == [], (f"kwker.{name} imports another integration's private modules: "
                       f"{bad}; move what they share to kwker._torch (or another shared module)")


def test_no_integration_reaches_into_the_contracts_private_names():
    for name in INTEGRATIONS:
        for path in sorted((PKG / name).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id == "_integrations" and node.attr.startswith("_")):
                    pytest.fail(f"{path}:{node.lineno} uses _integrations.{node.attr}")


# --- one declaration, one status format, one doctor section ------------------------------------

def test_every_integration_declares_itself_and_reports_the_common_fields():
    import kwker.cpu_backend  # noqa: F401
    import kwker.dynamo  # noqa: F401
    import kwker.frame  # noqa: F401
    import kwker.torch_ops  # noqa: F401
    states = _integrations.status()
    common = {"name", "framework", "extra", "missing", "install_command", "installed",
              "disabled_by_env", "summary"}
    for name in INTEGRATIONS:
        assert common <= set(states[name]), (name, sorted(states[name]))
        assert states[name]["name"] == name
        assert "torch" in states[name]["framework"] or name == "frame"
    assert _integrations.get("frame").extra == "frame"
    assert _integrations.get("cpu_backend").extra == "llm"


def test_the_doctor_shows_all_four_integrations_in_one_format():
    out = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import json
        from kwker import _doctor
        states = _doctor._integration_states()
        lines = {n: _doctor._integration_line(n, s) for n, s in states.items()}
        print(json.dumps({"states": sorted(states), "lines": lines}))
    """)], capture_output=True, text=True, timeout=120, check=True,
        env={k: v for k, v in os.environ.items() if k != "KWKER_DISABLE"})
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(INTEGRATIONS) <= set(got["states"]), got["states"]
    for name in INTEGRATIONS:
        line = got["lines"][name]
        assert line.startswith("install(): not installed; enabled; "), (name, line)
    assert "kwker.dynamo" in _doctor.STATUS_MODULES


def test_the_lazy_import_names_the_extra_that_installs_it():
    import kwker.frame  # noqa: F401
    frame = _integrations.get("frame")
    with pytest.raises(ImportError, match=r'kwker.frame: sorting needs no_such_lib_kw, which is '
                                          r'not importable .*pip install "kwker\[frame\]"'):
        frame.require("no_such_lib_kw", "sorting")
    import kwker.cpu_backend  # noqa: F401
    with pytest.raises(ImportError, match=r'pip install "kwker\[llm\]"'):
        _integrations.get("cpu_backend").require("no_such_lib_kw", "load_gguf()")


# --- KWKER_DISABLE=1: the same in every integration --------------------------------------------

def _frame_entry():
    import pandas as pd

    import kwker.frame as kf
    df = pd.DataFrame({"a": [3, 1, 2]})
    assert kf.install() is False
    out = kf.sort_values(df, "a")
    pd.testing.assert_frame_equal(out, df.sort_values("a", kind="stable"))
    kf.uninstall()
    return "frame"


def _torch_ops_entry():
    import torch

    import kwker.torch_ops as to
    assert to.install() is False
    x = torch.tensor([3, 1, 2])
    assert torch.sort(x).values.tolist() == [1, 2, 3]
    return "torch_ops"


def _dynamo_entry():
    import torch

    import kwker.dynamo as dyn

    def f(x):
        return torch.sort(x).values
    gm = torch.fx.symbolic_trace(f)
    before = dyn.stats()["disabled"]
    fn = dyn.backend(gm, [torch.tensor([2.0, 1.0])])
    assert fn == gm.forward and dyn.stats()["disabled"] == before + 1
    return "dynamo"


def _cpu_backend_entry():
    import torch

    import kwker.cpu_backend as cb
    model = torch.nn.Sequential(torch.nn.Linear(8, 4))
    assert cb.optimize(model, "int8") is model
    assert type(model[0]) is torch.nn.Linear
    return "cpu_backend"


ENTRIES = {"frame": _frame_entry, "torch_ops": _torch_ops_entry, "dynamo": _dynamo_entry,
           "cpu_backend": _cpu_backend_entry}


@pytest.mark.parametrize("name", INTEGRATIONS)
def test_kwker_disable_turns_each_integration_off_the_same_way(name, monkeypatch, kwker_cache_dir):
    """Every entry point still runs, as if Kwker were absent; install() (explicit or implicit)
    changes nothing; one DisabledWarning per process names the integration; status() says so."""
    monkeypatch.setenv("KWKER_CACHE_DIR", str(kwker_cache_dir))
    import importlib
    importlib.import_module(f"kwker.{name}")
    _integrations.get(name).uninstall()    # earlier tests may have installed it in this process
    monkeypatch.setenv("KWKER_DISABLE", "1")
    with pytest.warns(_integrations.DisabledWarning) as caught:
        ENTRIES[name]()
    notices = [str(w.message) for w in caught if w.category is _integrations.DisabledWarning]
    assert len(notices) == 1 and notices[0].startswith(f"kwker.{name}: KWKER_DISABLE=1 is set; ")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", _integrations.DisabledWarning)
        ENTRIES[name]()                      # once per process: no second notice
    state = _integrations.status()[name]
    assert state["installed"] is False and state["disabled_by_env"] is True
    assert _integrations.get(name).doctor_line().startswith(
        "install(): not installed; disabled by KWKER_DISABLE=1; ")


# --- the cache store ---------------------------------------------------------------------------

def test_the_store_checks_schema_version_and_key(tmp_path, monkeypatch):
    monkeypatch.setenv("KWKER_CACHE_DIR", str(tmp_path))
    store = _cache.Store("thing", "kwker.test.thing", 2, prefix="t-")
    key = {"a": [1, 2], "b": "x"}
    assert store.get(key) == (None, None)
    path = store.put(key, {"value": 7})
    assert store.get(key) == ({"value": 7}, None)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "thing").st_mode & 0o777 == 0o700
    assert store.get({"a": [1, 2], "b": "y"}) == (None, None)       # another key: another file
    data = json.loads(pathlib.Path(path).read_text())
    for change, why in ((("schema", "kwker.other"), "not a kwker.test.thing file"),
                        (("schema_version", 1), "schema version 1, this Kwker reads 2"),
                        (("key", {"a": 0}), "written for another key")):
        pathlib.Path(path).write_text(json.dumps(dict(data, **dict([change]))))
        assert store.get(key) == (None, why)
    pathlib.Path(path).write_text("{half")
    payload, why = store.get(key)
    assert payload is None and why.startswith("JSONDecodeError")


# --- loading compiled code --------------------------------------------------------------------

@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """A real shared library (gcc) whose one function says it was loaded."""
    d = tmp_path_factory.mktemp("lib")
    src = d / "planted.c"
    src.write_text("int kw_planted(void) { return 42; }\n")
    so = d / "planted.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    return so


def _place(library, folder, mode=0o700):
    folder.mkdir(parents=True, exist_ok=True)
    so = folder / "lib.so"
    so.write_bytes(library.read_bytes())
    so.chmod(0o700)
    folder.chmod(mode)
    return so


def _load(path, top, sha=None):
    import ctypes
    return _cache.load_library(str(path), str(top), ctypes.CDLL, sha256=sha).kw_planted()


def test_a_private_library_loads(tmp_path, library):
    so = _place(library, tmp_path / "root" / "decoder")
    import hashlib
    assert _load(so, tmp_path / "root", hashlib.sha256(so.read_bytes()).hexdigest()) == 42


def test_a_library_in_a_group_writable_folder_is_refused(tmp_path, library):
    so = _place(library, tmp_path / "root" / "decoder", mode=0o770)
    with pytest.raises(_cache.UntrustedCode, match=r"decoder is writable by its group .*"
                                                    r"chmod go-w"):
        _load(so, tmp_path / "root")


def test_a_group_writable_folder_above_it_is_refused_too(tmp_path, library):
    so = _place(library, tmp_path / "root" / "decoder")
    (tmp_path / "root").chmod(0o777)
    with pytest.raises(_cache.UntrustedCode, match=r"root is writable by its group and everyone"):
        _load(so, tmp_path / "root")


def test_a_library_reached_through_a_symbolic_link_is_refused(tmp_path, library):
    folder = tmp_path / "root" / "decoder"
    real = _place(library, tmp_path / "elsewhere")
    folder.mkdir(parents=True)
    (folder / "lib.so").symlink_to(real)
    with pytest.raises(_cache.UntrustedCode, match=r"cannot be opened safely \(it is a symbolic "
                                                    r"link\)"):
        _load(folder / "lib.so", tmp_path / "root")


def test_a_linked_cache_folder_is_refused(tmp_path, library):
    _place(library, tmp_path / "real")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "decoder").symlink_to(tmp_path / "real")
    with pytest.raises(_cache.UntrustedCode, match=r"decoder is a symbolic link"):
        _load(tmp_path / "root" / "decoder" / "lib.so", tmp_path / "root")


def test_a_group_writable_library_and_wrong_bytes_are_refused(tmp_path, library):
    so = _place(library, tmp_path / "root" / "decoder")
    so.chmod(0o720)
    with pytest.raises(_cache.UntrustedCode, match=r"lib.so is writable by its group"):
        _load(so, tmp_path / "root")
    so.chmod(0o700)
    with pytest.raises(_cache.UntrustedCode, match=r"does not hold the bytes its manifest names"):
        _load(so, tmp_path / "root", "0" * 64)


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_library_another_user_owns_is_refused(tmp_path, library):
    so = _place(library, tmp_path / "root" / "decoder")
    os.chown(so, 4321, -1)
    with pytest.raises(_cache.UntrustedCode, match=r"belongs to uid 4321"):
        _load(so, tmp_path / "root")


# --- one operator namespace, and the deprecated kwker:: aliases ---------------------------------

OLD_PROGRAM = """
import sys, torch
from kwker._torch import extension, quant
torch.ops.load_library(extension.build_info()["library"])   # as Kwker 0.1 loaded it
ns = torch.ops.kwker_torch
# kwker::linear exactly as Kwker 0.1's compile backend defined it (kwker/dynamo/_ops.py then):
lib = torch.library.Library("kwker", "DEF")
lib.define("linear(Tensor x, Tensor packed, Tensor? bias, int mode, int n, int group, "
           "int threads) -> Tensor")
lib.impl("linear", lambda *a: ns.linear.default(*a), "CompositeExplicitAutograd")
torch.library.register_fake("kwker::linear")(
    lambda x, packed, bias, mode, n, group, threads: x.new_empty((*x.shape[:-1], n)))
torch.manual_seed(0)
w, b = torch.randn(16, 64), torch.randn(16)
packed = ns.linear_pack(2, *quant.quantize(w, "int8", "q8_0", 32), 32)

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("packed", packed)
        self.register_buffer("b", b)
    def forward(self, x):
        return torch.ops.kwker.linear(x, self.packed, self.b, 2, 16, 32, 1)

ep = torch.export.export(M(), (torch.randn(3, 64),))
assert "kwker.linear" in str(ep.graph), ep.graph
torch.export.save(ep, sys.argv[1])
torch.save({"packed": packed, "b": b}, sys.argv[2])
"""

LOAD_PROGRAM = """
import sys, warnings, torch
import kwker.dynamo
ns = kwker.dynamo.operators()
ep = torch.export.load(sys.argv[1])
saved = torch.load(sys.argv[2])
x = torch.randn(3, 64)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    y = ep.module()(x)
want = ns.linear(x, saved["packed"], saved["b"], 2, 16, 32, 1)
assert torch.equal(y, want), (y - want).abs().max()
notes = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
# Moving off the old names: renamed in place, saved again, loaded without the alias.
assert kwker.dynamo.migrate(ep) == 1 and "kwker.linear" not in str(ep.graph).replace("kwker_torch", "")
torch.export.save(ep, sys.argv[1] + ".new")
again = torch.export.load(sys.argv[1] + ".new")
with warnings.catch_warnings():
    warnings.simplefilter("error", FutureWarning)
    assert torch.equal(again.module()(x), want)
import json
print(json.dumps(notes))
"""


def test_an_exported_program_naming_the_old_linear_still_loads(tmp_path):
    from kwker._torch import extension
    if not extension.availability()[0]:
        pytest.skip(extension.availability()[1])
    prog, data = str(tmp_path / "old.pt2"), str(tmp_path / "w.pt")
    env = {k: v for k, v in os.environ.items() if k != "KWKER_DISABLE"}
    r = subprocess.run([sys.executable, "-c", OLD_PROGRAM, prog, data], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([sys.executable, "-c", LOAD_PROGRAM, prog, data], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    notes = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(notes) == 1 and notes[0].startswith(
        "torch.ops.kwker.linear is deprecated and goes in the next release: it is "
        "torch.ops.kwker_torch.linear now") and "kwker.dynamo.migrate(graph)" in notes[0]


def test_one_namespace_holds_every_operator_and_the_aliases_forward_to_it():
    import warnings

    import torch

    import kwker.dynamo
    ns = kwker.dynamo.operators()
    x = torch.tensor([[3.0, 1.0, 2.0, 1.0]])
    for name in ("sort", "argsort", "topk", "kthvalue"):
        assert hasattr(ns, name)
    args = {"sort": (x,), "argsort": (x,), "topk": (x, 2), "kthvalue": (x, 2)}
    from kwker._torch import ops
    ops._warned.clear()
    for name, a in args.items():
        with pytest.warns(FutureWarning, match=f"torch.ops.kwker.{name} is deprecated"):
            old = getattr(torch.ops.kwker, name)(*a)
        new = getattr(ns, name)(*a)
        old, new = (old if isinstance(old, tuple) else (old,)), (new if isinstance(new, tuple)
                                                                  else (new,))
        assert all(torch.equal(p, q) for p, q in zip(old, new))
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            getattr(torch.ops.kwker, name)(*a)       # once per process


def test_migrate_renames_a_graph_modules_old_calls_and_rejects_other_objects():
    import torch

    import kwker.dynamo
    kwker.dynamo.operators()
    g = torch.fx.Graph()
    x = g.placeholder("x")
    s = g.call_function(torch.ops.kwker.sort.default, (x, -1, False))
    t = g.call_function(torch.ops.kwker.topk, (x, 2))
    g.output((s, t))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    assert kwker.dynamo.migrate(gm) == 2
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [
        torch.ops.kwker_torch.sort.default, torch.ops.kwker_torch.topk]
    assert "torch.ops.kwker." not in gm.code
    xs = torch.tensor([3.0, 1.0, 2.0])
    assert torch.equal(gm(xs)[0][0], torch.tensor([1.0, 2.0, 3.0]))
    assert kwker.dynamo.migrate(gm) == 0
    with pytest.raises(TypeError, match="expected a torch.fx.GraphModule or a torch.export"):
        kwker.dynamo.migrate(torch.nn.Linear(2, 2))


def test_a_failing_report_keeps_the_common_fields_and_the_doctor_line():
    def broken():
        raise OSError("kwker_linear_kernel returned NULL")
    integ = _integrations.Integration("testing.broken", framework=("torch", "no_such_lib_kw"),
                                      extra="llm", extras={"torch": "torch"}, report=broken)
    state = integ.status()
    assert state["report_error"] == "OSError: kwker_linear_kernel returned NULL"
    assert state["disabled_by_env"] is False and state["missing"] == ["no_such_lib_kw"]
    assert state["install_command"] == 'pip install "kwker[llm]"'
    line = integ.doctor_line(state)
    assert line.startswith("install(): not installed; enabled; ") and "its report failed" in line
    assert integ.install_command == 'pip install "kwker[llm,torch]"'
    assert integ.doctor_line({}) == "status unavailable (its status query failed)"


def test_torch_integrations_point_at_the_pinned_torch_extra():
    import kwker.cpu_backend  # noqa: F401
    import kwker.dynamo  # noqa: F401
    import kwker.torch_ops  # noqa: F401
    for name in ("torch_ops", "dynamo"):
        assert _integrations.get(name).install_command == 'pip install "kwker[torch]"'
    assert _integrations.get("cpu_backend").install_command == 'pip install "kwker[llm,torch]"'
    cpu = _integrations.get("cpu_backend")
    assert cpu._command(["torch"]) == 'pip install "kwker[torch]"'
    assert cpu._command(["gguf"]) == 'pip install "kwker[llm]"'


def test_default_cache_folders_left_group_writable_are_tightened(tmp_path, monkeypatch):
    monkeypatch.delenv("KWKER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    old = tmp_path / "kwker" / "decoder"
    old.mkdir(parents=True)
    for p in (old.parent, old):
        p.chmod(0o775)                          # what a umask of 002 gave earlier builds
    assert _cache.folder("decoder") == str(old)
    assert [p.stat().st_mode & 0o777 for p in (old.parent, old)] == [0o755, 0o755]
    assert _cache.untrusted(str(old), str(old.parent)) is None
    chosen = tmp_path / "chosen"
    chosen.mkdir(mode=0o775)
    chosen.chmod(0o775)
    monkeypatch.setenv("KWKER_CACHE_DIR", str(chosen))
    _cache.folder("decoder")
    assert chosen.stat().st_mode & 0o777 == 0o775   # a folder the user chose keeps its mode


def test_a_failed_reinstall_puts_the_previous_install_back():
    log = []

    def install(ops):
        if ops == "bad":
            raise RuntimeError("cannot load")
        log.append(("on", ops))

    integ = _integrations.Integration("testing.reinstall", install, lambda: log.append("off"))
    assert integ.install(ops="sort") is True
    with pytest.raises(RuntimeError, match="cannot load"):
        integ.install(ops="bad")
    assert integ.installed is True and integ.options == {"ops": "sort"}
    assert log == [("on", "sort"), "off", ("on", "sort")]
