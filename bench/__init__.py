"""Benchmarks, run with ``python -m bench.<name>``; each reports ratios to a same-run baseline."""
