"""Performance benchmark of the app: ``python -m benchmarks`` (see benchmarks/__main__.py)."""
