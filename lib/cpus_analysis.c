/* The "cpus" experiment's analysis: CPUID time bits, the worst CPU, the verdict (see cpus_analysis.h). */
#include "cpus_analysis.h"

uint32_t cpus_time_bits(const struct cpus_cpuid *r, uint32_t *apic_id)
{
    uint32_t b = 0;
    *apic_id = r->l1_ebx >> 24;
    if (r->l1_edx & (1u << 4))
        b |= CPUS_TB_TSC;
    if (r->l1_ecx & (1u << 24))
        b |= CPUS_TB_DEADLINE;
    if (r->l1_ecx & (1u << 21))
        b |= CPUS_TB_X2APIC;
    if (r->l7_ebx & (1u << 1))
        b |= CPUS_TB_ADJUST;
    if (r->lb_ebx)
        *apic_id = r->lb_edx;
    if (r->e1_edx & (1u << 27))
        b |= CPUS_TB_RDTSCP;
    if (r->e7_edx & (1u << 8))
        b |= CPUS_TB_INVARIANT;
    return b;
}

/* In 128 bits: no difference of two int64_t overflows there. */
static unsigned __int128 magnitude(__int128 v) { return v < 0 ? (unsigned __int128)-v : (unsigned __int128)v; }

bool cpus_skew_took(int64_t ticks, int64_t moved)
{
    return magnitude((__int128)moved - ticks) < (magnitude(ticks) >> 1);
}

void cpus_tally_init(struct cpus_tally *t)
{
    *t = (struct cpus_tally){.worst = -1, .all_contain = true, .rates_agree = true};
}

static void note_worst(struct cpus_tally *t, int cpu, uint64_t w, bool excludes)
{
    if (t->worst < 0 || (excludes && !t->worst_excludes) || (excludes == t->worst_excludes && w > t->worst_ticks)) {
        t->worst = cpu;
        t->worst_ticks = w;
        t->worst_excludes = excludes;
    }
}

void cpus_tally_offset(struct cpus_tally *t, int cpu, const struct tsc_offset *o)
{
    t->compared++;
    if (!tsc_offset_consistent(o)) {
        t->all_contain = false;
        note_worst(t, cpu, UINT64_MAX, true);
        return;
    }
    bool excludes = !tsc_offset_contains(o, 0);
    if (excludes)
        t->all_contain = false;
    note_worst(t, cpu, tsc_offset_worst(o), excludes);
}

void cpus_tally_warps(struct cpus_tally *t, uint64_t warps) { t->warps += warps; }

void cpus_tally_kvm_warps(struct cpus_tally *t, uint64_t warps, uint64_t cross)
{
    t->kvm_warps += warps;
    t->kvm_cross += cross;
}

void cpus_tally_rate(struct cpus_tally *t, int64_t rate_mppm, uint64_t uncertainty_mppm)
{
    __int128 lo = (__int128)rate_mppm - uncertainty_mppm, hi = (__int128)rate_mppm + uncertainty_mppm;
    if (lo > 0 || hi < 0)
        t->rates_agree = false;
}

enum cpus_outcome cpus_outcome(const struct cpus_tally *t, const struct tsc_offset *worst_first, struct xf worst_bound_ns)
{
    if (t->compared == 0)
        return CPUS_NOT_COMPARED;
    if (t->all_contain && t->warps == 0 && t->rates_agree)
        return xf_cmp(worst_bound_ns, xf_from_u64(CPUS_COARSE_BOUND_NS)) > 0 ? CPUS_SYNC_COARSE : CPUS_SYNCHRONISED;
    if (worst_first && tsc_offset_consistent(worst_first) && !tsc_offset_contains(worst_first, 0))
        return CPUS_OFFSET;
    if (t->warps)
        return CPUS_WARPS;
    if (!t->rates_agree)
        return CPUS_RATE;
    return CPUS_UNBOUNDED;
}

bool cpus_pairs_listed(uint32_t aps) { return aps >= 2 && aps <= CPUS_PAIRS_MAX_CPUS - 1; }

bool cpus_report_in_full(uint32_t cpus) { return cpus <= CPUS_FULL_REPORT_MAX; }

static uint64_t width(const struct tsc_offset *o) { return (uint64_t)o->hi - (uint64_t)o->lo; }

uint64_t cpus_median_width(const struct cpus_row_view *rows, uint32_t n, uint64_t *scratch)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!rows[i].measured || !tsc_offset_consistent(&rows[i].first))
            continue;
        uint64_t w = width(&rows[i].first);
        uint32_t j = m++;
        for (; j > 0 && scratch[j - 1] > w; j--)
            scratch[j] = scratch[j - 1];
        scratch[j] = w;
    }
    return m ? scratch[m / 2] : 0;
}

uint32_t cpus_stands_out(const struct cpus_row_view *r, uint64_t median_width, uint32_t bsp_time_bits)
{
    uint32_t f = 0;
    if (r->facts_done && r->time_bits != bsp_time_bits)
        f |= CPUS_ODD_CPUID;
    if (!r->measured)
        return f | CPUS_ODD_UNMEASURED;
    if (!tsc_offset_consistent(&r->first) || !tsc_offset_contains(&r->first, 0))
        f |= CPUS_ODD_OFFSET;
    else if (median_width && width(&r->first) / CPUS_WIDE_FACTOR > median_width)
        f |= CPUS_ODD_WIDE;
    if (!r->rate_ok)
        f |= CPUS_ODD_NO_RATE;
    else if ((__int128)r->rate_mppm - r->rate_unc_mppm > 0 || (__int128)r->rate_mppm + r->rate_unc_mppm < 0)
        f |= CPUS_ODD_RATE;
    if (r->warp_done && r->warps)
        f |= CPUS_ODD_WARPS;
    if (!r->warp_done || !r->warp_cross)
        f |= CPUS_ODD_NO_WARP_TEST;
    return f;
}

/* Row i's interval, CPU 0's being [0, 0] (i == n). */
static bool interval_of(const struct cpus_row_view *rows, uint32_t n, uint32_t i, struct tsc_offset *o, int *cpu)
{
    if (i == n) {
        *o = (struct tsc_offset){.exchanges = 1, .lo = 0, .hi = 0};
        *cpu = 0;
        return true;
    }
    if (!rows[i].measured || !tsc_offset_consistent(&rows[i].first))
        return false;
    *o = rows[i].first;
    *cpu = rows[i].cpu;
    return true;
}

bool cpus_worst_pair(const struct cpus_row_view *rows, uint32_t n, struct cpus_pair *p)
{
    bool found = false;
    *p = (struct cpus_pair){.a = -1, .b = -1};
    for (uint32_t i = 0; i <= n; i++) {
        struct tsc_offset oi;
        int ci;
        if (!interval_of(rows, n, i, &oi, &ci))
            continue;
        for (uint32_t j = i + 1; j <= n; j++) {
            struct tsc_offset oj;
            int cj;
            int64_t lo, hi;
            if (!interval_of(rows, n, j, &oj, &cj) || !tsc_offset_between(&oi, &oj, &lo, &hi))
                continue;
            struct tsc_offset d = {.exchanges = 1, .lo = lo, .hi = hi};
            uint64_t w = tsc_offset_worst(&d);
            if (!found || w > p->worst) {
                *p = (struct cpus_pair){.a = ci, .b = cj, .lo = lo, .hi = hi, .worst = w};
                found = true;
            }
        }
    }
    return found;
}

bool cpus_offset_spread(const struct cpus_row_view *rows, uint32_t n, struct cpus_spread *s)
{
    *s = (struct cpus_spread){.cpu_min = 0, .cpu_max = 0};
    bool any = false;
    for (uint32_t i = 0; i < n; i++) {
        const struct tsc_offset *o = &rows[i].first;
        if (!rows[i].measured || !tsc_offset_consistent(o))
            continue;
        int64_t mid = tsc_offset_mid(o);
        any = true;
        if (mid < s->mid_min) {
            s->mid_min = mid;
            s->cpu_min = rows[i].cpu;
        }
        if (mid > s->mid_max) {
            s->mid_max = mid;
            s->cpu_max = rows[i].cpu;
        }
        if (o->lo < s->lo_min)
            s->lo_min = o->lo;
        if (o->hi > s->hi_max)
            s->hi_max = o->hi;
    }
    return any;
}
