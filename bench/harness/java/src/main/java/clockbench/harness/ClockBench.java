// System.nanoTime() under JMH (issue 44: the ladder's cost against the
// language's own harness; tools/clockbench/cli/bench_harness.py). The value is
// returned, so JMH's implicit Blackhole keeps the call.
package clockbench.harness;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;

public class ClockBench {
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    public long nanoTime() {
        return System.nanoTime();
    }
}
