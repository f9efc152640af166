"""AcfCatalogSpace: a choice among ACF files the user has, "no-acf" included; booster-pack zips verified."""

import hashlib
import json
import os
import zipfile
from pathlib import Path

import pytest

from compileiq import Search, SearchConfiguration
from compileiq.compilers.discovery import find_ptxas
from compileiq.controls import VendorAcfError, controls_args, parse_controls
from compileiq.search_spaces.acf_catalog import NO_ACF, AcfCatalogSpace, PackError, read_pack_manifest
from compileiq.search_spaces.compilers import AcfCatalogSpace as ReExported
from compileiq.utils.helpers import save_compiler_config
from compileiq.worker import SequentialWorker

REPO = Path(__file__).resolve().parents[3]
TOOLCHAINS = Path(os.environ.get("CIQ_TEST_TOOLCHAINS") or REPO / "build" / "toolchains")


def acfs(folder, n=3):
    folder.mkdir(parents=True, exist_ok=True)
    blobs = {}
    for i in range(n):
        data = os.urandom(2288 + 16 * i)
        (folder / f"cfg{i}.acf").write_bytes(data)
        blobs[f"cfg{i}.acf"] = data
    return blobs


def pack_manifest(blobs, **over):
    doc = {"pack_id": "test-pack", "display_name": "Test Pack", "artifact_name": "test-pack.zip",
           "description": "random bytes shaped like ACFs", "pack_type": "diagnostic", "cuda_version": "13.3.0",
           "controls_stage": "ptxas", "supported_gpus": ["all"], "validation_summary": {"evidence": []},
           "acfs": [{"filename": n, "sha256": hashlib.sha256(b).hexdigest(), "size_bytes": len(b)} for n, b in blobs.items()]}
    doc.update(over)
    return doc


def make_zip(path, blobs, manifest, prefix="test-pack/"):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(prefix + "booster-pack-manifest.json", json.dumps(manifest))
        for name, data in blobs.items():
            z.writestr(prefix + name, data)
    return path


def test_a_folder_catalog_always_offers_no_acf_and_decodes_to_file_bytes(tmp_path):
    blobs = acfs(tmp_path / "mine")
    comp = AcfCatalogSpace(tmp_path / "mine", check_compiler=False).to_component()
    assert comp.names == [NO_ACF, "cfg0.acf", "cfg1.acf", "cfg2.acf"] and comp.genes[0].size == 4
    assert bytes.fromhex(comp.decode([2])) == blobs["cfg1.acf"]
    none = bytes.fromhex(comp.decode([0]))
    assert parse_controls(none).options == () and parse_controls(none).compiler == "ptxas"
    save_compiler_config(tmp_path / "c.ctl", comp.decode([0]))
    assert controls_args(tmp_path / "c.ctl", "ptxas") == [], "no-acf applies nothing"
    assert ReExported is AcfCatalogSpace


def test_acfs_the_installed_ptxas_cannot_read_fail_at_setup(tmp_path):
    acfs(tmp_path / "mine")
    with pytest.raises(VendorAcfError, match=r"mine: cfg0.acf: .*(needs CUDA 13.3 or newer|refuses the ACF)"):
        AcfCatalogSpace(tmp_path / "mine")


def test_ptxas_13_5_probes_each_acf_and_refuses_an_invalid_one(tmp_path, monkeypatch):
    ptxas = TOOLCHAINS / "cuda-13.5" / "nvidia" / "cu13" / "bin" / "ptxas"
    if not ptxas.is_file():
        pytest.skip(f"{ptxas} is missing: run compileiq/scripts/install_toolchains.sh {TOOLCHAINS}")
    acfs(tmp_path / "mine", 1)
    monkeypatch.setenv("CIQ_PTXAS", str(ptxas))
    with pytest.raises(VendorAcfError, match=r"cfg0.acf: ptxas 13.5.37 .* Invalid compiler controls file"):
        Search(lambda c: 1.0, AcfCatalogSpace(tmp_path / "mine"), SearchConfiguration(generations=1),
               worker_type=SequentialWorker)


def test_a_pack_for_another_cuda_version_is_refused_naming_both(tmp_path, monkeypatch):
    ptxas = TOOLCHAINS / "cuda-13.5" / "nvidia" / "cu13" / "bin" / "ptxas"
    if not ptxas.is_file():
        pytest.skip(f"{ptxas} is missing: run compileiq/scripts/install_toolchains.sh {TOOLCHAINS}")
    blobs = acfs(tmp_path / "src")
    z = make_zip(tmp_path / "pack.zip", blobs, pack_manifest(blobs))
    monkeypatch.setenv("CIQ_PTXAS", str(ptxas))
    with pytest.raises(VendorAcfError, match=r"ACFs are for CUDA 13.3.0, but ptxas .* is CUDA 13.5"):
        AcfCatalogSpace(z)


def test_a_booster_pack_zip_is_read_and_verified(tmp_path):
    blobs = acfs(tmp_path / "src")
    z = make_zip(tmp_path / "pack.zip", blobs, pack_manifest(blobs))
    m = read_pack_manifest(z)
    assert (m.pack_id, m.pack_type, m.cuda_version, m.cuda_minor, m.controls_stage) == (
        "test-pack", "diagnostic", "13.3.0", (13, 3), "ptxas")
    assert [f.filename for f in m.files] == sorted(blobs) and m.supported_gpus == ("all",)
    space = AcfCatalogSpace(z, check_compiler=False)
    comp = space.to_component()
    assert comp.names[0] == NO_ACF and parse_controls(comp.blobs[0]).version == "13.3"
    assert comp.describe()["pack_id"] == "test-pack"
    flat = make_zip(tmp_path / "flat.zip", blobs, pack_manifest(blobs), prefix="")
    assert read_pack_manifest(flat).pack_id == "test-pack"


@pytest.mark.parametrize("damage, needle", [
    ("sha", "does not match its sha256"),
    ("size", "the manifest says"),
    ("missing", "listed in booster-pack-manifest.json but missing"),
    ("no_pack_id", "/pack_id is missing"),
    ("pack_type", "/pack_type='fast' is not one of performance, diagnostic"),
    ("cuda", "/cuda_version='thirteen' is not a CUDA version"),
    ("filename", "is not a plain file name"),
])
def test_a_damaged_pack_is_refused_with_what_and_where(tmp_path, damage, needle):
    blobs = acfs(tmp_path / "src")
    manifest = pack_manifest(blobs)
    if damage == "sha":
        manifest["acfs"][0]["sha256"] = "0" * 64
    elif damage == "size":
        manifest["acfs"][1]["size_bytes"] += 16
    elif damage == "missing":
        blobs = dict(list(blobs.items())[1:])
    elif damage == "no_pack_id":
        del manifest["pack_id"]
    elif damage == "pack_type":
        manifest["pack_type"] = "fast"
    elif damage == "cuda":
        manifest["cuda_version"] = "thirteen"
    elif damage == "filename":
        manifest["acfs"][0]["filename"] = "../escape.acf"
    z = make_zip(tmp_path / "pack.zip", blobs, manifest)
    with pytest.raises(PackError, match=needle.replace("(", r"\(")):
        read_pack_manifest(z)


def test_sources_that_are_not_catalogs_are_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(PackError, match=r"no \*.acf files here"):
        AcfCatalogSpace(tmp_path / "empty", check_compiler=False)
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(PackError, match="not a readable zip"):
        AcfCatalogSpace(tmp_path / "bad.zip", check_compiler=False)
    with zipfile.ZipFile(tmp_path / "plain.zip", "w") as z:
        z.writestr("a.acf", b"x" * 32)
    with pytest.raises(PackError, match="a zip needs a booster-pack-manifest.json"):
        AcfCatalogSpace(tmp_path / "plain.zip", check_compiler=False)
    with pytest.raises(PackError, match="no such folder or zip"):
        AcfCatalogSpace(tmp_path / "nowhere", check_compiler=False)
    with pytest.raises(VendorAcfError, match="only ptxas and nvcc apply ACFs"):
        AcfCatalogSpace(tmp_path / "empty", compiler="gcc", check_compiler=False)


def test_a_search_over_a_catalog_hands_each_file_to_the_objective(tmp_path):
    blobs = acfs(tmp_path / "mine")
    seen = set()

    def objective(config):
        data = bytes.fromhex(config)
        seen.add(data)
        return len(data)

    Search(objective, AcfCatalogSpace(tmp_path / "mine", check_compiler=False), SearchConfiguration(generations=1, seed=2),
           worker_type=SequentialWorker, disable_progress_bar=True).start()
    label = find_ptxas().version_str
    assert seen == set(blobs.values()) | {f"# compileiq-controls v1 compiler=ptxas version={label}\n".encode()}
