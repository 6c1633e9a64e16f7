"""Planning and keeping runs: the plan of a run (plan.RunPlan: the machine,
the image, its kernel command line with its duration and time bound, the
stop to make), the run's record from its plan to its end (record.RunRecord:
its folder, run.log and metadata.json, closed by the machine's result),
the run folders (runs), and the store of runs (store, SQLite), with a
clockbench-os run's host and kept folders (osruns).

May import: clockbench.errors, clockbench.paths, clockbench.records, clockbench.machines,
and this package."""
