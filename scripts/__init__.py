"""Benchmarks, the real-server catalog capture and the compatibility report.

Each runs as a script (`python scripts/NAME.py`, with the project installed);
the ones other code reuses import as `scripts.NAME` from the repository root,
as the tests do (`from scripts import capture_catalog`).
"""
