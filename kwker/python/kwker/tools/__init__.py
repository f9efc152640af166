"""Kwker's command-line tools: audit and support-bundle (doctor lives in kwker._doctor)."""
