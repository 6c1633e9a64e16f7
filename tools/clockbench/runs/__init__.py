"""Keeping runs: the plan of a run (its kernel command line, its duration and
time bound, the image's words checked), the run folder with its metadata
(run.log, meta.json, results.json), and the store of runs (SQLite).

May import: clockbench.errors, clockbench.paths, clockbench.records, and this package."""
