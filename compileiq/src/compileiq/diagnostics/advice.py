"""What to do about each finding, in the order worth trying (after the compileiq-debug symptom table)."""

ADVICE: dict[str, tuple[str, ...]] = {
    "INCREASING_INVALID_RATE": (
        "a mutation is probably spreading one structurally bad setting through the population: rerun with "
        "CIQ_KEEP_CACHE=1 so the failing candidates stay under ~/.cache/compileiq/, replay a few of them by hand "
        "and look for the setting they share, then drop that value from the search space",
        "check for compiler version drift during the run: `ptxas --version` / `nvcc --version` / `gcc --version` "
        "must report what they did when the search started (compileiq doctor lists them)",
        "read the failure kind in each failed row's metadata ('failure': timeout, exception, format, crash); "
        "rising timeouts mean task_timeout is too tight for the slower candidates",
    ),
    "STALLED_CONVERGENCE": (
        "raise pool_size: 32 for spaces of 1k+ points, 64-128 for 10k+ points",
        "raise mutate_rate from the default 0.25 to 0.3-0.5 so children move further from their parents",
        "check whether the kernel is already near its best: time Search.sample(20) by hand; if the spread is "
        "under 5% the space is shallow and a longer search will not find more",
    ),
    "HIGH_VARIANCE": (
        "this is measurement noise: the same configuration measured again gave a different score. Lock the "
        "clocks (sudo nvidia-smi -pm 1; sudo nvidia-smi --lock-gpu-clocks=<MHz>,<MHz> "
        "--lock-memory-clocks=<MHz>,<MHz>)",
        "give the benchmark the GPU to itself: CUDA_VISIBLE_DEVICES=<index>, one worker per GPU, nothing else "
        "running (watch nvidia-smi dmon); on a CPU pin each worker to its own core",
        "raise the warm-up and the repetitions inside the objective and return the median, not one run",
        "validate the winners before shipping: compileiq validate (50 warm-up, 100 interleaved trials)",
    ),
    "COMPILER_CHANGED": (
        "the rows were measured with different compiler binaries (an upgrade or a toolkit switch during the run), "
        "so scores before and after the change are not comparable: rerun the search with one compiler",
        "keep the toolkit fixed while a search runs: pin the package version, point CIQ_PTXAS / CIQ_NVCC / CIQ_GCC "
        "at one binary; Search stops on such a change by default (on_compiler_change='stop')",
    ),
    "IDENTICAL_SCORES": (
        "the controls are probably not reaching the compiler: a framework cache serves the same binary to "
        "every candidate. Run the O0/O3 canary (compileiq.boosters.canary(objective)): if O0 does not get slower, the "
        "controls are ignored",
        "bust the cache: Triton: TRITON_ALWAYS_COMPILE=1 and a fresh TRITON_CACHE_DIR per evaluation; Helion: "
        "HELION_SKIP_CACHE=1; FlashInfer: uninstall flashinfer_cubin and flashinfer_jit_cache (prebuilt kernels); "
        "raw nvcc: clean the build folder between candidates",
        "check the objective really passes the candidate to the compiler (save_compiler_config(path, config) "
        "and the path on the compile command line)",
    ),
    "ALL_INVALID": (
        "call the objective by hand on one candidate: cfg = Search(...).sample(1)[0]; objective(cfg) - the "
        "traceback or the returned value shows what is wrong",
        "check num_objectives against the return shape: one number when num_objectives=1 (not a 1-tuple), "
        "a tuple of that length otherwise",
        "raise task_timeout above what one clean compile and run takes, and check the correctness gate "
        "accepts the untuned build",
    ),
    "NO_GENERATION_COLUMN": (
        "diagnose reads the CSV a search writes (Search(..., dump_results='results.csv') or "
        "SearchResult.save()): columns metadata, generation, score_1.., params; rename the column or regenerate "
        "the file",
    ),
    "NO_SCORE_COLUMN": (
        "the scores must be in columns score_1..score_k (a single 'score' column is read as score_1); rename "
        "the column or regenerate the file with Search(..., dump_results=...)",
    ),
    "HEALTHY": (
        "no pathology found; before shipping, validate the winners against the baseline: compileiq validate",
    ),
}
