"""The small things a first week turns up: CIQ_KEEP_CACHE, canary --help, SearchFailedError's count,
the one pool_size rule, the FlashInfer page the seed points to, and a demo that never contradicts
its own numbers."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import compileiq.search_spaces.base as ss
from compileiq import Search, SearchConfiguration
from compileiq.configuration import derived_pool_size
from compileiq.errors import ConfigurationError, SearchFailedError
from compileiq.worker import SequentialWorker

PRODUCT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("value", ["maybe", "2", "yes please"])
def test_an_invalid_ciq_keep_cache_is_refused_and_leaves_nothing(value, monkeypatch, tmp_path):
    monkeypatch.setenv("CIQ_KEEP_CACHE", value)
    s = Search(lambda p: p["x"], {"x": ss.range(0, 9)}, SearchConfiguration(generations=1, pool_size=6),
               worker_type=SequentialWorker, cache_folder=tmp_path / "cache", disable_progress_bar=True)
    with pytest.raises(ConfigurationError, match=f"CIQ_KEEP_CACHE={value!r} is not an on/off value; use CIQ_KEEP_CACHE=1"):
        s.start()
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    from compileiq.doctor import collect
    bad = [p for p in collect(live_worker=False).problems if p.check == "env:CIQ_KEEP_CACHE"]
    assert bad and bad[0].severity == "error"


@pytest.mark.parametrize("value, keep", [("1", True), ("on", True), ("TRUE", True), ("0", False), ("off", False), ("", False)])
def test_ciq_keep_cache_values(value, keep, monkeypatch):
    from compileiq import _env
    monkeypatch.setenv("CIQ_KEEP_CACHE", value)
    assert _env.keep_cache() is keep


def test_canary_help_shows_one_percent_sign():
    out = subprocess.run([sys.executable, "-m", "compileiq", "canary", "--help"], capture_output=True, text=True,
                         timeout=60).stdout
    assert "(must be >5% worse) and O3 (must be within" in " ".join(out.split()) and "%%" not in out


def test_search_failed_error_accounts_for_every_failure():
    def objective(p):
        raise RuntimeError(f"cause number {p['x']}")  # six different messages: three shown, three counted
    with pytest.raises(SearchFailedError) as info:
        Search(objective, {"x": ss.range(0, 5)}, SearchConfiguration(generations=1, pool_size=6, seed=1),
               worker_type=SequentialWorker, disable_progress_bar=True).start()
    text = str(info.value)
    shown = re.findall(r"RuntimeError: cause number \d \(x1\)", text)
    assert len(shown) == 3 and "and 3 more (x3)" in text and "6 exception" in text


def test_one_pool_size_rule_in_code_docs_and_skills():
    assert [derived_pool_size(k) for k in (1, 2, 15, 16, 20)] == [32, 32, 32, 33, 41]
    assert SearchConfiguration(generations=1, num_objectives=16).pool_size == 33
    rule = "max(2 * num_objectives + 1, 32)"
    texts = {p: p.read_text(encoding="utf-8") for p in [*PRODUCT.glob("docs/*.md"), PRODUCT / "README.md",
                                                         *PRODUCT.glob("src/compileiq/skills/*/SKILL.md"),
                                                         PRODUCT / "src/compileiq/configuration.py"]}
    mentions = {p: t for p, t in texts.items() if re.search(r"max\(2\s*\*?\s*num_objectives", t)}
    assert len(mentions) >= 4, sorted(map(str, mentions))  # code, search.md, two skills at least
    for p, t in mentions.items():
        for m in re.finditer(r"max\(2\s*\*?\s*num_objectives[^)]*\)", t):
            assert m.group(0) == rule, f"{p}: {m.group(0)!r} is not the one rule {rule!r}"


def test_the_flashinfer_page_the_seed_points_to():
    page = PRODUCT / "docs" / "flashinfer_booster.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    cited = " ".join(lines[55:64])  # the seed cites docs/flashinfer_booster.md:56-64
    assert "flashinfer_cubin" in cited and "flashinfer_jit_cache" in cited and "absent" in cited
    text = page.read_text(encoding="utf-8")
    for step in ("FLASHINFER_WORKSPACE_BASE", "FLASHINFER_EXTRA_CUDAFLAGS", "flashinfer_candidate", "IsoMultiProcessWorker",
                 "canary"):
        assert step in text


class _V:
    def __init__(self, decision, reasons, explanation, advice=()):
        self.decision, self.reasons, self.explanations, self.advice, self.speedup = \
            decision, tuple(reasons), (explanation,), tuple(advice), 2.1


class _D:
    def __init__(self, name, v):
        self.name, self.verdict, self.p_value = name, v, 1e-200


def test_the_demo_never_prints_a_conclusion_its_numbers_contradict():
    from compileiq.demo import no_winner_text
    spread = [_D("#1", _V("REJECTED:wider-spread", ["wider-spread"], "relative spread rule: ...", ["quiet machine"]))]
    text = no_winner_text(spread, "-O2")
    assert "as good as" not in text and "REJECTED:wider-spread" in text and "relative spread rule" in text
    assert "quiet machine" in text and "2.100x" in text
    worse = [_D("#1", _V("REJECTED:not-significant", ["not-significant"], "p = 0.4 is not below 0.05"))]
    assert "-O2 is as good as the search could show" in no_winner_text(worse, "-O2")
