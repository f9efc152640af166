"""docs/profile.md lists exactly the Nsight Compute metrics the command asks for."""

from pathlib import Path

from compileiq.profile import METRICS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "profile.md").read_text()


def test_metrics_table_matches():
    rows = [ln for ln in DOC.splitlines() if ln.startswith("| `") and "__" in ln]
    assert [ln.split("`")[1] for ln in rows] == [m for m, _, _ in METRICS]
