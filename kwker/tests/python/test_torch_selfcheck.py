"""The install-time self-check: it passes on the whole battery for both implementations, really
keeps a differing override off (a wrong kernel injected through the test-only switch), the
doctor then names it, and its result is cached per configuration: reused by a later process,
re-run with KWKER_SELF_CHECK=force, rebuilt with a warning when the file is corrupt."""
import json
import os
import subprocess
import sys

import pytest
import torch

import kwker
from kwker import _backend, _warnings
from kwker._torch import extension
from kwker.torch_ops import _compiled, _python_ops, _selfcheck, _selfcheck_cache

KINDS = ("python", "compiled")


def _kernels(kind):
    return _compiled.CompiledKernels() if kind == "compiled" else _python_ops.PythonKernels()


@pytest.mark.parametrize("kind", KINDS)
def test_the_whole_battery_matches_torch(torch_ops, kind):
    results = _selfcheck.run(_kernels(kind), list(torch_ops.OPS))
    assert {op: (r["ok"], r["detail"]) for op, r in results.items()} == \
        {op: (True, "") for op in torch_ops.OPS}
    assert all(r["cases"] > 600 for r in results.values())


def test_the_battery_covers_every_dtype_dim_and_layout():
    labels = [label for label, _, _ in _selfcheck.cases(torch.float32)]
    assert {"n=0", "n=1", "n=65537", "n=120001", "transposed dim=0", "strided dim=1",
            "expanded dim=0", "shape=(0, 4) dim=0", "shape=(3, 5, 7) dim=2"} <= set(labels)
    assert set(_selfcheck.DTYPES) == {torch.bool, torch.int8, torch.int16, torch.int32,
                                      torch.int64, torch.uint8, torch.uint16, torch.uint32,
                                      torch.uint64, torch.float16, torch.bfloat16, torch.float32,
                                      torch.float64}
    x = next(t for label, t, _ in _selfcheck.cases(torch.float32) if label == "n=20001")
    assert torch.isnan(x).any() and (x == float("inf")).any() and (x == float("-inf")).any()
    assert (torch.signbit(x) & (x == 0)).any() and (~torch.signbit(x) & (x == 0)).any()
    u = next(t for label, t, _ in _selfcheck.cases(torch.uint64) if label == "n=20001")
    assert (u.view(torch.int64) == -1).any() and (u.view(torch.int64) == 0).any()


@pytest.mark.parametrize("kind", KINDS)
def test_a_differing_override_stays_off_and_the_doctor_names_it(torch_ops, monkeypatch, kind):
    monkeypatch.setenv("KWKER_TEST_CORRUPT_TORCH_OP", "topk")
    before = torch._C._dispatch_dump("aten::topk")
    with pytest.warns(RuntimeWarning, match="these PyTorch overrides differ from this torch's "
                                            "own kernels and stay off: topk"):
        torch_ops.install(compiled=kind == "compiled")
    st = torch_ops.status()
    assert st["self_check_failed"] == ["topk"] and "largest" in st["self_check_detail"]["topk"]
    assert st["ops_on"] == ["sort", "kthvalue", "unique"]
    assert torch._C._dispatch_dump("aten::topk") == before  # torch's own topk runs
    x = torch.randn(5000)
    v, i = torch.topk(x, 10)
    assert torch.equal(i, torch.sort(x, descending=True, stable=True)[1][:10])
    facts = _warnings.facts(kwker.runtime_info(), _backend.name)
    warning = {w["id"]: w for w in _warnings.evaluate(facts)}["torch-ops-mismatch"]
    assert warning["message"] == ("these PyTorch overrides differ from this torch's own kernels "
                                  "and stay off: topk")
    assert "KWKER_SELF_CHECK=force" in warning["fix"]
    # The doctor of another process reads the cached result of this machine's check.
    r = subprocess.run([sys.executable, "-m", "kwker", "doctor", "--json"], capture_output=True,
                       text=True, env=dict(os.environ))
    ids = {w["id"] for w in json.loads(r.stdout)["warnings"]}
    if kind == "compiled":  # the implementation a fresh install() picks here
        assert "torch-ops-mismatch" in ids


def _install_in_subprocess(env_extra):
    code = ("import json, kwker.torch_ops as t; t.install(); s = t.status(); "
            "print(json.dumps(s['self_check']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, **env_extra))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def test_a_second_process_reuses_the_cached_result_and_force_reruns(tmp_path):
    env = {"KWKER_CACHE_DIR": str(tmp_path)}
    first, _ = _install_in_subprocess(env)
    assert first["source"] == "run" and os.path.isfile(first["file"])
    second, _ = _install_in_subprocess(env)
    assert second == first | {"source": "cache"}
    forced, _ = _install_in_subprocess(dict(env, KWKER_SELF_CHECK="force"))
    assert forced["source"] == "run"


def test_a_corrupt_cache_file_is_rebuilt_with_a_warning(torch_ops, kwker_cache_dir):
    torch_ops.install(compiled=False)
    path = torch_ops.status()["self_check"]["file"]
    torch_ops.uninstall()
    with open(path, "w") as f:
        f.write('{"schema": "kwker.torch_ops.self_check", "results": {"sort": ')  # cut short
    with pytest.warns(RuntimeWarning, match="self-check cache .* was unreadable .*runs again"):
        torch_ops.install(compiled=False)
    assert torch_ops.status()["self_check"]["source"] == "run"
    assert torch_ops.status()["ops_on"] == list(torch_ops.OPS)
    with open(path) as f:
        assert json.load(f)["schema"] == _selfcheck_cache.SCHEMA


def test_an_invalid_self_check_setting_is_rejected_before_any_change(torch_ops, monkeypatch):
    monkeypatch.setenv("KWKER_SELF_CHECK", "always")
    before = torch._C._dispatch_dump("aten::sort.stable")
    with pytest.raises(ValueError, match=r"KWKER_SELF_CHECK='always' is not valid: set "
                                         r"KWKER_SELF_CHECK=force to re-run"):
        torch_ops.install()
    assert torch._C._dispatch_dump("aten::sort.stable") == before
    assert torch_ops.status()["installed"] is False


def test_the_cache_key_names_torch_kwker_cpu_and_engine():
    key = _selfcheck_cache.key("python")
    assert key["torch"] == extension.running_torch() and key["implementation"] == "python"
    assert key["kwker"] == kwker.__version__ and key["engine"] == kwker.get_isa()
    assert key["cpu"] and key["features"]
    assert _selfcheck_cache.path("python") != _selfcheck_cache.path("compiled")
    others = [e for e in kwker.available_isas() if e != kwker.get_isa()]
    if not others:
        pytest.skip("this CPU runs one engine only")
    with kwker.config(isa=others[0]):
        assert _selfcheck_cache.key("python")["engine"] == others[0]
        other_path = _selfcheck_cache.path("python")
    assert other_path != _selfcheck_cache.path("python")
