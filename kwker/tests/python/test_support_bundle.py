"""python -m kwker support-bundle: contents, privacy, options and failure handling."""
import json
import os
import subprocess
import sys
import tarfile

import pytest

import kwker
from kwker import _doctor
from kwker.tools import support_bundle as sb

SECRETS = {"AWS_SECRET_ACCESS_KEY": "kw-secret-123456", "MY_TOKEN": "kw-token-987654"}


def run(*args, cwd=None, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("KWKER_")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "kwker", "support-bundle", *args], env=full,
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def bundles(directory):
    return sorted(p for p in os.listdir(directory) if p.startswith("kwker-support-"))


def leftovers(directory):
    """Anything the tool may have left: bundles, temp files."""
    return sorted(p for p in os.listdir(directory) if "kwker-support" in p)


def read_members(path):
    with tarfile.open(path, "r:gz") as tar:
        out = {}
        for m in tar.getmembers():
            assert m.isfile(), m.name
            f = tar.extractfile(m)
            with f:
                out[m.name] = f.read()
    return out


def make(outdir, *args, **env):
    r = run(*args, "-o", str(outdir), **env)
    assert r.returncode == 0, r.stderr
    path = r.stdout.splitlines()[0]
    # It ends by saying where the bundle goes, as the troubleshooting page does.
    assert r.stdout.splitlines()[1:] == [
        "Send this file, with a few lines on what you ran and what happened, through the "
        "support form or to mail@kwker.io. It holds none of your data; every file in it is "
        "plain text or JSON that you can read before sending."]
    assert os.path.dirname(path) == str(outdir)
    assert bundles(outdir) == [os.path.basename(path)]
    return path, read_members(path)


def manifest_names(members):
    lines = members["MANIFEST.txt"].decode("utf-8").splitlines()
    return [ln.split()[0] for ln in lines if ln and not ln.startswith("#")]


# The doctor report self-checks every engine (seconds), so the subprocess runs are shared:
# one full bundle (with the probe, secrets and Kwker/threading variables in the environment)
# and one --no-probe --all-packages bundle written to the current directory.

@pytest.fixture(scope="module")
def full_bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    return make(out, KWKER_ISA="avx2", OMP_NUM_THREADS="3", **SECRETS)


@pytest.fixture(scope="module")
def all_packages_bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("cwd")
    r = run("--no-probe", "--all-packages", cwd=out)
    assert r.returncode == 0, r.stderr
    path = r.stdout.splitlines()[0]
    assert os.path.dirname(path) == str(out)
    assert bundles(out) == [os.path.basename(path)]
    return path, read_members(path)


def test_bundle_contents(full_bundle):
    path, members = full_bundle
    name = os.path.basename(path)
    assert name.startswith("kwker-support-") and name.endswith(".tar.gz")
    stamp = name[len("kwker-support-"):-len(".tar.gz")]
    assert len(stamp) == 15 and stamp[8] == "-" and stamp.replace("-", "").isdigit()
    assert set(members) == {"MANIFEST.txt", "doctor.json", "packages.txt", "environment.txt",
                            "cpu.txt", "limits.txt", "build.json", "probe.json"}
    # MANIFEST lists exactly the other files, with their sizes and a description
    listed = manifest_names(members)
    assert sorted(listed) == sorted(set(members) - {"MANIFEST.txt"})
    for ln in members["MANIFEST.txt"].decode("utf-8").splitlines():
        if ln and not ln.startswith("#"):
            fname, size, desc = ln.split(None, 2)
            assert int(size) == len(members[fname]) and desc.strip()
    for fname, data in members.items():
        text = data.decode("utf-8")
        if fname.endswith(".json"):
            json.loads(text)
    doctor = json.loads(members["doctor.json"])
    assert doctor["schema"] == "kwker.doctor"
    build = json.loads(members["build.json"])
    assert build["kwker_version"] == kwker.__version__
    assert build["abi_version"] == kwker.runtime_info()["abi_version"]
    assert "Py_GIL_DISABLED" in build["python"]
    packages = members["packages.txt"].decode()
    assert f"kwker {kwker.__version__}" in packages
    assert "numpy " in packages and "scikit-build-core " in packages


def test_no_private_environment(full_bundle):
    _, members = full_bundle
    for fname, data in members.items():
        for key, value in SECRETS.items():
            assert value.encode() not in data, (fname, key)
            assert key.encode() not in data, (fname, key)
    env = members["environment.txt"].decode().splitlines()
    assert "KWKER_ISA=avx2" in env and "OMP_NUM_THREADS=3" in env
    recorded = [ln.split("=", 1)[0] for ln in env if ln and not ln.startswith("#")]
    assert all(k.startswith("KWKER_") or k in sb.THREAD_VARS for k in recorded)
    assert "PATH" not in recorded and "HOME" not in recorded


def test_probe(full_bundle):
    _, members = full_bundle
    probe = json.loads(members["probe.json"])
    assert sorted(probe["engines"]) == sorted(kwker.available_isas())
    for engine, rep in probe["engines"].items():
        assert rep["correct"] is True, (engine, rep)
        for res in rep["results"]:
            assert res["sort_correct"] is True and res["argsort_correct"] is True
            assert res["sort_seconds"] >= 0 and res["argsort_seconds"] >= 0


def test_all_packages_and_default_dir(full_bundle, all_packages_bundle):
    _, default = full_bundle
    _, every = all_packages_bundle
    assert "probe.json" not in every and "probe.json" not in manifest_names(every)
    short = default["packages.txt"].decode().splitlines()
    full = every["packages.txt"].decode().splitlines()
    assert len(full) > len(short)
    assert any(ln.lower().startswith("pytest ") for ln in full)
    assert not any(ln.lower().startswith("pytest ") for ln in short)


def test_unknown_option(tmp_path):
    r = run("--bogus", cwd=tmp_path)
    assert r.returncode == 2
    assert "usage" in r.stderr and "--bogus" in r.stderr
    assert leftovers(tmp_path) == []


def test_impossible_destination(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a directory\n")
    dest = blocker / "sub"
    r = run("--no-probe", "-o", str(dest))
    assert r.returncode in (1, 2)
    assert str(dest) in r.stderr and "directory" in r.stderr
    assert r.stdout == ""
    assert sorted(os.listdir(tmp_path)) == ["file.txt"]
    assert blocker.read_text() == "not a directory\n"


def test_failure_midway_leaves_nothing(tmp_path, monkeypatch, capsys):
    calls = []

    def boom(opts):
        calls.append(1)
        raise OSError("disk fell off")

    monkeypatch.setattr(_doctor, "collect", lambda: {"schema": "kwker.doctor"})  # fast
    monkeypatch.setattr(sb, "limits_txt", boom)  # after doctor, packages, environment, cpu
    assert sb.main(["--no-probe", "-o", str(tmp_path)]) == 1
    assert calls == [1]
    err = capsys.readouterr().err
    assert "disk fell off" in err and "no bundle" in err
    assert os.listdir(tmp_path) == []


def test_failure_in_replace_leaves_nothing(tmp_path, monkeypatch):
    def no_replace(src, dst):
        raise OSError("replace failed")

    monkeypatch.setattr(_doctor, "collect", lambda: {"schema": "kwker.doctor"})  # fast
    monkeypatch.setattr(sb.os, "replace", no_replace)
    with pytest.raises(OSError):
        sb.write_bundle(str(tmp_path), probe=False)
    assert os.listdir(tmp_path) == []
