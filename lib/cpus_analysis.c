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
