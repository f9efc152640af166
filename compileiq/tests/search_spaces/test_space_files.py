"""The open space format: validation with exact messages, decoding to controls files, the shipped files."""

import copy
import hashlib
import json
import os
import random

import pytest

from compileiq.controls import parse_controls
from compileiq.search_spaces.errors import EncryptedSearchSpaceError, SpaceFileError
from compileiq.search_spaces.files import load_space_file, parse_space, read_space_bytes, read_space_file
from compileiq.search_spaces.manifest import read_manifest
from compileiq.search_spaces.open_space import OpenSpaceComponent
from compileiq.search_spaces.resolver import shipped_dir
from compileiq.space import SearchSpace

GOOD = {
    "format": "compileiq-space", "format_version": 1, "compiler": "ptxas", "compiler_version": "13.5",
    "variant": "default", "description": "test space",
    "knobs": [
        {"name": "opt", "type": "range", "min": 0, "max": 3, "emit": "-O{value}", "default": 3},
        {"name": "rul", "type": "range", "min": 0, "max": 10, "emit": "--register-usage-level={value}",
         "omit_if": [{"knob": "opt", "values": [0]}]},
        {"name": "dlcm", "type": "choice", "values": ["ca", "cg"], "emit": "-dlcm={value}", "knockout_prob": 0},
        {"name": "mode", "type": "choice", "values": ["a", "b", "none"],
         "emit": {"a": ["--fmad=true"], "b": ["--fmad=false", "-O1"], "none": []}},
        {"name": "noconst", "type": "flag", "emit": "--disable-optimizer-constants"},
    ],
}


def doc(**changes):
    d = copy.deepcopy(GOOD)
    for path, value in changes.items():
        node, keys = d, path.split("__")
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        last = keys[-1]
        if value is KeyError:
            del node[int(last) if last.isdigit() else last]
        elif last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value
    return d


@pytest.mark.parametrize("changes, pointer, needle", [
    ({"format": "nvidia"}, "/format", "is not 'compileiq-space'"),
    ({"format_version": 2}, "/format_version", "newer than this CompileIQ reads"),
    ({"compiler": "PTXAS!"}, "/compiler", "malformed"),
    ({"compiler_version": "13.x"}, "/compiler_version", "malformed"),
    ({"knobs": []}, "/knobs", "non-empty list"),
    ({"extra": 1}, "/extra", "unknown key 'extra'"),
    ({"knobs__0__type": "slider"}, "/knobs/0/type", "not a knob type"),
    ({"knobs__0__max": 0}, "/knobs/0/max", "must be greater than min"),
    ({"knobs__0__step": 2}, "/knobs/0/max", "not on the grid"),
    ({"knobs__0__emit": "-O{val}"}, "/knobs/0/emit", "the only placeholder is {value}"),
    ({"knobs__0__default": 7}, "/knobs/0/default", "not in the domain"),
    ({"knobs__0__emit": KeyError}, "/knobs/0/emit", "missing emit"),
    ({"knobs__0__maxx": 3}, "/knobs/0/maxx", "unknown key 'maxx'"),
    ({"knobs__1__name": "opt"}, "/knobs/1/name", "already used by /knobs/0"),
    ({"knobs__1__omit_if": [{"knob": "nope"}]}, "/knobs/1/omit_if/0/knob", "not another knob"),
    ({"knobs__1__omit_if": [{"knob": "opt", "values": [9]}]}, "/knobs/1/omit_if/0/values", "not a value of 'opt'"),
    ({"knobs__2__values": ["ca", "ca"]}, "/knobs/2/values/1", "appears twice"),
    ({"knobs__2__values": []}, "/knobs/2/values", "non-empty list"),
    ({"knobs__2__knockout_prob": 1.5}, "/knobs/2/knockout_prob", "must be a number in [0, 1]"),
    ({"knobs__3__emit": {"a": ["-x"], "b": []}}, "/knobs/3/emit", "no options for value 'none'"),
    ({"knobs__3__emit": {"a": [], "b": [], "none": [], "zz": []}}, "/knobs/3/emit/zz", "not one of the values"),
    ({"knobs__3__emit": {"a": ["# no"], "b": [], "none": []}}, "/knobs/3/emit/a/0", "not one option line"),
    ({"knobs__4__knockout_prob": 0}, "/knobs/4/knockout_prob", "always present"),
    ({"knobs__4__emit": "--x={value}"}, "/knobs/4/emit", "a flag has no value"),
    ({"knobs__2__values__0": {"value": "ca", "requires": {"gpu": ["x"]}}}, "/knobs/2/values/0/requires/gpu",
     "unknown key 'gpu'"),
])
def test_invalid_documents_name_the_pointer_the_knob_and_the_fix(changes, pointer, needle):
    with pytest.raises(SpaceFileError) as info:
        parse_space(doc(**changes), "space.json")
    msg = str(info.value)
    assert info.value.pointer == pointer and f"space.json: {pointer}" in msg and needle in msg
    assert ";" in msg, "every message ends with the fix"
    if pointer.startswith("/knobs/") and "/name" not in pointer:
        assert "(knob '" in msg


def test_corrupt_files_say_what_is_wrong_and_how_to_recover(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "compileiq-space",\n "knobs": [\n')
    with pytest.raises(SpaceFileError, match=r"bad.json: not valid JSON at line 3 column 1 .*restore the file"):
        read_space_file(bad)
    bad.write_bytes(b"")
    with pytest.raises(SpaceFileError, match="the file is empty; restore it"):
        read_space_file(bad)
    bad.write_bytes(b"\xff\xfe{" + b"\x00" * 20)
    with pytest.raises(SpaceFileError, match="not UTF-8 text"):
        read_space_file(bad)
    with pytest.raises(SpaceFileError, match="no such search-space file"):
        read_space_file(tmp_path / "missing.json")


def test_an_encrypted_vendor_space_is_recognised_and_refused(tmp_path):
    blob = tmp_path / "ptxas13.3_search_space.bin"
    blob.write_bytes(os.urandom(13632))
    with pytest.raises(EncryptedSearchSpaceError) as info:
        load_space_file(blob)
    msg = str(info.value)
    assert "encrypted vendor search space (13,632 bytes" in msg and "AcfCatalogSpace" in msg and "PtxasSearchSpace()" in msg


def test_decode_gives_the_hex_of_an_open_controls_file_in_knob_order():
    comp = OpenSpaceComponent(parse_space(GOOD, "t.json"))
    names = [g.name for g in comp.genes]
    assert names == ["opt", "opt?", "rul", "rul?", "dlcm", "mode", "mode?", "noconst", "noconst?"]
    values = dict(zip(names, [2, 1, 7, 1, 1, 1, 1, 0, 1]))  # opt=2, rul=7, dlcm=cg, mode=b, flag on
    cfg = comp.decode([values[n] for n in names])
    assert cfg == cfg.lower() and bytes.fromhex(cfg).decode() == (
        "# compileiq-controls v1 compiler=ptxas version=13.5\n-O2\n--register-usage-level=7\n-dlcm=cg\n"
        "--fmad=false\n-O1\n--disable-optimizer-constants\n")


def test_omit_if_leaves_out_the_conflicting_option():
    comp = OpenSpaceComponent(parse_space(GOOD, "t.json"))
    opts = comp.options([0, 1, 5, 1, 0, 2, 1, 0, 0])  # opt=0 present: rul is left out
    assert opts == ["-O0", "-dlcm=ca"]
    assert "--register-usage-level=5" in comp.options([1, 1, 5, 1, 0, 2, 1, 0, 0])
    assert "--register-usage-level=5" in comp.options([0, 0, 5, 1, 0, 2, 1, 0, 0])  # opt knocked out


def test_values_this_machine_cannot_run_are_left_out():
    d = doc(knobs__2__values=["native", {"value": "x86-64-v4", "requires": {"machine": ["x86_64"], "cpu_flags": ["avx512f"]}},
                              {"value": "armv9", "requires": {"machine": ["aarch64"]}}])
    space = parse_space(d, "t.json")
    comp = OpenSpaceComponent(space, facts=("x86_64", frozenset({"sse2"})))
    assert comp.dropped == {"dlcm": ["x86-64-v4", "armv9"]}
    assert comp.describe()["knobs"]["dlcm"]["vals"] == ["native"]
    assert OpenSpaceComponent(space, facts=("x86_64", frozenset({"avx512f"}))).dropped == {"dlcm": ["armv9"]}


def test_all_knobs_knocked_out_is_the_baseline_and_never_offered():
    d = doc(knobs__2__knockout_prob=0.5)
    space = SearchSpace(OpenSpaceComponent(parse_space(d, "t.json")))
    assert space.canonical([0] * 10) is None
    assert space.canonical([0, 1] + [0] * 8) is not None


def test_every_shipped_file_is_valid_matches_the_manifest_and_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    folder = shipped_dir()
    schema = json.loads((folder / "schema" / "compileiq-space-v1.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    manifest = read_manifest(folder / "manifest.json")
    listed = {e.filename for e in manifest.entries}
    assert listed == {p.name for p in folder.glob("*.json")} - {"manifest.json"}
    for e in manifest.entries:
        data = (folder / e.filename).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (e.size_bytes, e.sha256), (
            f"{e.filename} changed: run python -m compileiq.search_spaces.manifest {folder} --tag {manifest.tag}")
        errors = sorted(validator.iter_errors(json.loads(data)), key=str)
        assert not errors, f"{e.filename}: {errors[0].message} at {list(errors[0].absolute_path)}"
        space = read_space_bytes(data, e.filename)
        assert (space.compiler, space.compiler_version, space.variant) == (e.compiler, e.compiler_version, e.variant)


def test_the_schema_rejects_what_the_loader_rejects():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((shipped_dir() / "schema" / "compileiq-space-v1.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(GOOD))
    for bad in (doc(knobs__0__type="slider"), doc(extra=1), doc(knobs__4__knockout_prob=0), doc(knobs__0__maxx=3)):
        assert list(validator.iter_errors(bad))


def test_random_candidates_of_shipped_spaces_round_trip_through_the_controls_parser():
    rng = random.Random(3)
    for path in sorted(shipped_dir().glob("*-default.json")):
        comp = load_space_file(path)
        space = SearchSpace(comp)
        for _ in range(5):
            parsed = parse_controls(bytes.fromhex(space.decode(space.random_genotype(rng))))
            assert (parsed.compiler, parsed.version) == (comp.compiler, comp.compiler_version)
            assert all(o.startswith("-") for o in parsed.options)


def test_diagnose_points_misapplied_open_files_to_controls_args():
    from compileiq.utils.validation import Score
    comp = OpenSpaceComponent(parse_space(GOOD, "t.json"))
    failed = [Score("*", i, "00", error="RuntimeError: ptxas fatal   : Invalid compiler controls file", failure="exception")
              for i in range(3)]
    (advice,) = comp.diagnose(failed)
    assert "compileiq.compilers.controls_args(path, 'ptxas')" in advice and "--apply-controls" in advice
    silent = [Score("*", i, "00") for i in range(3)]  # the objective returned INVALID_SCORE itself
    assert comp.diagnose(silent)[0].startswith("if the objective returned INVALID_SCORE because its compile failed")
    unrelated = [Score("*", i, "00", error="ZeroDivisionError", failure="exception") for i in range(3)]
    assert comp.diagnose(unrelated) == []
