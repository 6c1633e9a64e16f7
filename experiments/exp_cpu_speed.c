/* Experiment "cpu_speed": how fast the CPU runs a one-instruction loop.
   Hardware manages one or more iterations per cycle; a virtual CPU that
   emulates instructions one at a time manages about a million a second
   (../shared/PLATFORM.md), and then every figure describes the emulator. */
#include "../drivers/cpuinfo.h"
#include "../kernel/console.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/record.h"
#include "../lib/string.h"
#include "experiment.h"

#define LOOP_ITERATIONS 200000
#define EMULATED_BELOW_PER_S 50000000ull
/* The loop runs in chunks, and stops after the chunk that passes this much
   TSC time: hardware and TCG finish all the iterations within it (a
   millisecond or two); an emulator that runs about a million instructions a
   second would take most of a second, and a chunk already says it lies far
   below EMULATED_BELOW_PER_S. One TSC read a chunk: 20 for the whole loop. */
#define LOOP_CHUNK 10000
#define LOOP_BOUND_MS 20

static uint64_t loop_tsc, loop_iterations;

static void speed_measure(const struct profile *p)
{
    (void)p;
    uint64_t r = 0, done = 0, bound = ms_to_tsc(LOOP_BOUND_MS);
    uint64_t a = bracket_begin();
    do {
        for (uint32_t i = 0; i < LOOP_CHUNK; i++)
            __asm__ volatile("add $1, %0" : "+r"(r));
        done += LOOP_CHUNK;
    } while (done < LOOP_ITERATIONS && rdtsc() - a < bound);
    uint64_t b = bracket_end();
    READ_SINK(r);
    loop_tsc = b - a;
    loop_iterations = done;
}

static void speed_report(void)
{
    char a[FMT_FIXED_CHARS];
    const struct cpu_info *ci = &boot_cpu.info;
    struct xf seconds = tsc_ticks_s(loop_tsc ? loop_tsc : 1);
    results.loop_per_second = (uint64_t)xf_to_fixed(xf_div(xf_from_u64(loop_iterations), seconds), 0);
    results.emulated = results.loop_per_second < EMULATED_BELOW_PER_S;
    results.speed_done = true;
    bool tcg = ci->hypervisor && !strcmp(ci->hv_vendor, TCG_SIGNATURE);
    /* The question the phase asks, answered in words: the signature names
       TCG even where its translated code runs at hardware speed; a loop far
       below any hardware is an emulator whatever the signature says. */
    const char *answer = results_emulator() ? "emulator" : "hardware";
    const char *by = results.emulated ? "loop speed" : tcg ? "signature" : "loop speed";
    kprintf("\n== CPU speed ==\n  A one-instruction loop runs %s million iterations per second.\n",
            fmt_fixed(a, (int64_t)results.loop_per_second, 6, 2));
    if (results.emulated)
        kprintf("  Hardware or an emulator? An emulator: that is far below any hardware (hundreds of millions "
                "or more); this virtual CPU emulates instructions one at a time, so the figures describe the "
                "emulator.\n");
    else if (tcg)
        kprintf("  Hardware or an emulator? An emulator: the hypervisor signature \"%s\" is QEMU's TCG, which "
                "translates every instruction (its translated loop runs at hardware speed, so the speed alone cannot "
                "tell); the figures describe the emulator, not this computer's hardware.\n",
                ci->hv_vendor);
    else if (ci->hypervisor)
        kprintf("  Hardware or an emulator? Hardware, as far as the loop can tell: it runs at hardware speed, so "
                "this virtual CPU runs the code natively under the hypervisor (\"%s\").\n",
                ci->hv_vendor);
    else
        kprintf("  Hardware or an emulator? Hardware: the loop runs at hardware speed and no hypervisor is "
                "present.\n");
    struct record r;
    record_begin(&r, "cpu_speed");
    record_u64(&r, "loop_iterations", loop_iterations);
    record_u64(&r, "loop_ticks", loop_tsc);
    record_u64(&r, "iterations_per_s", results.loop_per_second);
    record_bool(&r, "emulated", results.emulated);
    record_str(&r, "answer", answer);
    record_str(&r, "answer_by", by);
    emit(&r);
}

const struct experiment exp_cpu_speed = {
    .name = "cpu_speed",
    .what = "a one-instruction loop: hardware or an emulator?",
    .needs_tsc = true,
    .measure = speed_measure,
    .report = speed_report,
};
