/* The measurement engine (see measure.h). Every loop is bounded by an
   iteration cap and a TSC deadline; a counter that stops moving is marked
   stuck and dropped from the phase, and the others go on. */
#include "measure.h"

#include "cmdline.h"
#include "console.h"
#include "cpu.h"
#include "cpuinfo.h"
#include "discover.h"
#include "format.h"
#include "memory.h"
#include "probe.h"
#include "string.h"

struct measurement measured;

static const struct profile profiles[] = {
    {.name = "quick", .drift_ms = 2000, .hwlat_ms = 500, .latency_fast = 20000, .latency_slow = 2000,
     .sequence_fast = 20000, .sequence_slow = 5000, .latency_ms = 60, .sequence_ms = 20, .slots_per_s = 512},
    {.name = "standard", .drift_ms = 60000, .hwlat_ms = 5000, .latency_fast = 100000, .latency_slow = 10000,
     .sequence_fast = 100000, .sequence_slow = 20000, .latency_ms = 1000, .sequence_ms = 300, .slots_per_s = 128},
    {.name = "soak", .drift_ms = 300000, .hwlat_ms = 30000, .latency_fast = 100000, .latency_slow = 10000,
     .sequence_fast = 100000, .sequence_slow = 20000, .latency_ms = 1000, .sequence_ms = 300, .slots_per_s = 48},
};
static struct profile custom;

#define MAX_KEPT_PER_SERIES 16384
#define BATCH_K 64
#define BATCH_REPS 100
#define OVERHEAD_REPS 1000
#define HWLAT_TYPICAL_N 1001
#define MSR_SMI_COUNT 0x34 /* Intel SDM vol. 4, Table 2-2: SMI count, Nehalem and later */

static volatile uint64_t sink;

const struct profile *profile_select(char *note, unsigned note_len)
{
    note[0] = '\0';
    uint64_t seconds;
    const char *dur = cmdline_get(&boot_cmdline, "duration");
    if (dur) {
        if (cmdline_parse_u64(dur, &seconds) && seconds >= 1 && seconds <= 86400) {
            /* quick's sample counts and budgets, with the drift window asked for */
            custom = profiles[0];
            custom.name = "duration";
            custom.drift_ms = (uint32_t)(seconds * 1000);
            custom.hwlat_ms = seconds * 100 < 30000 ? (uint32_t)(seconds * 100) : 30000;
            uint64_t slots = MAX_KEPT_PER_SERIES / seconds;
            custom.slots_per_s = (uint32_t)(slots > 512 ? 512 : slots < 1 ? 1 : slots);
            return &custom;
        }
        fmt_format(note, note_len, "duration=%s is not a whole number of seconds from 1 to 86400; ignored", dur);
    }
    const char *name = cmdline_get(&boot_cmdline, "profile");
    if (name) {
        for (unsigned i = 0; i < sizeof profiles / sizeof *profiles; i++)
            if (!strcmp(name, profiles[i].name))
                return &profiles[i];
        fmt_format(note, note_len, "profile=%s is not quick, standard or soak; using quick", name);
    }
    return &profiles[0];
}

/* --- the TSC estimate that sizes every phase --- */

static int best_reference(void)
{
    static const int order[] = {COUNTER_HPET, COUNTER_ACPI_PM, COUNTER_PIT};
    for (unsigned i = 0; i < sizeof order / sizeof *order; i++)
        if (counters[order[i]].present)
            return order[i];
    return -1;
}

/* Two bracketed readings of ref about 50 ms apart (by ref's own nominal
   rate), unwrapped on the way. Good to a fraction of a percent: enough to
   size the phases, never reported as the measurement. */
static bool quick_calibration(int ref, uint64_t *hz)
{
    const struct counter *c = &counters[ref];
    uint64_t target_ticks = c->nominal_mhz / 1000 / 20;
    uint64_t t0 = rdtsc_begin(), last = c->read() & c->mask, acc = 0, t1 = 0;
    t0 = (t0 + rdtsc_end()) / 2;
    for (uint64_t i = 0; i < 100000000ull; i++) {
        uint64_t a = rdtsc_begin();
        uint64_t v = c->read() & c->mask;
        uint64_t b = rdtsc_end();
        uint64_t d = (v - last) & c->mask;
        if (d <= c->mask / 2) {
            acc += d;
            last = v;
        }
        if (acc >= target_ticks) {
            t1 = a / 2 + b / 2;
            break;
        }
        if (b - t0 > (1ull << 36)) /* 14-70 s at 1-5 GHz: the reference is not moving usefully */
            break;
    }
    if (!t1 || acc == 0)
        return false;
    struct xf f = xf_div(xf_mul(xf_from_u64(t1 - t0), xf_from_u64(c->nominal_mhz)), xf_from_u64(acc * 1000));
    *hz = (uint64_t)xf_to_fixed(f, 0);
    return true;
}

static void estimate_tsc(void)
{
    int ref = best_reference();
    uint64_t hz;
    if (ref >= 0 && quick_calibration(ref, &hz) && hz > 1000000) {
        measured.tsc_estimate_hz = hz;
        measured.tsc_estimate_source = counters[ref].name;
    } else if (counters[COUNTER_TSC].nominal_mhz) {
        measured.tsc_estimate_hz = counters[COUNTER_TSC].nominal_mhz / 1000;
        measured.tsc_estimate_source = "the claimed nominal";
    } else {
        measured.tsc_estimate_hz = 2000000000ull;
        measured.tsc_estimate_source = "an assumed 2 GHz (no reference, no claim)";
    }
}

static uint64_t ms_to_tsc(uint64_t ms) { return measured.tsc_estimate_hz / 1000 * ms; }

/* --- read cost --- */

static uint64_t noop_read(void) { return 0; }

static uint64_t batch_ticks(uint64_t (*fn)(void), uint32_t k)
{
    uint64_t acc = 0;
    uint64_t a = rdtsc_begin();
    for (uint32_t i = 0; i < k; i++)
        acc ^= fn();
    uint64_t b = rdtsc_end();
    sink = acc;
    return b - a;
}

static void measure_latency(struct target *t, uint32_t n, uint64_t budget_tsc, bool batches)
{
    uint64_t mark = memory_mark();
    uint64_t *cost = memory_alloc((size_t)n * sizeof *cost);
    uint64_t *scratch = memory_alloc((size_t)n * sizeof *scratch);
    if (!cost || !scratch)
        n = 0;
    uint64_t over = ~0ull;
    for (int i = 0; i < OVERHEAD_REPS; i++) {
        uint64_t a = rdtsc_begin();
        uint64_t b = rdtsc_end();
        if (b - a < over)
            over = b - a;
    }
    t->bracket_overhead = over;
    uint64_t acc = 0, start = rdtsc();
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = rdtsc_begin();
        acc ^= t->read();
        uint64_t b = rdtsc_end();
        uint64_t d = b - a;
        cost[i] = d > over ? d - over : 0;
        if (b - start > budget_tsc) { /* the time budget ends the phase early */
            n = i + 1;
            break;
        }
    }
    sink = acc;
    stats_summarise(cost, n, scratch, &t->latency);
    memory_release(mark);

    if (!batches)
        return;
    uint64_t best_read = ~0ull, best_empty = ~0ull;
    for (int r = 0; r < BATCH_REPS; r++) {
        uint64_t x = batch_ticks(t->read, BATCH_K), y = batch_ticks(noop_read, BATCH_K);
        if (x < best_read)
            best_read = x;
        if (y < best_empty)
            best_empty = y;
    }
    t->batch_done = true;
    t->batch_k = BATCH_K;
    int64_t net = (int64_t)best_read - (int64_t)best_empty;
    t->batch_ticks = xf_div(xf_from_i64(net > 0 ? net : 0), xf_from_u64(BATCH_K));
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void measure_sequence(struct target *t, uint32_t m, uint64_t budget_tsc)
{
    uint64_t mark = memory_mark();
    uint64_t *v = memory_alloc(((size_t)m + 1) * sizeof *v);
    uint64_t *scratch = memory_alloc(((size_t)m + 1) * sizeof *scratch);
    if (!v || !scratch) {
        memory_release(mark);
        return;
    }
    /* the budget is checked after every 64th read; the deltas across a check are left out below */
    uint64_t start = rdtsc();
    for (uint32_t i = 0; i <= m; i++) {
        v[i] = t->read();
        if ((i & 63) == 63 && rdtsc() - start > budget_tsc) {
            m = i;
            break;
        }
    }
    /* deltas in place: v[i] becomes v[i+1] - v[i]. A delta that spans a
       budget check (after every 64th read) is still checked for a backward
       step but kept out of the table: a TSC read sat between those reads. */
    size_t kept = 0;
    for (uint32_t i = 0; i < m; i++) {
        uint64_t a = v[i] & t->mask, b = v[i + 1] & t->mask;
        uint64_t d = (b - a) & t->mask;
        bool back = t->mask == ~0ull ? (int64_t)d < 0 : d > t->mask / 2;
        if (back) {
            uint64_t size = (a - b) & t->mask;
            t->backward++;
            if (size > t->largest_backward)
                t->largest_backward = size;
            continue;
        }
        if ((i & 63) == 63)
            continue;
        if (d == 0)
            t->zero_deltas++;
        v[kept++] = d;
    }
    t->seq_reads = m + 1;
    t->seq_deltas = kept;
    stats_sort(v, kept, scratch);
    t->distinct = stats_histogram(v, kept, t->hist, HIST_KEEP);
    t->hist_kept = t->distinct < HIST_KEEP ? t->distinct : HIST_KEEP;
    t->min_step = 0;
    t->step_gcd = 0;
    /* over distinct values only: the sorted run gives each once */
    for (size_t i = 0; i < kept; i++) {
        if (v[i] == 0 || (i > 0 && v[i] == v[i - 1]))
            continue;
        if (!t->min_step)
            t->min_step = v[i];
        if (t->step_gcd != 1)
            t->step_gcd = gcd(t->step_gcd, v[i]);
    }
    memory_release(mark);
}

/* --- frequency and drift --- */

struct sampler {
    int counter;
    uint64_t (*read)(void);
    uint64_t mask;
    uint64_t last_raw, acc, last_change;
    uint64_t stall_tsc, stuck_tsc;
    bool in_stall, active;
    int64_t *x, *y;
    uint32_t *w; /* bracket width + 1; 0 marks an empty slot */
    struct freq_series *out;
};

static void sample_all(struct sampler *s, int ns, uint64_t window, uint32_t slots)
{
    uint64_t slot_len = window / slots ? window / slots : 1;
    uint64_t start = rdtsc_begin();
    for (int k = 0; k < ns; k++) {
        s[k].last_raw = s[k].read() & s[k].mask;
        s[k].last_change = start;
    }
    int active = ns;
    for (uint64_t it = 0; active > 0 && it < 4000000000ull; it++) {
        for (int k = 0; k < ns; k++) {
            struct sampler *p = &s[k];
            if (!p->active)
                continue;
            uint64_t a = rdtsc_begin();
            uint64_t raw = p->read() & p->mask;
            uint64_t b = rdtsc_end();
            uint64_t d = (raw - p->last_raw) & p->mask;
            bool back = p->mask == ~0ull ? (int64_t)d < 0 : d > p->mask / 2;
            if (back) {
                p->out->backward++;
            } else if (d) {
                if (raw < p->last_raw)
                    p->out->wraps++;
                p->acc += d;
                p->last_raw = raw;
                p->in_stall = false;
                p->last_change = b;
            } else if (b - p->last_change > p->stall_tsc) {
                uint64_t len = b - p->last_change;
                if (!p->in_stall)
                    p->out->stalls++;
                p->in_stall = true;
                if (len > p->out->longest_stall_tsc)
                    p->out->longest_stall_tsc = len;
                if (len > p->stuck_tsc) {
                    p->out->stuck = true;
                    p->out->stuck_at_tsc = b - start;
                    p->active = false;
                    active--;
                    continue;
                }
            }
            uint64_t mid = a / 2 + b / 2 + (a & b & 1);
            uint64_t slot = (mid - start) / slot_len;
            if (slot < slots && (p->w[slot] == 0 || b - a + 1 < p->w[slot])) {
                p->x[slot] = (int64_t)(mid - start);
                p->y[slot] = (int64_t)p->acc;
                p->w[slot] = (uint32_t)(b - a + 1 < 0xFFFFFFFFu ? b - a + 1 : 0xFFFFFFFEu);
            }
            if (b - start >= window)
                goto done;
        }
    }
done:;
    uint64_t end = rdtsc_end();
    for (int k = 0; k < ns; k++)
        s[k].out->window_tsc = end - start;
}

/* Keeps the samples whose bracket is within twice the narrowest, fits the
   whole window and each sub-window. */
static void fit_series(struct sampler *p, uint32_t slots, uint64_t sub_len)
{
    struct freq_series *f = p->out;
    uint32_t n = 0;
    uint32_t min_w = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < slots; i++)
        if (p->w[i] && p->w[i] < min_w)
            min_w = p->w[i];
    for (uint32_t i = 0; i < slots; i++)
        if (p->w[i])
            f->slots++;
    if (min_w == 0xFFFFFFFFu)
        return;
    f->min_width = min_w - 1;
    /* within twice the narrowest (and a few ticks, for brackets of 0-2 ticks) */
    uint64_t limit = 2 * f->min_width > f->min_width + 4 ? 2 * f->min_width : f->min_width + 4;
    for (uint32_t i = 0; i < slots; i++) {
        if (!p->w[i] || p->w[i] - 1 > limit)
            continue;
        p->x[n] = p->x[i];
        p->y[n] = p->y[i];
        n++;
    }
    f->kept = n;
    if (n < 3)
        return;
    f->fitted = fit_line(p->x, p->y, n, &f->fit);
    for (uint32_t k = 0; f->fitted && k < RESIDUALS_KEEP && k < n; k++) {
        uint32_t i = n <= RESIDUALS_KEEP ? k : (uint32_t)((uint64_t)k * (n - 1) / (RESIDUALS_KEEP - 1));
        struct xf line = xf_add(f->fit.intercept, xf_mul(f->fit.slope, xf_from_i64(p->x[i])));
        f->resid_x[k] = (uint64_t)p->x[i];
        f->resid_mticks[k] = xf_to_fixed(xf_sub(xf_from_i64(p->y[i]), line), 3);
        f->resid_count = k + 1;
    }
    f->two_point = xf_div(xf_from_i64(p->y[n - 1] - p->y[0]), xf_from_i64(p->x[n - 1] - p->x[0]));
    uint32_t first = 0;
    while (first < n && f->sub_count < SUBWINDOWS_MAX) {
        uint64_t from = (uint64_t)p->x[first] / sub_len * sub_len;
        uint32_t last = first;
        while (last < n && (uint64_t)p->x[last] < from + sub_len)
            last++;
        if (last - first >= 3 && fit_line(p->x + first, p->y + first, last - first, &f->sub[f->sub_count])) {
            f->sub_start_tsc[f->sub_count] = from;
            f->sub_count++;
        }
        first = last;
    }
}

static void measure_frequency(const struct profile *prof)
{
    struct sampler s[COUNTER_COUNT];
    int ns = 0;
    uint64_t window = ms_to_tsc(prof->drift_ms);
    uint64_t slots64 = (uint64_t)prof->slots_per_s * prof->drift_ms / 1000;
    uint32_t slots = (uint32_t)(slots64 < 3 ? 3 : slots64 > MAX_KEPT_PER_SERIES ? MAX_KEPT_PER_SERIES : slots64);
    uint64_t mark = memory_mark();
    for (int c = 0; c < COUNTER_COUNT; c++) {
        const struct counter *ct = &counters[c];
        if (c == COUNTER_TSC || !ct->present)
            continue;
        struct sampler *p = &s[ns];
        *p = (struct sampler){.counter = c, .read = ct->read, .mask = ct->mask, .active = true};
        p->x = memory_alloc(slots * sizeof *p->x);
        p->y = memory_alloc(slots * sizeof *p->y);
        p->w = memory_alloc(slots * sizeof *p->w);
        if (!p->x || !p->y || !p->w)
            break;
        memset(p->w, 0, slots * sizeof *p->w);
        /* a stall: no change for 10 nominal ticks and at least 10 us;
           stuck: no change for 100 ms */
        uint64_t tick_tsc = ct->nominal_mhz ? measured.tsc_estimate_hz * 1000 / ct->nominal_mhz : 0;
        p->stall_tsc = 10 * tick_tsc > ms_to_tsc(1) / 100 ? 10 * tick_tsc : ms_to_tsc(1) / 100;
        p->stuck_tsc = ms_to_tsc(100);
        p->out = &measured.series[ns];
        *p->out = (struct freq_series){.counter = c};
        ns++;
    }
    measured.series_count = ns;
    if (ns) {
        sample_all(s, ns, window, slots);
        for (int k = 0; k < ns; k++)
            fit_series(&s[k], slots, ms_to_tsc(1000));
    }
    memory_release(mark);

    /* The TSC's frequency from the best reference that was fitted. */
    measured.reference = -1;
    static const int order[] = {COUNTER_HPET, COUNTER_ACPI_PM, COUNTER_PIT};
    for (unsigned i = 0; i < sizeof order / sizeof *order && measured.reference < 0; i++)
        for (int k = 0; k < ns; k++)
            if (measured.series[k].counter == order[i] && measured.series[k].fitted && !measured.series[k].stuck) {
                const struct freq_series *f = &measured.series[k];
                struct xf nominal = xf_div(xf_from_u64(counters[f->counter].nominal_mhz), xf_from_u64(1000));
                measured.reference = f->counter;
                measured.tsc_measured = true;
                measured.tsc_hz = xf_div(nominal, f->fit.slope);
                measured.tsc_rel_stderr = xf_div(f->fit.slope_stderr, f->fit.slope);
            }
    static char source[64];
    if (measured.tsc_measured) {
        fmt_format(source, sizeof source, "measured against %s", counters[measured.reference].name);
    } else if (counters[COUNTER_TSC].nominal_mhz) {
        measured.tsc_hz = xf_div(xf_from_u64(counters[COUNTER_TSC].nominal_mhz), xf_from_u64(1000));
        fmt_format(source, sizeof source, "nominal: %s", counters[COUNTER_TSC].nominal_source);
    } else {
        measured.tsc_hz = xf_from_u64(measured.tsc_estimate_hz);
        fmt_format(source, sizeof source, "nominal: %s", measured.tsc_estimate_source);
    }
    measured.tsc_hz_source = source;
}

struct xf tsc_ticks_to_ns(struct xf ticks)
{
    return xf_div(xf_mul(ticks, xf_from_u64(1000000000ull)), measured.tsc_hz);
}

/* --- stolen time --- */

static void measure_hwlat(const struct profile *prof, const struct cpu_info *ci)
{
    struct hwlat *h = &measured.hwlat;
    uint64_t gaps[HWLAT_TYPICAL_N];
    uint64_t prev = rdtsc();
    for (int i = 0; i < HWLAT_TYPICAL_N; i++) {
        uint64_t now = rdtsc();
        gaps[i] = now - prev;
        prev = now;
    }
    uint64_t scratch[HWLAT_TYPICAL_N];
    stats_sort(gaps, HWLAT_TYPICAL_N, scratch);
    h->typical_gap = gaps[HWLAT_TYPICAL_N / 2];
    uint64_t hundred_ns = measured.tsc_estimate_hz / 10000000;
    h->threshold_tsc = 4 * h->typical_gap > hundred_ns ? 4 * h->typical_gap : hundred_ns;
    uint64_t edges[4];
    for (int k = 0; k < 4; k++) /* 1 us, 10 us, 100 us, 1 ms */
        edges[k] = hundred_ns * (k == 0 ? 10 : k == 1 ? 100 : k == 2 ? 1000 : 10000);

    struct probe_fault fault;
    bool intel = !strcmp(ci->vendor, "GenuineIntel");
    if (intel && msr_read_safe(MSR_SMI_COUNT, &h->smi_before, &fault))
        h->smi_available = true;
    else if (intel)
        fmt_format(h->smi_note, sizeof h->smi_note, "MSR 0x34 unreadable: %s", fault.text);
    else
        fmt_format(h->smi_note, sizeof h->smi_note, "MSR 0x34 (SMI count) is Intel-only");

    h->window_tsc = ms_to_tsc(prof->hwlat_ms);
    uint64_t start = rdtsc();
    prev = start;
    for (uint64_t it = 0; it < 20000000000ull; it++) {
        uint64_t now = rdtsc();
        uint64_t gap = now - prev;
        prev = now;
        h->iterations++;
        if (gap > h->threshold_tsc) {
            h->gaps_over_threshold++;
            h->total_over_threshold += gap;
            if (gap > h->max_gap)
                h->max_gap = gap;
            int bin = 0;
            while (bin < 4 && gap >= edges[bin])
                bin++;
            h->bins[bin]++;
        }
        if (now - start >= h->window_tsc)
            break;
    }
    if (h->smi_available && !msr_read_safe(MSR_SMI_COUNT, &h->smi_after, &fault)) {
        h->smi_available = false;
        fmt_format(h->smi_note, sizeof h->smi_note, "MSR 0x34 unreadable after the scan: %s", fault.text);
    }
    h->done = true;
}

/* --- how fast instructions run --- */

static void measure_speed(void)
{
    uint64_t r = 0;
    uint64_t a = rdtsc_begin();
    for (uint32_t i = 0; i < LOOP_ITERATIONS; i++)
        __asm__ volatile("add $1, %0" : "+r"(r));
    uint64_t b = rdtsc_end();
    sink = r;
    measured.speed.loop_tsc = b - a;
}

static void finish_speed(void)
{
    struct cpu_speed *s = &measured.speed;
    struct xf seconds = xf_div(xf_from_u64(s->loop_tsc ? s->loop_tsc : 1), measured.tsc_hz);
    s->per_second = (uint64_t)xf_to_fixed(xf_div(xf_from_u64(LOOP_ITERATIONS), seconds), 0);
    s->emulated = s->per_second < EMULATED_BELOW_PER_S;
}

/* --- the run --- */

static void add_target(const char *name, uint64_t (*read)(void), uint64_t mask, int counter, uint64_t nominal_mhz)
{
    struct target *t = &measured.targets[measured.target_count++];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->read = read;
    t->mask = mask;
    t->counter = counter;
    t->nominal_mhz = nominal_mhz;
}

void measure_all(const struct profile *prof)
{
    measured.profile = prof;
    for (int i = 0; i < TSC_VARIANT_COUNT; i++)
        if (tsc_variants[i].available)
            add_target(tsc_variants[i].name, tsc_variants[i].read, ~0ull, -1, 0);
    for (int c = 0; c < COUNTER_COUNT; c++)
        if (c != COUNTER_TSC && counters[c].present)
            add_target(counters[c].name, counters[c].read, counters[c].mask, c, counters[c].nominal_mhz);

    kprintf("\n== Measuring (profile %s: %u ms of drift, %u ms of stolen-time scan) ==\n", prof->name, prof->drift_ms,
            prof->hwlat_ms);
    estimate_tsc();
    measure_speed();
    kprintf("  TSC about %llu MHz (a quick estimate against %s, to size the phases)\n",
            (unsigned long long)(measured.tsc_estimate_hz / 1000000), measured.tsc_estimate_source);
    for (int i = 0; i < measured.target_count; i++) {
        struct target *t = &measured.targets[i];
        bool tsc = t->counter < 0;
        kprintf("  read cost and sequential reads: %s\n", t->name);
        measure_latency(t, tsc ? prof->latency_fast : prof->latency_slow, ms_to_tsc(prof->latency_ms), tsc);
        measure_sequence(t, tsc ? prof->sequence_fast : prof->sequence_slow, ms_to_tsc(prof->sequence_ms));
    }
    kprintf("  frequency and drift: %u ms window\n", prof->drift_ms);
    measure_frequency(prof);
    finish_speed();
    kprintf("  stolen-time scan: %u ms\n", prof->hwlat_ms);
    measure_hwlat(prof, &boot_cpu.info);
    measured.memory_used = memory_arena()->peak;
}
