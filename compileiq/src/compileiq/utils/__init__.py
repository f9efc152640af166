"""Helpers with NVIDIA-compatible import paths: ``validation`` (Score) and ``helpers`` (controls files)."""
