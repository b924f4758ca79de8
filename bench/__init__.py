"""Benchmarks of issue 6: `python -m bench` (svc vs PostGraphile v4 vs a limit server under
wrk) and `python -m bench.translate` (compile, schema build, track_table, overhead)."""
