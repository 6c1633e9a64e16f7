// process.hrtime.bigint() under tinybench (issue 44: the ladder's cost against
// the language's own harness; tools/clockbench/cli/bench_harness.py).
// tinybench times each call alone with its clock; for a call near that
// clock's own cost its README's remedy is the nanosecond timer and
// subtractTimerOverhead (the calibrated cost of a back-to-back timer pair
// taken off each sample), both set here. One JSON line out: the task's
// latency statistics in ms, as tinybench gives them.
import { Bench } from 'tinybench';

const bench = new Bench({ name: 'clockbench harness', timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
bench.add('process.hrtime.bigint', () => process.hrtime.bigint());
await bench.run();

const task = bench.tasks[0];
const r = task.result;
if (r.state !== 'completed') {
  console.error(`tinybench: process.hrtime.bigint: ${r.state}${r.error ? `: ${r.error.message}` : ''}`);
  process.exit(1);
}
const { mean, p50, sd, rme, samplesCount } = r.latency;
console.log(JSON.stringify({
  harness: 'tinybench', api: task.name, unit: 'ms', mean, p50, sd, rme, samples: samplesCount,
  timer_overhead_ms: bench.timerOverhead ?? null, timestamp_provider: 'hrtimeNow', node: process.version,
}));
