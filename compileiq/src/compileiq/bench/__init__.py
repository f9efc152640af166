"""CompileIQ benchmarks: each prints a Markdown table of ratios against the competitor measured in the same run.

``python -m compileiq bench [--quick] [--only NAME]`` runs them all:
engine_quality (evaluations to target vs random search and Optuna), engine_overhead (ms per
candidate), throughput (evaluations per second vs the ideal for the process workers).
"""
