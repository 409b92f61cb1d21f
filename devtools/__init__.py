"""Development tools shared by the browser tests and the benchmark (not used by the app)."""
