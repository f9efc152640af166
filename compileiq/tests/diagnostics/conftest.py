import pandas as pd
import pytest

from compileiq.results.csv_io import write_csv


@pytest.fixture
def results_csv(tmp_path):
    """Write rows (generation, score_1[, score_2...]) as a results CSV with a baseline row; return its path."""
    counter = iter(range(10**6))

    def make(rows, k=1, baseline=100.0, norm=None, name=None, params=None):
        """params: n -> the n-th row's params (default {"x": n}: every row a different candidate)."""
        out = [{"metadata": {"baseline": True}, "generation": 0, **{f"score_{i + 1}": baseline for i in range(k)},
                "params": {}}]
        for n, (gen, *vals) in enumerate(rows):
            out.append({"metadata": {"param_id": f"p{n}"}, "generation": gen,
                        **{f"score_{i + 1}": v for i, v in enumerate(vals)},
                        "params": params(n) if params else {"x": n}})
        df = pd.DataFrame(out)
        if norm is not None:
            df["norm_score_1"] = [1.0] + list(norm)
        return write_csv(df, tmp_path / (name or f"r{next(counter)}.csv"))
    return make
