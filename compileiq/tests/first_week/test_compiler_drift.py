"""A compiler that changes during a search: found through wrappers and symlinks, cheap per batch, recorded, stopped."""

import os
import shutil
import warnings

import pytest

import compileiq.search_spaces.base as ss
from compileiq import Search, SearchConfiguration
from compileiq.compilers import drift
from compileiq.diagnostics import diagnose
from compileiq.errors import CompilerChangedError, CompilerChangedWarning, ConfigurationError
from compileiq.utils.validation import metadata_dict
from compileiq.worker import SequentialWorker

SPACE = {"x": ss.range(0, 50)}


@pytest.fixture
def chain(tmp_path):
    """bin/gcc -> wrapper script -> a private copy of the real gcc (as /usr/local/bin/ptxas -> cuda-13.0/bin/ptxas)."""
    real = tmp_path / "toolkit" / "gcc-real"
    real.parent.mkdir()
    shutil.copy2(os.path.realpath(shutil.which("gcc")), real)
    wrapper = tmp_path / "toolkit" / "gcc-wrapper"
    wrapper.write_text(f'#!/bin/sh\n# a toolkit\'s launcher\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    (tmp_path / "bin").mkdir()
    link = tmp_path / "bin" / "gcc"
    link.symlink_to(wrapper)
    return link, wrapper, real


def test_the_real_binary_is_found_through_symlinks_and_wrappers(chain):
    link, wrapper, real = chain
    assert drift.real_binary(link) == [wrapper, real]
    assert drift.real_binary("/usr/local/bin/ptxas")[-1].name == "ptxas" if os.path.exists("/usr/local/bin/ptxas") else True


def test_hashed_once_per_run_stat_once_per_batch_recorded_in_every_row(chain, monkeypatch, tmp_path):
    link, _, real = chain
    hashes, stats = [], []
    monkeypatch.setattr(drift, "sha256_file", lambda p, f=drift.sha256_file: hashes.append(p) or f(p))
    monkeypatch.setattr(drift, "_stat", lambda p, f=drift._stat: stats.append(p) or f(p))
    res = Search(lambda p: p["x"], SPACE, SearchConfiguration(generations=4, pool_size=6, seed=1), worker_type=SequentialWorker,
                 watch_compilers=[str(link)], disable_progress_bar=True).start()
    assert hashes == [real]                   # one hash for the whole run
    assert len(stats) == 2 * (1 + 4)          # wrapper and binary: at the start, then once per batch
    desc = metadata_dict(res.df_results["metadata"][0])["compilers"]["gcc"]
    assert str(real) in desc and "sha256:" in desc and "12." in desc  # version, real path, hash
    assert all(metadata_dict(m)["compilers"] == {"gcc": desc} for m in res.df_results["metadata"])


def _upgrade_during_generation(real, at_call):
    calls = []

    def objective(p):
        calls.append(p)
        if len(calls) == at_call:  # a package upgrade lands while the search runs
            with open(real, "ab") as f:
                f.write(b"\0" * 16)
        return p["x"]
    return objective


def test_a_change_stops_the_search_with_the_csv_written(chain, tmp_path):
    link, _, real = chain
    csv = tmp_path / "r.csv"
    with pytest.raises(CompilerChangedError, match=f"gcc: {link} was {real} .* and is now {real} .*on_compiler_change='warn'"):
        Search(_upgrade_during_generation(real, 8), SPACE, SearchConfiguration(generations=5, pool_size=6, seed=1),
               worker_type=SequentialWorker, watch_compilers=[str(link)], dump_results=csv,
               disable_progress_bar=True).start()
    assert csv.read_text().count("\n") == 1 + 12  # the header and the two generations measured


def test_warn_goes_on_and_diagnose_reports_the_change(chain, tmp_path):
    link, _, real = chain
    csv = tmp_path / "r.csv"
    with pytest.warns(CompilerChangedWarning, match="compiler changed during the search") as rec:
        Search(_upgrade_during_generation(real, 8), SPACE, SearchConfiguration(generations=4, pool_size=6, seed=1),
               worker_type=SequentialWorker, watch_compilers=[str(link)], dump_results=csv, on_compiler_change="warn",
               disable_progress_bar=True).start()
    assert len([w for w in rec if w.category is CompilerChangedWarning]) == 1
    rep = diagnose(csv)
    assert rep.codes[0] == "COMPILER_CHANGED" and "gcc changed during the run" in rep.flags[0].details[0]
    with pytest.raises(ConfigurationError, match="on_compiler_change='ignore'"):
        Search(lambda p: 1, SPACE, SearchConfiguration(generations=1), on_compiler_change="ignore")


def test_touching_the_binary_without_changing_it_is_not_drift(chain):
    link, _, real = chain
    calls = []

    def objective(p):
        calls.append(p)
        if len(calls) == 3:
            os.utime(real, None)  # same bytes, new mtime: rehashed once, no change
        return p["x"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompilerChangedWarning)
        Search(objective, SPACE, SearchConfiguration(generations=3, pool_size=6, seed=1), worker_type=SequentialWorker,
               watch_compilers=[str(link)], disable_progress_bar=True).start()


def test_compiler_search_spaces_are_watched_without_asking(tmp_path):
    from compileiq.search_spaces.compilers import GccSearchSpace
    res = Search(lambda cfg: 1.0 + len(cfg), GccSearchSpace(), SearchConfiguration(generations=1, pool_size=6, seed=2),
                 worker_type=SequentialWorker, disable_progress_bar=True).start()
    assert "gcc" in metadata_dict(res.df_results["metadata"][0])["compilers"]
