"""Doctor warnings: each rule fires on its condition. Where this machine cannot produce a
condition, the test replaces only the facts the rule reads (CPU flags, the torch version, the
GIL state, an integration's status), never the rule."""
import copy
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import kwker
from kwker import _backend, _locate, _warnings


def _facts(**changes):
    f = _warnings.facts(kwker.runtime_info(), _backend.name)
    f = copy.deepcopy(f)
    for key, value in changes.items():
        f[key] = value
    return f


def _ids(f):
    return {w["id"]: w for w in _warnings.evaluate(f)}


def _doctor_json(env_extra, *prefix):
    env = dict(os.environ, **env_extra)
    r = subprocess.run([*prefix, sys.executable, "-m", "kwker", "doctor", "--json"], env=env,
                       capture_output=True, text=True)
    return r.returncode, json.loads(r.stdout)


def test_a_plain_process_here_has_no_warning_for_engine_or_backend():
    ids = _ids(_facts())
    assert "engine-capped" not in ids and "fast-path-missing" not in ids and "no-avx2" not in ids


def test_engine_capped_by_the_environment_names_the_variable():
    supported = kwker.runtime_info()["engines"]["supported"]
    if supported[-1] == "portable":
        pytest.skip("this CPU runs only the portable engine, so nothing can cap it")
    rc, report = _doctor_json({"KWKER_ISA": "portable"})
    assert rc == 0
    w = {x["id"]: x for x in report["warnings"]}["engine-capped"]
    assert w["message"] == ("the engine is capped at portable by KWKER_ISA in the environment "
                            f"although this CPU runs {supported[-1]}")
    assert "set_isa(None)" in w["fix"]


def test_engine_capped_by_set_isa_names_the_call():
    with kwker.config(isa="portable"):
        f = _facts()
    if f["runtime"]["engines"]["supported"][-1] == "portable":
        pytest.skip("this CPU runs only the portable engine")
    assert "kwker.set_isa(...) call" in _ids(f)["engine-capped"]["message"]


def test_no_avx2_on_an_x86_cpu_without_it():
    f = _facts(machine="x86_64")
    f["runtime"]["cpu"]["features"].update({"avx2": False, "sse4.2": True})
    w = _ids(f)["no-avx2"]
    assert w["message"].startswith("this x86-64 CPU has no AVX2: Kwker is using its sse4.2 engine")
    assert "host-passthrough" in w["fix"]
    f["runtime"]["cpu"]["features"]["sse4.2"] = False
    assert "its portable engine" in _ids(f)["no-avx2"]["message"]
    assert "no-avx2" not in _ids(_facts(machine="aarch64"))


def test_torch_operators_built_for_another_torch():
    f = _facts(torch_version="2.13.0+cpu", status={"torch_ops": {"built_for_torch": "2.12.1"}})
    w = _ids(f)["torch-ops-version"]
    assert w["message"].startswith("the compiled PyTorch operators were built for torch 2.12.1, "
                                   "not 2.13.0+cpu")
    assert 'torch.compile(backend="kwker") with a CPU-backend mode compiles in float32' in \
        w["message"]
    assert "+torch2.M" in w["fix"]
    same = _facts(torch_version="2.13.0+cpu", status={"torch_ops": {"built_for_torch": "2.13"}})
    assert "torch-ops-version" not in _ids(same)


def test_torch_overrides_that_failed_the_self_check():
    f = _facts(status={"torch_ops": {"self_check_failed": ["topk", "argsort"]}})
    w = _ids(f)["torch-ops-mismatch"]
    assert w["message"].endswith("stay off: argsort, topk")
    assert "KWKER_SELF_CHECK=force" in w["fix"]


def test_amx_kernels_off_on_an_amx_cpu():
    f = _facts(status={"cpu_backend": {"amx": {"on": False, "reason": "kernel 5.15 < 5.16"}}})
    f["runtime"]["cpu"]["features"]["amx"] = True
    assert "(kernel 5.15 < 5.16)" in _ids(f)["amx-off"]["message"]
    f["environ"] = {"KWKER_AMX": "0"}
    assert "(KWKER_AMX=0 is set)" in _ids(f)["amx-off"]["message"]
    f["status"]["cpu_backend"]["amx"]["on"] = True
    assert "amx-off" not in _ids(f)


@pytest.mark.skipif(shutil.which("taskset") is None or os.cpu_count() < 2,
                    reason="needs taskset and at least 2 CPUs to restrict the affinity mask")
def test_process_on_a_subset_of_cpus_for_real():
    rc, report = _doctor_json({}, "taskset", "-c", "0")
    total = report["runtime"]["threads"]["hardware"]
    w = {x["id"]: x for x in report["warnings"]}["cpu-subset"]
    assert w["message"] == (f"this process may run on 1 of {total} CPUs "
                            "(a CPU affinity mask is in force)")


def test_container_cpu_limit():
    f = _facts()
    f["runtime"]["threads"].update({"hardware": 8, "affinity": 8, "cgroup_limit": 2.0})
    assert _ids(f)["cpu-subset"]["message"] == ("this process may run on 2 of 8 CPUs "
                                                "(a container CPU limit is in force)")


def test_fast_path_off_by_choice_for_real_says_so_and_measures_the_cost():
    rc, report = _doctor_json({"KWKER_BACKEND": "ctypes"})
    assert rc == 0 and report["package"]["backend"] == "ctypes"
    w = {x["id"]: x for x in report["warnings"]}["fast-path-missing"]
    assert "off because KWKER_BACKEND=ctypes is set" in w["message"]
    m = re.search(r"costs ([0-9.]+) us per call here against ([0-9.]+) us with _fast "
                  r"\(measured now, 8-element sort\)", w["message"])
    assert m and float(m.group(1)) > float(m.group(2)) > 0, w["message"]
    assert w["fix"] == "Unset KWKER_BACKEND to use the fast path (it loads in this environment)."
    assert "5-10" not in w["message"] and "reinstall" not in w["fix"]


def test_fast_path_that_failed_to_load_gives_the_reason_and_the_reinstall_fix():
    f = _facts(backend="ctypes", environ={},
               backend_fallback="the _fast extension did not load (ImportError: x); using ctypes",
               overhead={"elements": 8, "numpy": 5e-7, "ctypes": 3e-6, "fast": None})
    w = _ids(f)["fast-path-missing"]
    assert w["message"] == (
        "the compiled per-call fast path (_fast) is not loaded: calls go through ctypes, which "
        "costs 3.0 us per call here (measured now, 8-element sort; np.sort takes 0.5 us) (the "
        "_fast extension did not load (ImportError: x); using ctypes)")
    assert "reinstall the wheel" in w["fix"]


def test_a_failed_self_check_is_a_warning_that_names_the_engine_and_a_good_one():
    f = _facts(self_check={"portable": {"ok": True}, "avx2": {"ok": False},
                           "avx512": {"ok": True}})
    w = _ids(f)["self-check-failed"]
    assert w["message"] == ("the self-check of engine avx2 gave wrong results or failed to "
                            "run: do not trust sorts on it")
    assert "KWKER_ISA=avx512" in w["fix"] and "support-bundle" in w["fix"]
    assert "self-check-failed" not in _ids(_facts(self_check={"avx2": {"ok": True}}))


def test_free_threaded_python_with_the_gil_enabled():
    assert _ids(_facts(free_threaded_build=True, gil_enabled=True))["gil-enabled"]["message"] \
        == "free-threaded Python with the GIL enabled"
    assert "gil-enabled" not in _ids(_facts(free_threaded_build=True, gil_enabled=False))
    assert "gil-enabled" not in _ids(_facts(free_threaded_build=False, gil_enabled=True))


def test_a_broken_rule_reports_itself_instead_of_crashing():
    f = _facts()
    f["runtime"] = {"engines": None}  # malformed facts
    out = _warnings.evaluate(f)
    assert any("this check failed" in w["message"] for w in out)


def test_both_doctors_exit_1_and_name_a_corrupted_engine():
    engine = kwker.available_isas()[-1]  # the engine in use: the one that matters most
    env = dict(os.environ, KWKER_TEST_CORRUPT_ENGINE=engine)
    r = subprocess.run([sys.executable, "-m", "kwker", "doctor"], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 1
    line = [l for l in r.stdout.splitlines() if l.strip().startswith(engine + " ")]
    assert line and "FAILED" in line[0], r.stdout
    assert f"the self-check of engine {engine} gave wrong results" in r.stdout
    assert "nothing known keeps Kwker below its best" not in r.stdout
    others = [e for e in kwker.available_isas() if e != engine]
    assert all(f"{e} " in r.stdout for e in others)
    native = _locate.sdk_paths()["doctor"]
    r = subprocess.run([native], env=env, capture_output=True, text=True)
    assert r.returncode == 1
    assert f"{engine}: WRONG RESULTS: self_check: engine {engine} gave" in r.stdout
    r = subprocess.run([native, "--json"], env=env, capture_output=True, text=True)
    report = json.loads(r.stdout)
    assert report["runtime_info"]["schema"] == "kwker.runtime_info"
    assert r.returncode == 1 and report["self_check"][engine]["ok"] is False
    assert all(report["self_check"][e]["ok"] for e in others)


def test_decoder_generic_when_no_compiler_or_a_failed_build():
    dp = {"compiler": None, "compiler_reason": "no C++ compiler at run time (install g++ or set "
                                               "CXX)", "last": None}
    w = _ids(_facts(status={"cpu_backend": {"decoder_packages": dp}}))["decoder-generic"]
    assert "generic precompiled kernels" in w["message"] and "no C++ compiler" in w["message"]
    assert "CXX" in w["fix"]
    ok = {"compiler": "g++", "compiler_reason": None,
          "last": {"kind": "generic", "reason": "building the decoder package failed: boom"}}
    assert "failed: boom" in _ids(_facts(status={"cpu_backend": {"decoder_packages": ok}}))[
        "decoder-generic"]["message"]
    ok["last"] = {"kind": "generic", "reason": 'decoder="generic" was asked for'}
    assert "decoder-generic" not in _ids(_facts(status={"cpu_backend": {"decoder_packages": ok}}))
    ok["last"] = {"kind": "package", "reason": "compiled in 1.0 s"}
    assert "decoder-generic" not in _ids(_facts(status={"cpu_backend": {"decoder_packages": ok}}))
