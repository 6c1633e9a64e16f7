// process.hrtime.bigint() under tinybench (issue 44: the ladder's cost against
// the language's own harness; tools/clockbench/cli/bench_harness.py).
// tinybench times each run of its task alone with a clock as dear as the one
// measured here, so a task of one call is mostly the harness's own two reads
// (its subtractTimerOverhead, calibrated cold, took 70-121 ns off calls of
// 30-40 ns and clamped most samples to 0). As a benchmark of a nanosecond
// operation is written for any harness, the task is a loop of CALLS calls
// (what the ladder's batch is too, os/lang/node/probe.js) and the figures are
// divided by CALLS. One JSON line out: the task's latency statistics in ms
// per call, as tinybench gives them per task.
import { Bench } from 'tinybench';

const CALLS = 1000;
let sink = 0n;

const bench = new Bench({ name: 'clockbench harness', timestampProvider: 'hrtimeNow', time: 2000, warmupTime: 500 });
bench.add('process.hrtime.bigint', () => {
  let v = 0n;
  for (let i = 0; i < CALLS; i++) v = process.hrtime.bigint();
  sink ^= v;
});
await bench.run();

const task = bench.tasks[0];
const r = task.result;
if (r.state !== 'completed') {
  console.error(`tinybench: process.hrtime.bigint: ${r.state}${r.error ? `: ${r.error.message}` : ''}`);
  process.exit(1);
}
const { mean, p50, sd, rme, samplesCount } = r.latency;
console.log(JSON.stringify({
  harness: 'tinybench', api: task.name, unit: 'ms', calls_per_sample: CALLS,
  mean: mean / CALLS, p50: p50 / CALLS, sd: sd / CALLS, rme, samples: samplesCount,
  timestamp_provider: 'hrtimeNow', node: process.version, sink: Number(sink & 1n),
}));
