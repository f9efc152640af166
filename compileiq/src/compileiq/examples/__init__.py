"""Example kernels and objectives shipped with the package (used by ``python -m compileiq demo`` and the docs)."""
