// std::chrono::steady_clock::now() under Google Benchmark (issue 44: the
// ladder's cost against the language's own harness; tools/clockbench/cli/bench_harness.py).
// Built against Debian's libbenchmark-dev with g++ (libstdc++), as the
// ladder's cpp-libstdc++ probe is.
#include <benchmark/benchmark.h>

#include <chrono>

static void steady_clock_now(benchmark::State &state)
{
    for (auto _ : state)
        benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}
BENCHMARK(steady_clock_now);

BENCHMARK_MAIN();
