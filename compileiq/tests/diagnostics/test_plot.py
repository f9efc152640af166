import sys

import pytest

from compileiq.diagnostics.plot import INSTALL_HINT, main, plot_results

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 5000, path


def rows(k):
    good = [[g, *[100 * 0.9 ** g + j + 3 * i for i in range(k)]] for g in range(4) for j in range(5)]
    return good + [[3, *["*"] * k]]


def test_single_objective_plots(results_csv, tmp_path):
    paths = plot_results(results_csv(rows(1), name="run.csv"), tmp_path / "plots")
    assert sorted(p.name for p in paths) == ["run_invalid_rate.png", "run_score_1.png"]
    for p in paths:
        assert_png(p)


def test_several_objectives_add_the_pareto_front(results_csv, capsys):
    path = results_csv(rows(2), k=2, name="two.csv")
    assert main([str(path)]) == 0  # default folder: next to the CSV
    names = {p.name for p in path.parent.glob("two_*.png")}
    assert names == {"two_score_1.png", "two_score_2.png", "two_invalid_rate.png", "two_pareto_front.png"}
    for name in names:
        assert_png(path.parent / name)
    assert "two_pareto_front.png" in capsys.readouterr().out


def test_missing_matplotlib_names_the_extra(results_csv, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install matplotlib"):
        plot_results(results_csv(rows(1)), tmp_path)
    assert main([str(results_csv(rows(1))), "-o", str(tmp_path)]) == 2
    assert INSTALL_HINT in capsys.readouterr().err
