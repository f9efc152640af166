"""A typical NVIDIA CompileIQ 1.1-era user script, end to end, run as the user runs it: a file, no guard.

It touches what such scripts use: a legacy .config, the DSL keywords, EngineConfig("amber"), the
MANUAL worker's ask/tell loop with NVIDIA-style Scores, a checkpoint saved and restored,
Search.evaluate, a loguru tracker, and SearchResult.from_dataframe on the results CSV.
"""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import json
    import pandas as pd
    import compileiq.search_spaces.base as ss
    from compileiq.backends import EngineConfig
    from compileiq.ciq import Search
    from compileiq.results import SearchResult
    from compileiq.types import LoguruTrackerConfig, MultiScoreComparison, SearchConfiguration, WorkerTypes
    from compileiq.utils.validation import Score, validate_scores

    with open("main.config", "w") as f:
        f.write("; search settings\\n(generations . 6)\\n(pool_size . 10)\\n(mutate_rate . 0.3)\\n"
                "(seek_minimum . #t)\\n(qualitative . #t)\\n(num_objectives . 2)\\n(objective_weights . ((0.5 0.5)))\\n")
    config = SearchConfiguration.from_legacy("main.config")

    space = {
        "unroll": ss.range(start=1, end=16, step=1, seed_low=4, seed_high=8),
        "vectorize": ss.choice(choice_list=[True, False]),
        "block": ss.log_sampling(start=32, end=1024, total=6),
        "fast_math": ss.literal(const_value="-ffast-math", knockout_prob=0.5),
        "tiles": {"m": ss.choice(choice_list=[16, 32, 64]), "n": ss.choice([16, 32, 64])},
    }

    def objective(params):
        latency = abs(params["unroll"] - 6) + (0 if params["vectorize"] else 3) + params["tiles"]["m"] / 64
        size = params["unroll"] * 10 + params["block"] / 64 + (1 if "fast_math" in params else 0)
        return validate_scores((latency, size), 2)

    search = Search(objective_function=objective, search_space=space, search_config=config,
                    worker_type=WorkerTypes.MANUAL, engine=EngineConfig(name="amber", options={"seed": 7}),
                    tracker_config=LoguruTrackerConfig(sink=["tracker.log"], enqueue=False),
                    dump_results="results.csv", disable_progress_bar=True)
    for generation in range(3):
        candidates = search.ask()
        scores = [Score(score=objective(c.params), param_id=c.param_id, num_objectives=2,
                        metadata=json.dumps({"host": "node-1", "generation": generation})) for c in candidates]
        search.tell(scores)
    search.save_checkpoint("search.ckpt", require_no_pending=True)
    search.close()

    resumed = Search.from_checkpoint("search.ckpt", objective_function=objective, search_space=space,
                                     worker_type=WorkerTypes.MANUAL, dump_results="results.csv",
                                     tracker_config=LoguruTrackerConfig(sink=["tracker.log"], enqueue=False))
    while resumed.engine.generation < config.generations:
        resumed.tell(resumed.evaluate(resumed.ask()))
    resumed.close()

    result = SearchResult.from_dataframe(df=pd.read_csv("results.csv"), problem_type="min")
    assert result.num_scores == 2 and result.score_columns == ["score_1", "score_2"] and not result.is_normalized
    assert len(result.get_results()) == 60 and all(isinstance(p, dict) for p in result.get_results()["params"])
    assert {json.loads(m)["host"] for m in result.get_results()["metadata"][:30]} == {"node-1"}
    front = result.get_best_result(multiscore_scope=MultiScoreComparison.PARETO)
    best_avg = result.get_best_result(multiscore_scope="avg")
    assert front and best_avg["params"]["vectorize"] in (0, 1)
    log = open("tracker.log").read()
    assert log.count("-> score") == 60 and "generation 5: 10 candidates" in log
    print("script ran to the end:", len(front), "on the front; best mean", best_avg["score_1"], best_avg["score_2"])
''')


def test_a_typical_1_1_script_runs_unchanged(tmp_path):
    (tmp_path / "tune.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIQ_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    out = subprocess.run([sys.executable, "tune.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert "script ran to the end" in out.stdout
