/* Experiment "sequential": back-to-back reads of each target with nothing
   between them, and the table of deltas between consecutive reads (the
   "sequential reads" table): the resolution a caller actually gets, the
   step the counter moves in, and any backward step. */
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/memory.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/record.h"
#include "../lib/unwrap.h"
#include "experiment.h"

#define HIST_KEEP 1024
#define HIST_RECORD_BINS 64
#define HEAD_ROWS 6
#define BUDGET_EVERY 64 /* the time budget is checked after every 64th read */

struct sequence {
    bool measured;
    const char *why;
    uint64_t reads, deltas, zero_deltas, backward, largest_backward, min_step, step_gcd;
    uint64_t gap_deltas; /* left out: their block of reads spanned a gap longer than one wrap */
    size_t distinct, hist_kept;
    struct hist_bin hist[HIST_KEEP];
};
static struct sequence seqs[TARGET_COUNT];

/* v[0..m] back to back; tb[j] is the TSC at the check after read
   64 j + 63 (tb[-1], the start, is in tb_start). */
static inline __attribute__((always_inline)) uint32_t seq_loop(enum read_kind k, const struct read_src *s, uint64_t *v,
                                                                uint32_t m, uint64_t budget, uint64_t *tb,
                                                                uint64_t *tb_start)
{
    uint64_t start = bracket_begin();
    *tb_start = start;
    for (uint32_t i = 0; i <= m; i++) {
        v[i] = read_value(k, s);
        if ((i & (BUDGET_EVERY - 1)) == BUDGET_EVERY - 1) {
            uint64_t now = bracket_end();
            tb[i / BUDGET_EVERY] = now;
            if (now - start > budget)
                return i;
        }
    }
    if ((m & (BUDGET_EVERY - 1)) != BUDGET_EVERY - 1)
        tb[m / BUDGET_EVERY] = bracket_end();
    return m;
}
#define SEQ_CALL(K, s, v, m, budget, tb, tb0, out) (*(out) = seq_loop(K, s, v, m, budget, tb, tb0))

/* Whether block j of BUDGET_EVERY reads took half a wrap or longer: then
   one of its deltas could be more than half a wrap, and the modular
   difference could not tell it from a step backwards (a host preemption or
   a pause sat inside it). */
static bool block_gap(const uint64_t *tb, uint64_t tb_start, uint32_t j, uint32_t m, uint64_t limit_tsc)
{
    if ((uint64_t)j * BUDGET_EVERY > m)
        return false;
    uint64_t end = tb[j];
    uint64_t begin = j ? tb[j - 1] : tb_start;
    /* under half a wrap, no delta inside can be taken for a backward step */
    return end - begin >= limit_tsc / 2;
}

static void sequence_one(enum target_id t, const struct read_src *src, uint32_t m, uint64_t budget)
{
    struct sequence *q = &seqs[t];
    uint64_t mark = memory_mark();
    uint64_t *v = memory_alloc(((size_t)m + 1) * sizeof *v);
    uint64_t *scratch = memory_alloc(((size_t)m + 1) * sizeof *scratch);
    uint64_t *tb = memory_alloc(((size_t)m / BUDGET_EVERY + 2) * sizeof *tb);
    if (!v || !scratch || !tb) {
        memory_release(mark);
        q->why = "no memory for the samples (the memory map gave no usable region)";
        return;
    }
    uint64_t tb_start = 0;
    READ_DISPATCH(src->kind, SEQ_CALL, src, v, m, budget, tb, &tb_start, &m);
    uint64_t limit = ~0ull;
    int counter = target_info[t].counter;
    if (counter >= 0) {
        struct unwrap_params up;
        unwrap_params_of(counter, &up);
        limit = unwrap_limit_tsc(&up);
    }
    /* deltas in place: v[i] becomes v[i+1] - v[i]. A delta that spans a
       budget check is still checked for a backward step but kept out of the
       table: a TSC read sat between those reads. Consecutive reads are
       nanoseconds to microseconds apart, far below any counter's wrap. */
    size_t kept = 0;
    uint64_t mask = src->mask;
    for (uint32_t i = 0; i < m; i++) {
        uint32_t j = i / BUDGET_EVERY;
        if (limit != ~0ull && (block_gap(tb, tb_start, j, m, limit) ||
                               ((i & (BUDGET_EVERY - 1)) == BUDGET_EVERY - 1 && block_gap(tb, tb_start, j + 1, m, limit)))) {
            q->gap_deltas++;
            continue;
        }
        uint64_t a = v[i] & mask, b = v[i + 1] & mask;
        uint64_t d = (b - a) & mask;
        bool back = mask == ~0ull ? (int64_t)d < 0 : d > mask / 2;
        if (back) {
            uint64_t size = (a - b) & mask;
            q->backward++;
            if (size > q->largest_backward)
                q->largest_backward = size;
            continue;
        }
        if ((i & (BUDGET_EVERY - 1)) == BUDGET_EVERY - 1)
            continue;
        if (d == 0)
            q->zero_deltas++;
        v[kept++] = d;
    }
    q->reads = m + 1;
    q->deltas = kept;
    stats_sort(v, kept, scratch);
    q->distinct = stats_histogram(v, kept, q->hist, HIST_KEEP);
    q->hist_kept = q->distinct < HIST_KEEP ? q->distinct : HIST_KEEP;
    /* over distinct values only: the sorted run gives each once */
    for (size_t i = 0; i < kept; i++) {
        if (v[i] == 0 || (i > 0 && v[i] == v[i - 1]))
            continue;
        if (!q->min_step)
            q->min_step = v[i];
        if (q->step_gcd != 1)
            q->step_gcd = stats_gcd(q->step_gcd, v[i]);
    }
    memory_release(mark);
    q->measured = true;
    struct target_findings *f = &results.target[t];
    f->seq_done = true;
    f->seq_reads = q->reads;
    f->zero_deltas = q->zero_deltas;
    f->min_step = q->min_step;
    f->backward = q->backward;
    f->largest_backward = q->largest_backward;
}

static void sequential_measure(const struct profile *p)
{
    for (int t = 0; t < TARGET_COUNT; t++) {
        struct read_src src;
        seqs[t] = (struct sequence){0};
        if (!target_source((enum target_id)t, &src, &seqs[t].why))
            continue;
        bool tsc = target_is_tsc((enum target_id)t);
        sequence_one((enum target_id)t, &src, tsc ? p->sequence_fast : p->sequence_slow, ms_to_tsc(p->sequence_ms));
    }
}

/* A target's ticks in ns: the TSC's at the measured rate, a counter's at its nominal rate. */
static struct xf target_ticks_ns(enum target_id t, struct xf ticks)
{
    int c = target_info[t].counter;
    return c < 0 ? tsc_ticks_to_ns(ticks) : counter_ticks_ns(c, ticks);
}

static void histogram_records(enum target_id t, const struct sequence *q)
{
    size_t parts = (q->hist_kept + HIST_RECORD_BINS - 1) / HIST_RECORD_BINS;
    for (size_t part = 0; part < parts; part++) {
        struct record r;
        record_begin(&r, "histogram");
        record_str(&r, "counter", target_info[t].name);
        record_u64(&r, "part", part);
        record_u64(&r, "parts", parts);
        record_u64(&r, "distinct", q->distinct);
        record_array_begin(&r, "bins");
        for (size_t i = part * HIST_RECORD_BINS; i < q->hist_kept && i < (part + 1) * HIST_RECORD_BINS; i++) {
            record_array_u64(&r, q->hist[i].value);
            record_array_u64(&r, q->hist[i].count);
        }
        record_array_end(&r);
        emit(&r);
    }
}

/* The most frequent deltas, in order of delta. */
static size_t head_rows(const struct sequence *q, size_t top[HEAD_ROWS])
{
    size_t ntop = 0;
    for (size_t k = 0; k < HEAD_ROWS && k < q->hist_kept; k++) {
        size_t best = (size_t)-1;
        for (size_t i = 0; i < q->hist_kept; i++) {
            bool taken = false;
            for (size_t j = 0; j < ntop; j++)
                taken |= top[j] == i;
            if (!taken && (best == (size_t)-1 || q->hist[i].count > q->hist[best].count))
                best = i;
        }
        top[ntop++] = best;
    }
    for (size_t i = 1; i < ntop; i++)
        for (size_t j = i; j > 0 && top[j] < top[j - 1]; j--) {
            size_t x = top[j];
            top[j] = top[j - 1];
            top[j - 1] = x;
        }
    return ntop;
}

static void report_one(enum target_id t, const struct sequence *q)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    const char *name = target_info[t].name;
    struct xf tick_ns = target_ticks_ns(t, xf_from_u64(1));
    struct xf step_ns = target_ticks_ns(t, xf_from_u64(q->min_step));
    kprintf("\n  %s: %llu back-to-back reads; smallest step %llu tick%s = %s ns;\n    nominal tick %s ns\n", name,
            (unsigned long long)q->reads, (unsigned long long)q->min_step, q->min_step == 1 ? "" : "s", xs(a, step_ns, 1),
            xs(b, tick_ns, 3));
    if (q->zero_deltas)
        kprintf("    %llu of %llu consecutive reads saw the same value: it ticks slower than it can "
                "be read, so its resolution is its step, %s ns\n",
                (unsigned long long)q->zero_deltas, (unsigned long long)q->deltas, xs(a, step_ns, 1));
    else if (q->min_step > 1 && results.target[t].cost_done)
        kprintf("    every read saw a new value: the tick is finer than a read (p50 %s ns), so "
                "the resolution you get is the read cost\n",
                xs(a, tsc_ticks_ns(results.target[t].p50_ticks), 1));
    if (q->step_gcd > 1)
        kprintf("    it moves in steps of %llu ticks (%s ns), not one tick\n", (unsigned long long)q->step_gcd,
                xs(c, target_ticks_ns(t, xf_from_u64(q->step_gcd)), 1));
    /* read cost's staircase gives the TSC's own step, from reads spaced by
       work; a back-to-back pair can land less than a step apart */
    if (target_is_tsc(t) && results.tsc_step_ticks > 1 && q->min_step && q->min_step < results.tsc_step_ticks)
        kprintf("    its smallest step is under the TSC's step (%llu ticks, read cost's staircase):\n"
                "    back-to-back reads can land less than a step apart; reads spaced by work\n"
                "    move by whole steps, and a read's timing is good only to the step\n",
                (unsigned long long)results.tsc_step_ticks);
    size_t top[HEAD_ROWS];
    size_t ntop = head_rows(q, top);
    kprintf("    %14s %12s %10s\n", "delta (ticks)", "ns", "reads");
    uint64_t shown = 0;
    for (size_t k = 0; k < ntop; k++) {
        const struct hist_bin *h = &q->hist[top[k]];
        kprintf("    %14llu %12s %10llu\n", (unsigned long long)h->value, xs(a, target_ticks_ns(t, xf_from_u64(h->value)), 1),
                (unsigned long long)h->count);
        shown += h->count;
    }
    if (q->distinct > ntop)
        kprintf("    and %llu reads at %llu other deltas, up to %llu ticks (%s)\n", (unsigned long long)(q->deltas - shown),
                (unsigned long long)(q->distinct - ntop), (unsigned long long)q->hist[q->hist_kept - 1].value,
                q->distinct > q->hist_kept ? "records hold the smallest 1024" : "all in the records");
    if (q->gap_deltas)
        kprintf("    %llu deltas left out: their block of %u reads took longer than the counter\n"
                "    can unwrap (the CPU was away: a pause, preemption or SMI)\n",
                (unsigned long long)q->gap_deltas, BUDGET_EVERY);
    if (q->backward)
        kprintf("    %llu BACKWARD step%s, the largest %llu ticks\n", (unsigned long long)q->backward,
                q->backward == 1 ? "" : "s", (unsigned long long)q->largest_backward);
    struct record r;
    record_begin(&r, "resolution");
    record_str(&r, "counter", name);
    record_xf_fixed(&r, "min_step_ns", step_ns, 3);
    record_xf_fixed(&r, "nominal_tick_ns", tick_ns, 6);
    record_u64(&r, "min_step_ticks", q->min_step);
    record_u64(&r, "step_gcd_ticks", q->step_gcd);
    record_u64(&r, "reads", q->reads);
    record_u64(&r, "deltas", q->deltas);
    record_u64(&r, "zero_deltas", q->zero_deltas);
    record_u64(&r, "distinct", q->distinct);
    record_u64(&r, "backward", q->backward);
    record_u64(&r, "largest_backward_ticks", q->largest_backward);
    record_u64(&r, "gap_deltas", q->gap_deltas);
    emit(&r);
    histogram_records(t, q);
}

static void sequential_report(void)
{
    kprintf("\n== Resolution: sequential reads (delta between consecutive reads) ==");
    for (int t = 0; t < TARGET_COUNT; t++) {
        const struct sequence *q = &seqs[t];
        if (q->measured)
            report_one((enum target_id)t, q);
        else if (q->why && *q->why && results.target[t].cost_done) {
            kprintf("\n  %s: not measured: %s\n", target_info[t].name, q->why);
            check_skip("sequential reads", "%s: %s", target_info[t].name, q->why);
        }
    }
    kprintf("\n");
}

const struct experiment exp_sequential = {
    .name = "sequential",
    .what = "back-to-back reads: resolution, step, backward steps",
    .needs_tsc = true,
    .measure = sequential_measure,
    .report = sequential_report,
};
