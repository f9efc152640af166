import os
import stat

from compileiq.validate import provenance


def test_config_hash_is_canonical():
    a = provenance.config_hash({"b": 1, "a": [1, 2]})
    assert a == provenance.config_hash({"a": [1, 2], "b": 1}) and len(a) == 64
    assert a != provenance.config_hash({"a": [1, 2], "b": 2})


def test_config_hash_of_a_controls_file_is_its_sha256(tmp_path):
    import hashlib

    f = tmp_path / "x.acf"
    f.write_bytes(b"\x00controls")
    assert provenance.config_hash({"ignored": 1}, controls=f) == hashlib.sha256(b"\x00controls").hexdigest()


def test_parse_version_of_real_banners():
    assert provenance.parse_version("Cuda compilation tools, release 13.0, V13.0.88") == "13.0.88"
    assert provenance.parse_version("gcc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright") == "12.2.0"
    assert provenance.parse_version("Debian clang version 14.0.6\nTarget: x86_64") == "14.0.6"
    assert provenance.parse_version("no version") is None


def test_ciq_ptxas_is_the_ptxas_recorded(tmp_path, monkeypatch):
    fake = tmp_path / "my-ptxas"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.9, V12.9.41'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("CIQ_PTXAS", str(fake))
    assert provenance.compilers()["ptxas"] == {"version": "12.9.41", "path": str(fake)}
    assert f"ptxas 12.9.41 ({fake})" in provenance.compilers_text()


def test_missing_and_broken_tools_are_recorded_not_raised(tmp_path, monkeypatch):
    broken = tmp_path / "gcc"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CIQ_PTXAS", raising=False)
    assert provenance.compilers() == {"gcc": {"version": None, "path": str(broken)}}
    assert provenance.machine()["cpu"]
    assert os.environ["PATH"] == str(tmp_path)
