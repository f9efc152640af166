"""python -m kwker audit on PyTorch scripts: tensors recorded with kwker.audit.record are
compared byte for byte between the run with kwker.torch_ops installed and the run with
KWKER_DISABLE=1 (where install() is a no-op and torch's own kernels run)."""
import json
import textwrap

import pytest

from kwker import audit as record_mod
from kwker.tools import audit


@pytest.fixture(autouse=True)
def _env(monkeypatch, kwker_cache_dir):
    monkeypatch.delenv("KWKER_DISABLE", raising=False)
    monkeypatch.delenv(record_mod.ENV, raising=False)
    monkeypatch.setenv("KWKER_CACHE_DIR", str(kwker_cache_dir))


def _run(capsys, tmp_path, body):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    code = audit.main(["--json", "--", str(path)])
    return code, json.loads(capsys.readouterr().out)


def test_a_torch_script_agrees_with_and_without_kwker(tmp_path, capsys):
    code, rep = _run(capsys, tmp_path, """
        import json, sys, torch
        import kwker.torch_ops
        from kwker import audit
        installed = kwker.torch_ops.install()
        g = torch.Generator().manual_seed(0)
        x = torch.randn(200000, generator=g)
        x[::7] = float("nan")
        x[::5] = -0.0
        audit.record("sort", torch.sort(x, stable=True))
        audit.record("argsort desc", torch.argsort(x, descending=True, stable=True))
        m = torch.randn(8, 50000, generator=g)
        audit.record("topk", torch.topk(m, 50, dim=-1))
        audit.record("kthvalue", torch.kthvalue(m, 1000, dim=1))
        audit.record("unique", torch.unique(torch.randint(0, 100, (100000,), generator=g),
                                            return_counts=True))
        print(json.dumps({"installed": installed, "on": kwker.torch_ops.status()["ops_on"]}),
              file=sys.stderr)  # stdout is compared: what differs on purpose goes to stderr
    """)
    assert code == 0, rep
    assert rep["verdict"]["agree"] is True
    runs = rep["runs"]
    assert runs["kwker"]["recorded"] == ["sort", "argsort desc", "topk", "kthvalue", "unique"]
    assert runs["kwker"]["ok"] and runs["disabled"]["ok"]
    on = json.loads(runs["kwker"]["stderr_tail"][-1])
    assert on == {"installed": True, "on": ["sort", "topk", "kthvalue", "unique"]}
    assert json.loads(runs["disabled"]["stderr_tail"][-1]) == {"installed": False, "on": []}


def test_tensors_are_compared_bit_for_bit(tmp_path, capsys):
    # -0.0 == 0.0 for torch, but not byte for byte: audit must see the difference.
    code, rep = _run(capsys, tmp_path, """
        import os, torch
        from kwker import audit
        z = -0.0 if os.environ.get("KWKER_DISABLE") == "1" else 0.0
        audit.record("zeros", torch.tensor([1.0, z, 2.0]))
        audit.record("same", (torch.arange(4), {"k": torch.ones(2, dtype=torch.bfloat16)}))
    """)
    assert code == 1
    (diff,) = rep["verdict"]["differences"]
    assert diff["name"] == "zeros" and diff["first_index"] == 1
    assert "tensor torch.float32 (3,) first differs at flat index 1" in diff["detail"]
