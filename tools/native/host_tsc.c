/* The host's own TSC against one of its clocks, for the known answer of
   the guest's TSC rate (tools/clockbench/machines/host_tsc.py loads it with
   ctypes from the host library and takes one mark before a run and one
   after: the rate is their TSC difference over their clock difference).
   Owned by the tool, not by the tests (tests/host/shim.c). Runs on the
   host, never in the image: this file's rdtsc is its own, not drivers/cpu.h's
   (the tool's native code may use lib/ only, docs/architecture.md). */
#include <stdint.h>
#include <time.h>

struct tool_tsc_mark {
    uint64_t tsc;        /* the TSC at the clock's reading: the middle of its bracket */
    uint64_t half_ticks; /* the bracket's half width: the reading lies within tsc +- this */
    int64_t ns;          /* the clock's reading */
    uint64_t step_ticks; /* the least advance seen between two back-to-back reads of the TSC */
    uint64_t res_ns;     /* the clock's resolution (clock_getres) */
    uint32_t tries;      /* brackets taken; the narrowest is kept */
};

/* lfence on both sides: the read stays between what comes before and after
   it (AMD APM and the Intel SDM both order RDTSC by LFENCE on these CPUs). */
static inline uint64_t host_rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

/* The least nonzero advance of the TSC between two reads: AMD's TSC moves
   in steps of about 25 ticks (PLATFORM.md), so a read can be that far
   behind the instant it stands for. */
static uint64_t host_tsc_step(uint32_t tries)
{
    uint64_t least = UINT64_MAX;
    for (uint32_t i = 0; i < tries; i++) {
        uint64_t a = host_rdtsc(), b = host_rdtsc();
        if (b > a && b - a < least)
            least = b - a;
    }
    return least == UINT64_MAX ? 0 : least;
}

/* One mark: `tries` brackets of the clock's read between two TSC reads,
   the narrowest kept. The clock was read after the first TSC read began and
   before the second one's value was latched, at most one TSC step later
   than it shows: within [t1, t2 + step]. Returns 0, or -1 when the clock
   cannot be read (then *m is left alone). */
int tool_host_tsc_mark(int clock_id, uint32_t tries, struct tool_tsc_mark *m)
{
    struct timespec ts, res;
    uint64_t best_w = UINT64_MAX, best_t1 = 0;
    int64_t best_ns = 0;
    if (tries == 0 || clock_gettime(clock_id, &ts) != 0 || clock_getres(clock_id, &res) != 0)
        return -1;
    uint64_t step = host_tsc_step(tries);
    for (uint32_t i = 0; i < tries; i++) {
        uint64_t t1 = host_rdtsc();
        clock_gettime(clock_id, &ts);
        uint64_t t2 = host_rdtsc();
        if (t2 >= t1 && t2 - t1 < best_w) {
            best_w = t2 - t1;
            best_t1 = t1;
            best_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        }
    }
    if (best_w == UINT64_MAX)
        return -1;
    m->tsc = best_t1 + (best_w + step) / 2;
    m->half_ticks = (best_w + step + 1) / 2;
    m->ns = best_ns;
    m->step_ticks = step;
    m->res_ns = (uint64_t)res.tv_sec * 1000000000 + (uint64_t)res.tv_nsec;
    m->tries = tries;
    return 0;
}
