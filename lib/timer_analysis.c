/* Timer interrupt lateness, the pure part (see timer_analysis.h). */
#include "timer_analysis.h"

#include "format.h"

const uint32_t timer_delay_ns[TIMER_DELAYS] = {1000, 10000, 100000, 1000000};

/* --- rates and deadlines --- */

bool timer_rate_from_readings(uint64_t v0, uint64_t a0, uint64_t b0, uint64_t v1, uint64_t a1, uint64_t b1, uint64_t mask,
                              struct xf *ratio, struct xf *u)
{
    uint64_t dv = (v1 - v0) & mask;
    uint64_t dt = (a1 + b1) / 2 - (a0 + b0) / 2;
    if (!dv || !dt)
        return false;
    *ratio = xf_div(xf_from_u64(dv), xf_from_u64(dt));
    *u = xf_add(xf_div(xf_from_u64((b0 - a0) + (b1 - a1)), xf_from_u64(dt)), xf_div(xf_from_u64(1), xf_from_u64(dv)));
    return true;
}

uint64_t timer_ticks_for(struct xf per_tsc, struct xf per_tsc_u, uint64_t tsc_ticks)
{
    struct xf late = xf_add(xf_from_u64(1), xf_mul(xf_from_u64(TIMER_RATE_MARGIN_SIGMAS), per_tsc_u));
    return (uint64_t)xf_to_fixed(xf_mul(xf_mul(xf_from_u64(tsc_ticks), per_tsc), late), 0) + 2;
}

uint64_t timer_tsc_ticks_of(struct xf per_tsc, uint64_t ticks)
{
    return (uint64_t)xf_to_fixed(xf_div(xf_from_u64(ticks), per_tsc), 0);
}

static struct xf rel_ppm(struct xf u) { return xf_mul(u, xf_from_u64(1000000)); }

struct xf timer_margin_ppm(struct xf per_tsc_u) { return rel_ppm(xf_mul(xf_from_u64(TIMER_RATE_MARGIN_SIGMAS), per_tsc_u)); }

struct xf timer_rate_u_ppm(struct xf per_tsc_u, struct xf tsc_u_ppm)
{
    return rel_ppm(xf_add(per_tsc_u, xf_div(tsc_u_ppm, xf_from_u64(1000000))));
}

void timer_rate_vs_reference(struct xf per_tsc, struct xf per_tsc_u, struct xf ref_per_tsc, struct xf ref_per_tsc_u,
                             struct xf ref_nominal_hz, struct xf *hz, struct xf *u_ppm)
{
    *hz = xf_mul(xf_div(per_tsc, ref_per_tsc), ref_nominal_hz);
    *u_ppm = rel_ppm(xf_add(per_tsc_u, ref_per_tsc_u));
}

uint64_t timer_delay_ticks(uint64_t tsc_hz, uint32_t delay_ns) { return tsc_hz / 1000 * delay_ns / 1000000; }

uint64_t timer_bound_ticks(uint64_t delay_ticks, uint64_t min_ticks)
{
    return delay_ticks * TIMER_BOUND_DELAYS > min_ticks ? delay_ticks * TIMER_BOUND_DELAYS : min_ticks;
}

int64_t timer_bin_edge(uint64_t tsc_hz)
{
    int64_t edge = (int64_t)(tsc_hz / 4000000);
    return edge > 0 ? edge : 1;
}

/* --- wait modes and routes --- */

unsigned timer_waits_build(bool monitor, uint32_t max_leaf, uint32_t leaf5_edx, struct timer_wait w[TIMER_MAX_WAITS], char *note,
                           size_t note_size)
{
    unsigned count = 0;
    w[count++] = (struct timer_wait){.name = "busy"};
    w[count++] = (struct timer_wait){.name = "hlt", .hlt = true};
    if (!monitor) {
        fmt_format(note, note_size, "MWAIT not measured: CPUID.1:ECX[3] (MONITOR/MWAIT) is clear");
        return count;
    }
    if (max_leaf < 5) {
        fmt_format(note, note_size, "MWAIT not measured: CPUID leaf 5 is not there to enumerate its C-states");
        return count;
    }
    /* EDX bits 4n+3:4n: sub-states of C-state n */
    unsigned used = (unsigned)fmt_format(note, note_size, "MWAIT hints asked (leaf 5 EDX 0x%x; the CPU may demote them):", leaf5_edx);
    for (unsigned n = 1; n <= 7 && count < TIMER_MAX_WAITS; n++) {
        unsigned subs = (leaf5_edx >> (4 * n)) & 0xF;
        if (n > 1 && !subs)
            continue;
        struct timer_wait *m = &w[count++];
        *m = (struct timer_wait){.mwait = true, .hint = (n - 1) << 4};
        fmt_format(m->name, sizeof m->name, "mwait_c%u", n);
        if (used < note_size)
            used += (unsigned)fmt_format(note + used, note_size - used, " 0x%02x (C%u)", m->hint, n);
    }
    return count;
}

int timer_hpet_gsi(uint32_t caps, const struct acpi_info *a, uint32_t pins_of[ACPI_MAX_IOAPICS], uint32_t *gsi, uint32_t *pin)
{
    int found = -1;
    for (int pass = 0; pass < 2 && found < 0; pass++)
        for (uint32_t g = 0; g < 32 && found < 0; g++) {
            if (!(caps & (1ull << g)))
                continue;
            if ((pass == 0 && g < 16) || g == 0 || g == 2 || g == 8)
                continue;
            uint32_t p;
            int at = acpi_ioapic_of_gsi(a, g, pins_of, &p);
            if (at >= 0) {
                found = at;
                *gsi = g;
                *pin = p;
            }
        }
    return found;
}

int timer_watchdog_for(const struct timer_result t[TIMER_COUNT], int id, bool shared)
{
    /* the PIT first for the APIC timers: under KVM its emulation is in the
       kernel, where programming the HPET (QEMU, user space) before every
       halt added about 60 us to the idle medians it guarded
       (docs/kvm-unit-tests-comparison.md) */
    static const int prefer[TIMER_COUNT][3] = {
        [TIMER_LAPIC] = {TIMER_PIT, TIMER_HPET, -1},
        [TIMER_DEADLINE] = {TIMER_PIT, TIMER_HPET, -1},
        [TIMER_HPET] = {TIMER_LAPIC, TIMER_DEADLINE, TIMER_PIT},
        [TIMER_PIT] = {TIMER_LAPIC, TIMER_DEADLINE, TIMER_HPET},
    };
    for (int i = 0; i < 3; i++) {
        int w = prefer[id][i];
        if (w >= 0 && t[w].usable && t[w].clean &&
            !(shared && (w == TIMER_HPET || w == TIMER_PIT) && (id == TIMER_HPET || id == TIMER_PIT)))
            return w;
    }
    return -1;
}

/* --- how many events a cell takes, and what its tail is --- */

bool timer_main_cell(const struct timer_wait *w, unsigned di)
{
    return !w->mwait && (di == 1 || di == 2); /* busy and hlt; 10 us and 100 us */
}

void timer_cell_plan(uint32_t events, uint64_t budget, bool main_cell, uint32_t max_events, uint32_t *cell_events,
                     uint64_t *cell_budget)
{
    if (main_cell && events < TIMER_P99_MIN_EVENTS) {
        events = TIMER_P99_MIN_EVENTS;
        budget = budget / TIMER_MAIN_BUDGET_DEN * TIMER_MAIN_BUDGET_NUM;
    }
    *cell_events = events < max_events ? events : max_events;
    *cell_budget = budget;
}

int64_t timer_tail(const struct timer_cell *c, bool *is_max)
{
    /* the p99 by rank, ceil(0.99 n), is the largest of fewer than 100
       values: the same number, named for what it is */
    *is_max = c->came < TIMER_P99_MIN_EVENTS;
    return c->s.p99;
}

/* --- time away --- */

uint64_t timer_stood_still_tsc(uint64_t advance, uint64_t a0, uint64_t b0, uint64_t a1, uint64_t b1, struct xf ref_per_tsc,
                               struct xf ref_u)
{
    (void)a0;
    (void)b1;
    if ((int64_t)(a1 - b0) <= 0)
        return 0;
    uint64_t least = a1 - b0;
    struct xf slow = xf_mul(ref_per_tsc, xf_sub(xf_from_u64(1), xf_mul(xf_from_u64(TIMER_RATE_MARGIN_SIGMAS), ref_u)));
    if (xf_cmp(slow, xf_from_u64(0)) <= 0)
        return 0; /* a rate that uncertain accounts for anything */
    struct xf covered = xf_div(xf_from_u64(advance + 1), slow);
    if (xf_cmp(covered, xf_from_u64(least)) >= 0)
        return 0;
    int64_t c = xf_to_fixed(covered, 0);
    if (xf_cmp(xf_from_i64(c), covered) < 0)
        c++; /* the ceiling: never more away than it was */
    return (uint64_t)c < least ? least - (uint64_t)c : 0;
}

/* --- tallies and the choice --- */

void timer_tally_add(struct timer_tally *t, const struct timer_cell *c)
{
    if (!c->ran)
        return;
    t->asked += c->asked;
    t->early += c->s.early;
    t->lost += c->lost;
    t->stray += c->stray;
}

enum timer_outcome timer_tally_outcome(const struct timer_tally *t)
{
    if (t->early)
        return TIMER_EARLY;
    return t->lost ? TIMER_LOST : TIMER_ON_TIME;
}

/* the tail lateness (p99, or the maximum of a small sample) from the instant the timer fires, plus how much of it its own
   phase leaves unknown: the latest a caller must allow for */
static int64_t worst_of(const struct timer_cell *c)
{
    bool is_max;
    return timer_tail(c, &is_max) + (int64_t)c->width_max;
}

int timer_choose(const struct timer_result t[TIMER_COUNT], unsigned waits, unsigned *wait)
{
    const unsigned di = TIMER_CHOICE_DELAY;
    int best = -1;
    unsigned best_w = 0;
    for (int id = 0; id < TIMER_COUNT; id++) {
        if (!t[id].usable)
            continue;
        bool ok = true;
        for (unsigned wi = 0; wi < waits; wi++)
            for (unsigned d = 0; d < TIMER_DELAYS; d++)
                ok = ok && !t[id].cell[wi][d].s.early && !t[id].cell[wi][d].lost;
        for (unsigned wi = 0; ok && wi < waits; wi++)
            if (t[id].cell[wi][di].came && (best < 0 || worst_of(&t[id].cell[wi][di]) < worst_of(&t[best].cell[best_w][di]))) {
                best = id;
                best_w = wi;
            }
    }
    *wait = best_w;
    return best;
}
