/* Experiment "read_cost": what one read of each target costs, in TSC
   ticks. Each read sits alone between two serialised TSC reads (reads.h:
   inlined, no call), and each after an empty bracket, the same code
   without the read; the empty brackets' median is subtracted from every
   figure of the full ones. TSC variants are also read 64 times in a row
   between two brackets, unrolled, so the cost below one bracket's
   granularity shows; an empty bracket is subtracted from those too.

   The TSC's own step comes first (back-to-back reads: the least non-zero
   difference and their common divisor). A single-read figure within a few
   steps of zero is quantisation, not a cost (an AMD host's TSC moves in
   steps of about 10 ns): such a row is printed as below the step, and for
   the TSC variants the batch gives the per-read figure instead.

   A read whose bracket held a stop of the machine (a VM paused, migrated
   or restored while the TSC ran on, as under KVM: STOP_MS or more) is no
   cost of a read: it is left out of every figure, counted and reported.

   Known answer: under QEMU's TCG with -icount shift=0 every instruction
   advances the TSC by exactly one tick, so a read costs the number of its
   instructions: rdtsc 1, lfence;rdtsc 2, an HPET load 1
   (tests/boot/test_read_cost.py). */
#include "../drivers/cpu.h"
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/memory.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/cmdline.h"
#include "../lib/record.h"
#include "experiment.h"

#define BATCH_K 64
#define BATCH_REPS 100
#define STAIR_REPS 32             /* the least of this many brackets per stair (drivers/cpu.h) */
/* a read this long held a stop of the machine, not a loaded host's
   hiccup (0.1-0.3 s here): the drift's threshold (exp_rtc.c STOP_MIN_MS) */
#define STOP_MS 500
#define READ_STALL_MAX_MS 10000

struct cost {
    bool available, measured;
    const char *why;
    struct summary latency;       /* TSC ticks, the empty brackets' median subtracted */
    uint64_t bracket_overhead;    /* the empty bracket's median */
    bool batch_done;
    struct xf batch_ticks;        /* per read */
    uint32_t stops;               /* reads left out: their bracket held a stop */
    uint64_t longest_stop;        /* the longest of them, ticks */
    uint64_t stall_ms;            /* read_stall=MS, injected into this row */
};
static struct cost costs[TARGET_COUNT];
/* The TSC's own step, ticks (0 when not measured), by the staircase: the
   least bracketed time of j dependent additions, for every j. (Back-to-back
   differences, which the sequential experiment reports, are RDTSC's own
   latency where the TSC is coarse, and cannot tell it.) */
static uint64_t tsc_step;
/* read_stall=MS (docs/output.md), 0 when not given */
static uint64_t read_stall_ms;

static void stall_parse(void)
{
    read_stall_ms = 0;
    const char *v = cmdline_get(&boot_cmdline, "read_stall");
    if (v && (!cmdline_parse_u64(v, &read_stall_ms) || read_stall_ms < 1 || read_stall_ms > READ_STALL_MAX_MS)) {
        kprintf("Note: read_stall=%s is not a number of milliseconds (1-%u); nothing is stalled\n", v, READ_STALL_MAX_MS);
        read_stall_ms = 0;
    }
}

static void measure_tsc_step(void)
{
    uint64_t mins[TSC_STAIR_MAX];
    tsc_staircase(mins, TSC_STAIR_MAX, STAIR_REPS);
    tsc_step = stats_staircase_step(mins, TSC_STAIR_MAX);
    results.tsc_step_ticks = tsc_step;
}

/* n reads, each alone between brackets, each after an empty bracket (the
   same code without the read), so that both see the same conditions;
   returns how many were taken before the time budget ran out. */
static inline __attribute__((always_inline)) uint32_t cost_loop(enum read_kind k, const struct read_src *s, uint64_t *full,
                                                                 uint64_t *empty, uint32_t n, uint64_t budget)
{
    /* a private copy, held in registers: the brackets' memory clobber would
       otherwise make the compiler reload the address between them */
    const struct read_src src = *s;
    uint64_t start = bracket_begin();
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e0 = bracket_begin();
        read_raw(READ_NONE, &src);
        uint64_t e1 = bracket_end();
        uint64_t a = bracket_begin();
        read_raw(k, &src);
        uint64_t b = bracket_end();
        empty[i] = e1 - e0;
        full[i] = b - a;
        if (b - start > budget)
            return i + 1;
    }
    return n;
}

/* read_stall=MS: the rdtsc row's loop with its middle read held `stall`
   ticks inside its bracket, as a stop of the machine holds it: a fault of
   known size from inside, for the test that such a read is left out. A
   loop of its own, so that the code every other run measures is unchanged. */
static __attribute__((noinline)) uint32_t cost_loop_stalled(const struct read_src *s, uint64_t *full, uint64_t *empty,
                                                            uint32_t n, uint64_t budget, uint64_t stall)
{
    const struct read_src src = *s;
    uint64_t start = bracket_begin();
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e0 = bracket_begin();
        read_raw(READ_NONE, &src);
        uint64_t e1 = bracket_end();
        uint64_t a = bracket_begin();
        read_raw(READ_RDTSC, &src);
        if (i == n / 2)  /* bounded by the TSC and by a count */
            for (uint64_t k = 0; k < 4000000000ull && rdtsc() - a < stall; k++)
                cpu_relax();
        uint64_t b = bracket_end();
        empty[i] = e1 - e0;
        full[i] = b - a;
        if (b - start > budget + stall)
            return i + 1;
    }
    return n;
}

#define REPEAT8(x) x x x x x x x x
#define REPEAT64(x) REPEAT8(REPEAT8(x))

/* BATCH_K reads in a row, unrolled: no loop counter between them. */
static inline __attribute__((always_inline)) uint64_t batch(enum read_kind k, const struct read_src *s)
{
    const struct read_src src = *s;
    uint64_t a = bracket_begin();
    REPEAT64(read_raw(k, &src);)
    uint64_t b = bracket_end();
    return b - a;
}

#define COST_CALL(K, s, full, empty, n, budget, got) (*(got) = cost_loop(K, s, full, empty, n, budget))
#define BATCH_CALL(K, s, out) (*(out) = batch(K, s))

static void cost_one(enum target_id t, const struct read_src *src, uint32_t n, uint64_t budget)
{
    struct cost *c = &costs[t];
    uint64_t mark = memory_mark();
    uint64_t *full = memory_alloc((size_t)n * sizeof *full);
    uint64_t *empty = memory_alloc((size_t)n * sizeof *empty);
    uint64_t *scratch = memory_alloc((size_t)n * sizeof *scratch);
    if (!full || !empty || !scratch) {
        memory_release(mark);
        c->why = "no memory for the samples (the memory map gave no usable region)";
        return;
    }
    uint32_t got = 0;
    if (read_stall_ms && src->kind == READ_RDTSC) {
        c->stall_ms = read_stall_ms;
        got = cost_loop_stalled(src, full, empty, n, budget, ms_to_tsc(read_stall_ms));
    } else {
        READ_DISPATCH(src->kind, COST_CALL, src, full, empty, n, budget, &got);
    }
    uint64_t stop_ticks = ms_to_tsc(STOP_MS);
    size_t kept = stats_drop_pairs_above(full, empty, got, stop_ticks ? stop_ticks : ~0ull, &c->longest_stop);
    c->stops = got - (uint32_t)kept;
    got = (uint32_t)kept;
    struct summary sf, se;
    stats_summarise(full, got, scratch, &sf);
    stats_summarise(empty, got, scratch, &se);
    memory_release(mark);
    c->bracket_overhead = se.p50;
    /* the empty brackets' median: the bracket's own typical cost, measured
       interleaved with the reads; one figure subtracted from all */
    c->latency = sf;
    stats_subtract(&c->latency, se.p50);
    c->measured = got > 0;
    if (!c->measured && c->stops)
        c->why = "every read held a stop of the machine";
    results.target[t].cost_done = c->measured;
    results.target[t].p50_ticks = c->latency.p50;
    results.target[t].below_step = stats_below_step(c->latency.p50, tsc_step);
    if (!target_is_tsc(t))
        return;
    uint64_t best = ~0ull, best_empty = ~0ull;
    for (int r = 0; r < BATCH_REPS; r++) {
        uint64_t x = 0, y = 0;
        READ_DISPATCH(src->kind, BATCH_CALL, src, &x);
        BATCH_CALL(READ_NONE, src, &y);
        if (x < best)
            best = x;
        if (y < best_empty)
            best_empty = y;
    }
    int64_t net = (int64_t)best - (int64_t)best_empty;
    c->batch_done = true;
    c->batch_ticks = xf_div(xf_from_i64(net > 0 ? net : 0), xf_from_u64(BATCH_K));
    results.target[t].batch_done = true;
    results.target[t].batch_ticks = c->batch_ticks;
}

static void read_cost_measure(const struct profile *p)
{
    stall_parse();
    measure_tsc_step();
    for (int t = 0; t < TARGET_COUNT; t++) {
        struct read_src src;
        struct cost *c = &costs[t];
        *c = (struct cost){0};
        c->available = target_source((enum target_id)t, &src, &c->why);
        if (!c->available)
            continue;
        bool tsc = target_is_tsc((enum target_id)t);
        cost_one((enum target_id)t, &src, tsc ? p->latency_fast : p->latency_slow, ms_to_tsc(p->latency_ms));
    }
}

static void read_cost_report(void)
{
    char b[7][FMT_FIXED_CHARS];
    const struct profile *p = results.profile;
    kprintf("\n== Read cost (ns; TSC %s MHz, %s) ==\n", xs(b[0], xf_div(results.tsc_hz, xf_from_u64(1000000)), 3),
            results.tsc_hz_source);
    kprintf("  up to %u reads per TSC variant, %u per other counter, each alone between\n", p->latency_fast, p->latency_slow);
    kprintf("  two serialised TSC reads, less the median of the same code without the\n  read (run interleaved with it)\n");
    struct xf step_ns = tsc_ticks_to_ns(xf_from_u64(tsc_step));
    if (tsc_step > 1)
        kprintf("  the TSC moves in steps of %llu ticks (%s ns) here:\n"
                "  a p50 under %u steps is the step's, not a cost, and is not printed as one\n",
                (unsigned long long)tsc_step, xs(b[1], step_ns, 2), STEP_FEW);
    else if (tsc_step)
        kprintf("  the TSC counts every tick here (its step: %llu)\n", (unsigned long long)tsc_step);
    struct record sr;
    record_begin(&sr, "tsc_step");
    record_u64(&sr, "step_ticks", tsc_step);
    record_xf_fixed(&sr, "step_ns", step_ns, 3);
    record_u64(&sr, "staircase", TSC_STAIR_MAX);
    record_u64(&sr, "few", STEP_FEW);
    emit(&sr);
    kprintf("  %-12s %8s %8s %8s %8s %8s %8s %8s\n", "", "min", "p50", "mean", "p99", "p99.9", "max", "stddev");
    static const char *const keys[7] = {"min_ns", "p50_ns", "mean_ns", "p99_ns", "p999_ns", "max_ns", "stddev_ns"};
    for (int t = 0; t < TARGET_COUNT; t++) {
        const struct cost *c = &costs[t];
        const char *name = target_info[t].name;
        if (!c->available)
            continue;
        if (!c->measured) {
            kprintf("  %-12s not measured: %s\n", name, c->why);
            check_skip("read cost", "%s: %s", name, c->why);
            continue;
        }
        const struct summary *s = &c->latency;
        struct xf v[7] = {tsc_ticks_ns(s->min), tsc_ticks_ns(s->p50), tsc_ticks_to_ns(s->mean), tsc_ticks_ns(s->p99),
                          tsc_ticks_ns(s->p999), tsc_ticks_ns(s->max), tsc_ticks_to_ns(s->stddev)};
        bool below = results.target[t].below_step;
        kprintf("  %-12s", name);
        if (below) {
            char cost[RESULTS_COST_CHARS];
            kprintf(" %s\n", results_read_cost(cost, t));
        } else {
            for (int k = 0; k < 7; k++)
                kprintf(" %8s", ns_cell(b[k], v[k]));
            kprintf("\n");
        }
        struct record r;
        record_begin(&r, "latency");
        record_str(&r, "counter", name);
        record_u64(&r, "n", s->n);
        for (int k = 0; k < 7; k++)
            record_xf_fixed(&r, keys[k], v[k], 3);
        record_u64(&r, "min_ticks", s->min);
        record_u64(&r, "p50_ticks", s->p50);
        record_u64(&r, "max_ticks", s->max);
        record_u64(&r, "bracket_overhead_ticks", c->bracket_overhead);
        record_bool(&r, "below_step", below);
        record_u64(&r, "stops_left_out", c->stops);
        if (c->stops)
            record_xf_fixed(&r, "longest_left_out_ns", tsc_ticks_ns(c->longest_stop), 0);
        else
            record_null(&r, "longest_left_out_ns");
        if (c->stall_ms)
            record_u64(&r, "stall_injected_ms", c->stall_ms);
        if (c->batch_done) {
            record_u64(&r, "batch_k", BATCH_K);
            record_xf_fixed(&r, "batch_ns_per_read", tsc_ticks_to_ns(c->batch_ticks), 3);
            record_xf_fixed(&r, "batch_ticks_per_read", c->batch_ticks, 3);
        }
        emit(&r);
    }
    for (int t = 0; t < TARGET_COUNT; t++)
        if (costs[t].available && costs[t].stops)
            kprintf("  %s: %u read%s held a stop of the machine (the longest %s s%s),\n"
                    "  left out of its figures: no read costs that\n",
                    target_info[t].name, costs[t].stops, costs[t].stops == 1 ? "" : "s",
                    xs(b[0], xf_div(tsc_ticks_ns(costs[t].longest_stop), xf_from_u64(1000000000ull)), 3),
                    costs[t].stall_ms ? "; read_stall, on purpose" : "");
    kprintf("  Batches: %u reads in a row between two brackets, unrolled, an empty\n  bracket subtracted:\n", BATCH_K);
    for (int t = 0; t < TARGET_COUNT; t++)
        if (costs[t].batch_done)
            kprintf("  %-12s %s ns a read (%s ticks)\n", target_info[t].name, xs(b[0], tsc_ticks_to_ns(costs[t].batch_ticks), 2),
                    xs(b[1], costs[t].batch_ticks, 2));
}

const struct experiment exp_read_cost = {
    .name = "read_cost",
    .what = "the cost of one read of each counter and TSC variant",
    .needs_tsc = true,
    .measure = read_cost_measure,
    .report = read_cost_report,
};
