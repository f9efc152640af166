"""Kwker's benchmark: python -m kwker bench [--quick] [--json] [--repeats N] [--only S] ...

Every row times a kwker call and its competitor in the same run, interleaved, and reports
competitor time / kwker time (> 1: kwker faster) with its spread and the target ratio.
See kwker/docs/benchmarks.md.
"""


def main(argv=None) -> int:
    from .runner import main as _main
    return _main(argv)


__all__ = ["main"]
