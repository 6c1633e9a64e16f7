/* KVM steal time against the stolen-time scan (see steal.h). */
#include "steal.h"

uint64_t steal_ticks_ns(uint64_t ticks, uint64_t hz)
{
    if (!hz)
        return 0;
    return ticks / hz * 1000000000ull + ticks % hz * 1000000000ull / hz;
}

static uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

void steal_compare(const struct steal_window *w, struct steal_comparison *c)
{
    *c = (struct steal_comparison){0};
    c->valid = w->steal_after_ns >= w->steal_before_ns;
    c->kvm_ns = c->valid ? w->steal_after_ns - w->steal_before_ns : 0;
    /* A preemption between a steal read and the scan's nearest read is
       counted by KVM and not by the scan: the edges bound it. KVM adds a
       preemption at the vCPU's next entry, and each read follows an entry,
       so nothing ended before a read is left out of it. */
    c->kvm_uncertainty_ns = steal_ticks_ns(w->edge_ticks, w->tsc_hz);

    /* each gap over the threshold holds one turn of the loop's own work */
    uint64_t over_work = w->over_count * w->typical_ticks;
    uint64_t scan_ticks = sat_sub(w->over_ticks, over_work);
    c->scan_ns = steal_ticks_ns(scan_ticks, w->tsc_hz);
    /* Gaps under the threshold hide time taken in pieces too short to tell
       from the loop's jitter: their excess over the typical gap bounds it. */
    uint64_t under_ticks = sat_sub(w->scan_ticks, w->over_ticks);
    uint64_t under_work = sat_sub(w->reads, w->over_count) * w->typical_ticks;
    c->below_threshold_ns = steal_ticks_ns(sat_sub(under_ticks, under_work), w->tsc_hz);
    /* the rate's uncertainty, rounded up */
    uint64_t rate_ns = c->scan_ns / 1000000 * w->rate_ppm + (c->scan_ns % 1000000 * w->rate_ppm + 999999) / 1000000;
    c->scan_uncertainty_ns = c->below_threshold_ns + rate_ns;

    c->difference_ns = (int64_t)(c->scan_ns - c->kvm_ns);
    uint64_t diff_abs = c->scan_ns > c->kvm_ns ? c->scan_ns - c->kvm_ns : c->kvm_ns - c->scan_ns;
    c->agree = c->valid && diff_abs <= c->kvm_uncertainty_ns + c->scan_uncertainty_ns;
}
