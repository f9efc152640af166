"""Providers: which space a compiler gets, what fails before a search starts, and searches over them."""

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess

import pytest

import compileiq.search_spaces.base as ss
from compileiq import Search, SearchConfiguration
from compileiq.compilers.discovery import CompilerNotFoundError, find_ptxas
from compileiq.controls import controls_args, read_controls
from compileiq.errors import SearchFailedError
from compileiq.search_spaces.compilers import (ClangSearchSpace, GccSearchSpace, LocalSearchSpaceBin, NvccSearchSpace,
                                               PtxasSearchSpace)
from compileiq.search_spaces.errors import (CompilerTooOldError, EncryptedSearchSpaceError, SearchSpaceWarning,
                                            SpaceFileError, SpaceNotFoundError)
from compileiq.search_spaces.resolver import shipped_dir, shipped_manifest
from compileiq.utils.helpers import save_compiler_config
from compileiq.worker import SequentialWorker

PTX = """.version 8.0
.target sm_75
.address_size 64

.visible .entry k(.param .u64 p_x, .param .u32 p_n)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<8>;
\t.reg .f32 %f<8>;
\t.reg .b64 %rd<8>;
\tld.param.u64 %rd1, [p_x];
\tld.param.u32 %r1, [p_n];
\tcvta.to.global.u64 %rd3, %rd1;
\tmov.u32 %r4, %tid.x;
\tmul.wide.s32 %rd5, %r4, 4;
\tadd.s64 %rd6, %rd3, %rd5;
\tmov.f32 %f1, 0f00000000;
\tmov.u32 %r6, 0;
LOOP:
\tld.global.f32 %f2, [%rd6];
\tsqrt.rn.f32 %f3, %f2;
\tdiv.rn.f32 %f5, %f2, %f3;
\tfma.rn.f32 %f1, %f1, %f5, %f2;
\tadd.s32 %r6, %r6, 1;
\tsetp.lt.s32 %p2, %r6, %r1;
\t@%p2 bra LOOP;
\tst.global.f32 [%rd6], %f1;
\tret;
}
"""


def fake_ptxas(folder, release):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ptxas"
    path.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.1'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_version_none_uses_the_installed_ptxas_and_records_where_the_space_came_from():
    tc = find_ptxas()
    p = PtxasSearchSpace()
    path = p.retrieve()
    meta = p.resolution_metadata
    assert meta["compiler"] == "ptxas" and meta["compiler_version"] == "%d.%d" % tc.version
    assert meta["source"] == "shipped" and meta["requested_tag"] == "latest"
    assert meta["resolved_tag"] == shipped_manifest().tag and meta["path"] == path
    with open(path, "rb") as fh:
        data = fh.read()
    assert meta["sha256"] == hashlib.sha256(data).hexdigest() and meta["size_bytes"] == len(data)
    assert set(meta) >= {"variant", "filename", "description"}


@pytest.mark.parametrize("release, expected", [("13.5", "13.5"), ("13.3", "13.3"), ("13.0", "13.0")])
def test_the_space_follows_the_ptxas_named_by_CIQ_PTXAS(tmp_path, monkeypatch, release, expected):
    monkeypatch.setenv("CIQ_PTXAS", fake_ptxas(tmp_path, release))
    p = PtxasSearchSpace()
    p.to_component()
    assert p.resolution_metadata["compiler_version"] == expected


def test_a_version_between_shipped_ones_takes_the_nearest_lower_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("CIQ_PTXAS", fake_ptxas(tmp_path, "13.4"))
    p = PtxasSearchSpace()
    with pytest.warns(SearchSpaceWarning, match=r"no ptxas 13.4 space .* nearest lower version 13.3"):
        p.to_component()
    assert p.resolution_metadata["compiler_version"] == "13.3"


def test_a_ptxas_older_than_every_space_fails_before_the_search(tmp_path, monkeypatch):
    monkeypatch.setenv("CIQ_PTXAS", fake_ptxas(tmp_path, "12.8"))
    with pytest.raises(CompilerTooOldError, match=r"ptxas 12.8 is older than every ptxas space .* install ptxas 13.0"):
        Search(lambda c: 1.0, PtxasSearchSpace(), SearchConfiguration(generations=1), worker_type=SequentialWorker)


def test_asking_for_a_space_newer_than_the_compiler_fails_unless_it_is_for_another_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("CIQ_PTXAS", fake_ptxas(tmp_path, "13.0"))
    with pytest.raises(CompilerTooOldError, match=r"ptxas 13.0 .* is older than the ptxas 13.5 space.*check_compiler=False"):
        PtxasSearchSpace(version="13.5").to_component()
    assert PtxasSearchSpace(version="13.5", check_compiler=False).to_component().compiler_version == "13.5"


def test_a_missing_compiler_fails_at_construction_or_at_to_component(tmp_path, monkeypatch):
    monkeypatch.setenv("CIQ_PTXAS", str(tmp_path / "nope"))
    with pytest.raises(CompilerNotFoundError, match="CIQ_PTXAS="):
        PtxasSearchSpace()
    with pytest.raises(CompilerNotFoundError, match="check_compiler=False to build the space for another machine"):
        PtxasSearchSpace(version="13.5").to_component()


def test_unknown_versions_and_variants_list_what_exists():
    with pytest.raises(SpaceNotFoundError, match=r"no ptxas 13.4 space .* versions there: 13.0, 13.3, 13.5"):
        PtxasSearchSpace(version="13.4", check_compiler=False).to_component()
    with pytest.raises(SpaceNotFoundError, match=r"ptxas has no variant 'att' .* variants: default"):
        PtxasSearchSpace(version="13.5", variant="att", check_compiler=False).to_component()
    with pytest.raises(SpaceFileError, match=r"give the version as text such as \"13.5\""):
        PtxasSearchSpace(version=13.5)
    with pytest.raises(SpaceFileError, match="lowercase name"):
        PtxasSearchSpace(version="13.5", variant="Default!")


def test_every_provider_builds_a_component_for_the_installed_compiler():
    for cls in (PtxasSearchSpace, NvccSearchSpace, GccSearchSpace, ClangSearchSpace):
        try:
            p = cls()
        except CompilerNotFoundError as exc:
            pytest.skip(str(exc))
        comp = p.to_component()
        assert comp.compiler == cls.compiler and len(comp.genes) >= 10
        assert p.toolchain.name == cls.compiler


def test_a_corrupt_space_file_in_a_mirror_fails_before_the_search(tmp_path, monkeypatch):
    bad = b'{"format": "compileiq-space", "format_version": 1, "knobs": [}'
    (tmp_path / "ptxas-13.5-default.json").write_bytes(bad)
    (tmp_path / "manifest.json").write_text(json.dumps({"manifest_format": "1", "tag": "m", "entries": [
        {"compiler": "ptxas", "compiler_version": "13.5", "variant": "default", "filename": "ptxas-13.5-default.json",
         "sha256": hashlib.sha256(bad).hexdigest(), "size_bytes": len(bad)}]}))
    monkeypatch.setenv("CIQ_SEARCH_SPACES_DIR", str(tmp_path))
    with pytest.raises(SpaceFileError, match=r"ptxas-13.5-default.json: not valid JSON at line 1 column \d+"):
        Search(lambda c: 1.0, PtxasSearchSpace(version="13.5", check_compiler=False),
               SearchConfiguration(generations=1), worker_type=SequentialWorker)


def test_local_files_load_and_encrypted_vendor_files_are_refused(tmp_path):
    mine = tmp_path / "my-gcc.json"
    shutil.copy(shipped_dir() / "gcc-12-default.json", mine)
    local = LocalSearchSpaceBin(mine)
    assert local.to_component().compiler == "gcc"
    assert local.resolution_metadata["source"] == "local" and local.resolution_metadata["path"] == str(mine)
    vendor = tmp_path / "ptxas13.3_search_space.bin"
    vendor.write_bytes(os.urandom(13632))
    with pytest.raises(EncryptedSearchSpaceError, match=r"encrypted vendor search space .*AcfCatalogSpace"):
        LocalSearchSpaceBin(vendor)
    with pytest.raises(SpaceFileError, match="is not a file"):
        LocalSearchSpaceBin(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(SpaceFileError, match="not valid JSON"):
        LocalSearchSpaceBin(broken).to_component()


def _compile_ptx(config, folder):
    """An objective's body: registers used by the kernel under the candidate's ptxas options."""
    os.makedirs(folder, exist_ok=True)
    ptx = os.path.join(folder, "k.ptx")
    with open(ptx, "w") as fh:
        fh.write(PTX)
    ctl = os.path.join(folder, "cand.ctl")
    save_compiler_config(ctl, config)
    with controls_args(ctl, "ptxas") as args:
        proc = subprocess.run([find_ptxas().path, "-arch=sm_90", "-v", ptx, "-o", os.path.join(folder, "k.cubin"), *args],
                              capture_output=True, text=True, timeout=60)
    if proc.returncode:
        raise RuntimeError(proc.stderr)
    return int(re.search(r"Used (\d+) registers", proc.stderr).group(1))


def test_a_search_over_the_ptxas_space_and_a_mixed_space(tmp_path):
    seen = []

    def objective(params):
        user, config = params
        seen.append(read_controls_hex(config))
        return _compile_ptx(config, str(tmp_path / "eval")) + user["bias"]

    cfg = SearchConfiguration(generations=2, pool_size=6, seed=3)
    result = Search(objective, [{"bias": ss.choice([0, 1])}, PtxasSearchSpace()], cfg, worker_type=SequentialWorker,
                    disable_progress_bar=True).start()
    assert len(result.get_results()) >= 6
    assert all(c.compiler == "ptxas" for c in seen) and len({c.options for c in seen}) > 1
    result = Search(lambda c: _compile_ptx(c, str(tmp_path / "single")), PtxasSearchSpace(), cfg,
                    worker_type=SequentialWorker, disable_progress_bar=True).start()
    best = result.get_best_result()
    assert isinstance(best["params"], str) and bytes.fromhex(best["params"]).startswith(b"# compileiq-controls v1")


def read_controls_hex(config):
    from compileiq.controls import parse_controls
    return parse_controls(bytes.fromhex(config))


def test_an_objective_that_passes_open_files_to_apply_controls_gets_the_fix(tmp_path):
    def wrong_objective(config):
        ctl = str(tmp_path / "cand.ctl")
        save_compiler_config(ctl, config)
        ptx = tmp_path / "k.ptx"
        ptx.write_text(PTX)
        proc = subprocess.run([find_ptxas().path, "-arch=sm_90", str(ptx), "-o", str(tmp_path / "k.cubin"),
                               "--apply-controls", ctl], capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(proc.stderr.strip())
        return 1.0

    with pytest.raises(SearchFailedError) as info:
        Search(wrong_objective, PtxasSearchSpace(), SearchConfiguration(generations=2, pool_size=6, seed=1),
               worker_type=SequentialWorker, disable_progress_bar=True).start()
    msg = str(info.value)
    assert "compileiq.compilers.controls_args(path, 'ptxas')" in msg and "never pass it to --apply-controls" in msg


def test_read_controls_reads_what_save_compiler_config_wrote(tmp_path):
    comp = PtxasSearchSpace().to_component()
    from compileiq.space import SearchSpace
    import random
    hexcfg = SearchSpace(comp).decode(SearchSpace(comp).random_genotype(random.Random(1)))
    save_compiler_config(tmp_path / "c.ctl", hexcfg)
    assert read_controls(tmp_path / "c.ctl").to_hex() == hexcfg
