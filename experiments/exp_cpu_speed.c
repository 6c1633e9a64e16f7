/* Experiment "cpu_speed": how fast the CPU runs a one-instruction loop.
   Hardware manages one or more iterations per cycle; a virtual CPU that
   emulates instructions one at a time manages about a million a second
   (../shared/PLATFORM.md), and then every figure describes the emulator. */
#include "../kernel/console.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/record.h"
#include "experiment.h"

#define LOOP_ITERATIONS 200000
#define EMULATED_BELOW_PER_S 50000000ull

static uint64_t loop_tsc;

static void speed_measure(const struct profile *p)
{
    (void)p;
    uint64_t r = 0;
    uint64_t a = bracket_begin();
    for (uint32_t i = 0; i < LOOP_ITERATIONS; i++)
        __asm__ volatile("add $1, %0" : "+r"(r));
    uint64_t b = bracket_end();
    READ_SINK(r);
    loop_tsc = b - a;
}

static void speed_report(void)
{
    char a[FMT_FIXED_CHARS];
    struct xf seconds = tsc_ticks_s(loop_tsc ? loop_tsc : 1);
    results.loop_per_second = (uint64_t)xf_to_fixed(xf_div(xf_from_u64(LOOP_ITERATIONS), seconds), 0);
    results.emulated = results.loop_per_second < EMULATED_BELOW_PER_S;
    results.speed_done = true;
    kprintf("\n== CPU speed ==\n  A one-instruction loop runs %s million iterations per second%s\n",
            fmt_fixed(a, (int64_t)results.loop_per_second, 6, 2), results.emulated ? ":" : ".");
    if (results.emulated)
        kprintf("  far below any hardware (hundreds of millions or more). This virtual CPU\n"
                "  seems to emulate instructions one at a time; the figures describe the emulator.\n");
    struct record r;
    record_begin(&r, "cpu_speed");
    record_u64(&r, "loop_iterations", LOOP_ITERATIONS);
    record_u64(&r, "loop_ticks", loop_tsc);
    record_u64(&r, "iterations_per_s", results.loop_per_second);
    record_bool(&r, "emulated", results.emulated);
    emit(&r);
}

const struct experiment exp_cpu_speed = {
    .name = "cpu_speed",
    .what = "a one-instruction loop: hardware or an emulator?",
    .needs_tsc = true,
    .measure = speed_measure,
    .report = speed_report,
};
