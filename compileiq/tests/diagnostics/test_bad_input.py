import subprocess
import sys
from pathlib import Path

import pytest

from compileiq.diagnostics import ResultsFileError, diagnose
from compileiq.diagnostics.cli import main as diagnose_main
from compileiq.diagnostics.plot import main as plot_main

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path, text, name="r.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_misspelt_columns_are_named_with_the_expected_ones(tmp_path, capsys):
    p = write(tmp_path, "metadata,generaton,scor_1,params\n{},0,1.0,{}\n{},1,0.9,{}\n")
    assert diagnose_main([str(p)]) == 2
    out = capsys.readouterr().out
    assert "NO_SCORE_COLUMN" in out and "NO_GENERATION_COLUMN" in out
    assert "'scor_1' looks like a misspelling of 'score_1'" in out
    assert "'generaton' looks like a misspelling of 'generation'" in out
    assert "expected metadata, generation, score_1, params" in out


@pytest.mark.parametrize("text, message", [
    ("", "is empty (0 bytes)"),
    ("metadata,generation,score_1,params\n", "holds a header (metadata, generation, score_1, params) but no rows"),
    ('metadata,generation,score_1,params\n"{""baseline"": true}",0,1.0,{}\n', "only the baseline row"),
    ("generation,score_1\nabc,1.0\n", "not a readable results CSV"),
])
def test_unreadable_files_raise_a_clear_error(tmp_path, text, message):
    with pytest.raises(ResultsFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        diagnose(write(tmp_path, text))


def test_missing_file_and_folder(tmp_path, capsys):
    assert diagnose_main([str(tmp_path / "nope.csv")]) == 64
    assert "no such file" in capsys.readouterr().err
    assert diagnose_main([str(tmp_path)]) == 64
    assert "is a folder" in capsys.readouterr().err
    assert diagnose_main([]) == 64


BAD_FILES = {
    "empty.csv": "",
    "header.csv": "metadata,generation,score_1,params\n",
    "misspelt.csv": "metadata,generaton,scor_1,params\n{},0,1.0,{}\n",
    "garbage.csv": "generation,score_1\nabc,1\n",
}


@pytest.mark.parametrize("script, name", [("diagnose_csv.py", n) for n in [*BAD_FILES, "missing.csv"]]
                         + [("plot", "misspelt.csv"), ("plot", "empty.csv")])  # plot's other cases: main() below
def test_scripts_never_show_a_traceback(tmp_path, script, name):
    if name in BAD_FILES:
        write(tmp_path, BAD_FILES[name], name)
    if script == "plot":
        argv = [sys.executable, "-c", "import sys; from compileiq.diagnostics.plot import main; "
                "raise SystemExit(main(sys.argv[1:]))", str(tmp_path / name), "-o", str(tmp_path / "out")]
    else:
        argv = [sys.executable, str(ROOT / "scripts" / script), str(tmp_path / name)]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    assert "error:" in p.stderr or "NO_SCORE_COLUMN" in p.stdout


def test_plot_main_bad_inputs(tmp_path, capsys):
    assert plot_main([str(tmp_path / "nope.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    for name, text in BAD_FILES.items():
        assert plot_main([str(write(tmp_path, text, name)), "-o", str(tmp_path / "out")]) == 2
        assert "error:" in capsys.readouterr().err
    p = write(tmp_path, "metadata,generation,scor_1,params\n{},0,1.0,{}\n")
    assert plot_main([str(p)]) == 2
    assert "no score_1 column" in capsys.readouterr().err
