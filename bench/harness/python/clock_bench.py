"""time.perf_counter_ns() under pyperf (issue 44: the ladder's cost against the
language's own harness; tools/clockbench/cli/bench_harness.py). Runner.timeit,
as `python -m pyperf timeit` does: the name is a local of the timed function,
as the ladder's probe calls it. The driver passes -o FILE and the run's size."""

import pyperf

runner = pyperf.Runner()
runner.timeit("time.perf_counter_ns", stmt="perf_counter_ns()", setup="from time import perf_counter_ns")
