"""Helpers for testing CompileIQ and its engines: synthetic problems shared by tests and benchmarks."""
