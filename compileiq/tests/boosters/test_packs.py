"""Loading and verifying packs: the built-in debug packs, zips, folders, and every way a pack can be wrong."""

import json
import shutil
import tomllib
import zipfile
from fnmatch import fnmatch
from pathlib import Path

import pytest

from compileiq.boosters import (DEBUG_LEVELS, PackError, PackVerifyError, builtin_ids, debug_pack, list_packs,
                                load_pack, write_debug_packs, write_pack_manifest, zip_pack)
from compileiq.boosters.builtin import builtin_root
from compileiq.boosters.cli import main as pack_main
from compileiq.controls import parse_controls, write_controls
from compileiq.search_spaces.packs import read_pack_manifest

PROJECT = Path(__file__).resolve().parents[2]


def test_builtin_debug_packs():
    packs = {p.pack_id: p for p in list_packs()}
    assert sorted(packs) == sorted(builtin_ids()) == sorted(f"debug-pack-{c}" for c in ("ptxas", "nvcc", "gcc", "clang"))
    for compiler in ("ptxas", "nvcc", "gcc", "clang"):
        pack = packs[f"debug-pack-{compiler}"]
        assert pack.builtin and pack.pack_type == "diagnostic" and pack.controls_stage == compiler
        assert pack.names == ["O0", "O1", "O2", "O3"] and not pack.version_locked
        for name, hexed in pack.configs.items():
            parsed = parse_controls(bytes.fromhex(hexed))
            assert parsed.compiler == compiler and parsed.options == tuple(DEBUG_LEVELS[compiler][name])
    assert packs["debug-pack-ptxas"].config("O0").options == ("-O0",)
    assert packs["debug-pack-nvcc"].config("O0").options == ("-Xcicc=-O0", "-Xptxas=-O0")
    assert packs["debug-pack-gcc"].version_kind == "compiler" and packs["debug-pack-ptxas"].version_kind == "cuda"


def test_shipped_files_match_the_table(tmp_path):
    write_debug_packs(tmp_path)
    shipped = builtin_root() / "debug"
    for compiler in DEBUG_LEVELS:
        made = sorted(p.name for p in (tmp_path / compiler).iterdir())
        assert made == sorted(p.name for p in (shipped / compiler).iterdir())
        for name in made:
            assert (tmp_path / compiler / name).read_bytes() == (shipped / compiler / name).read_bytes(), name


def test_cuda_debug_packs_follow_nvidias_schema():
    # the reader AcfCatalogSpace uses accepts them as they are
    m = read_pack_manifest(builtin_root() / "debug" / "ptxas")
    assert m.pack_id == "debug-pack-ptxas" and m.controls_stage == "ptxas" and m.pack_type == "diagnostic"
    assert [f.filename for f in m.files] == ["O0.ctl", "O1.ctl", "O2.ctl", "O3.ctl"]
    doc = json.loads((builtin_root() / "debug" / "gcc" / "booster-pack-manifest.json").read_text())
    assert {"pack_id", "display_name", "artifact_name", "description", "pack_type", "controls_stage",
            "supported_gpus", "validation_summary", "acfs"} <= set(doc)
    assert "compiler_version" in doc and "cuda_version" not in doc


def test_package_data_ships_the_packs():
    globs = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["compileiq"]
    if not any("boosters/packs" in g for g in globs):
        pytest.skip("pyproject.toml lists no boosters/packs package data yet")
    package = PROJECT / "src" / "compileiq"
    for f in (package / "boosters" / "packs").rglob("*"):
        if f.is_file():
            rel = f.relative_to(package).as_posix()
            assert any(fnmatch(rel, g) for g in globs), f"{rel} is not in the wheel"


def copy_pack(tmp_path, compiler="gcc") -> Path:
    dest = tmp_path / f"pack-{compiler}"
    shutil.copytree(builtin_root() / "debug" / compiler, dest)
    return dest


def test_zip_round_trip(tmp_path):
    folder = copy_pack(tmp_path)
    z = zip_pack(folder, tmp_path / "gcc.zip")
    a, b = load_pack(folder), load_pack(z)
    assert a.configs == b.configs and b.source == z and not b.builtin


def test_wrong_checksum_names_file_expected_actual_and_fix(tmp_path):
    folder = copy_pack(tmp_path)
    target = folder / "O0.ctl"
    target.write_bytes(target.read_bytes().replace(b"-O0", b"-O1"))  # same size, other content
    expected = json.loads((folder / "booster-pack-manifest.json").read_text())["acfs"][0]["sha256"]
    with pytest.raises(PackVerifyError) as info:
        load_pack(folder)
    err = info.value
    assert err.filename == "O0.ctl" and err.expected == expected and err.actual != expected
    msg = str(err)
    assert "wrong checksum for O0.ctl" in msg and expected in msg and err.actual in msg and "Fix:" in msg
    assert isinstance(err, PackError)


def test_wrong_checksum_inside_a_zip(tmp_path):
    folder = copy_pack(tmp_path, "ptxas")
    z = tmp_path / "tampered.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(folder / "booster-pack-manifest.json", "booster-pack-manifest.json")
        for f in sorted(folder.glob("*.ctl")):
            data = f.read_bytes()
            zf.writestr(f.name, data.replace(b"-O3", b"-O2") if f.name == "O3.ctl" else data)
    with pytest.raises(PackVerifyError, match=r"wrong checksum for O3.ctl: the manifest expects sha256 [0-9a-f]{64}"):
        load_pack(z)


def test_size_and_missing_file(tmp_path):
    folder = copy_pack(tmp_path)
    (folder / "O1.ctl").write_bytes((folder / "O1.ctl").read_bytes() + b"-g\n")
    with pytest.raises(PackVerifyError, match=r"O1.ctl has 57 bytes, the manifest expects 54") as info:
        load_pack(folder)
    assert info.value.expected == 54 and info.value.actual == 57
    (folder / "O1.ctl").unlink()
    with pytest.raises(PackVerifyError, match="O1.ctl is listed in booster-pack-manifest.json but is not in the pack"):
        load_pack(folder)


def test_not_a_pack(tmp_path):
    with pytest.raises(PackError, match=r"no such zip or folder, and not a built-in pack \(debug-pack-ptxas"):
        load_pack(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PackError, match="no booster-pack-manifest.json"):
        load_pack(tmp_path / "empty")
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(PackError, match="not a readable zip"):
        load_pack(tmp_path / "junk.zip")


def make_pack(tmp_path, stage, files: dict, **kw) -> Path:
    folder = tmp_path / "custom"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    write_pack_manifest(folder, pack_id="custom", controls_stage=stage, version=kw.pop("version", "13.3.0"), **kw)
    return folder


def test_vendor_acfs_are_version_locked(tmp_path):
    acf = bytes(range(256)) * 9  # opaque bytes, as an NVIDIA ACF is
    pack = load_pack(make_pack(tmp_path, "ptxas", {"a.acf": acf}))
    cfg = pack.config("a")
    assert cfg.kind == "vendor" and pack.version_locked and cfg.options == ()
    assert cfg.hex == acf.hex() and "vendor ACF, 2,304 bytes" in cfg.describe()


def test_vendor_acf_in_a_gcc_pack_is_refused(tmp_path):
    with pytest.raises(PackError, match="a.acf is a vendor ACF, but the pack's controls_stage is gcc"):
        load_pack(make_pack(tmp_path, "gcc", {"a.acf": b"\x00" * 32}, version="12.2.0"))


def test_controls_for_another_compiler_are_refused(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    write_controls(folder / "x.ctl", "clang", "14.0", ["-O2"])
    with pytest.raises(PackError, match=r"x.ctl holds clang options .* controls_stage is gcc"):
        load_pack(make_pack(tmp_path, "gcc", {"x.ctl": (folder / "x.ctl").read_bytes()}, version="12.2.0"))


def test_manifest_without_a_version(tmp_path):
    folder = copy_pack(tmp_path)
    path = folder / "booster-pack-manifest.json"
    doc = json.loads(path.read_text())
    del doc["compiler_version"]
    path.write_text(json.dumps(doc))
    with pytest.raises(PackError, match="names compiler_version"):
        load_pack(folder)


def test_unknown_configuration_and_compiler():
    with pytest.raises(KeyError, match="no configuration 'O9'; it has O0, O1, O2, O3"):
        debug_pack("gcc").config("O9")
    assert debug_pack("gcc").config("O2.ctl").name == "O2"
    with pytest.raises(PackError, match="no built-in debug pack for 'icc'"):
        debug_pack("icc")


def test_config_write(tmp_path):
    path = debug_pack("clang").config("O3").write(tmp_path / "out")
    assert path.read_bytes() == debug_pack("clang").files["O3"].data


def test_cli_list_show_verify(capsys):
    assert pack_main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(i in out for i in builtin_ids())
    assert pack_main(["verify", "debug-pack-nvcc"]) == 0
    assert "OK, 4 files match" in capsys.readouterr().out
    assert pack_main(["show", "debug-pack-gcc"]) == 0
    assert "-O3" in capsys.readouterr().out


def test_cli_bad_packs_exit_without_traceback(tmp_path, capsys):
    folder = copy_pack(tmp_path)
    (folder / "O2.ctl").write_bytes((folder / "O2.ctl").read_bytes().replace(b"-O2", b"-Os"))
    assert pack_main(["verify", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "wrong checksum for O2.ctl" in err and "Traceback" not in err
    assert pack_main(["verify", str(tmp_path / "missing.zip")]) == 2
    err = capsys.readouterr().err
    assert "no such zip or folder" in err and "Traceback" not in err
    assert pack_main(["try", "debug-pack-gcc", "--module", "no_such_module_here:objective"]) == 2
    err = capsys.readouterr().err
    assert "cannot import 'no_such_module_here'" in err and "Traceback" not in err


def test_cli_manifest_then_zip(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    write_controls(folder / "fast.ctl", "ptxas", "13.0", ["--register-usage-level=7"])
    assert pack_main(["manifest", str(folder), "--pack-id", "mine", "--compiler", "ptxas", "--version", "13.0.0"]) == 0
    assert pack_main(["zip", str(folder), str(tmp_path / "mine.zip")]) == 0
    capsys.readouterr()
    pack = load_pack(tmp_path / "mine.zip")
    assert pack.pack_id == "mine" and pack.pack_type == "performance" and pack.names == ["fast"]
