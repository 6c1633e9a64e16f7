/* Experiment "cpus", its measurement: every CPU the MADT lists, started
   (kernel/smp.c), and its TSC tested against the boot CPU's. What it finds
   is in exp_cpus_state.h; the analysis is lib/cpus_analysis.c, the report
   exp_cpus_report.c.

   Per CPU: APIC ID and mode, TSC_ADJUST (MSR 0x3B, where CPUID.7:EBX[1]
   says it exists), TSC_AUX through RDTSCP, the CPUID time bits, and what one
   RDTSC costs there (p50, an empty bracket subtracted, as read_cost does).

   Across CPUs, each AP against the boot CPU:
   - offset bounds from request-reply exchanges (lib/tsc_sync.h): an
     interval that must contain the AP's TSC minus the boot CPU's;
   - a warp test (Linux's check_tsc_warp, arch/x86/kernel/tsc_sync.c): both
     CPUs take a lock in turn, read their TSC and compare with the last
     value the other stored; a reading below it went back in time;
   - the rate: a second set of exchanges at least RATE_WINDOW_MS later; how
     far the offset moved, in ppm, with the bounds of both intervals as its
     uncertainty.
   Known answer: tsc_skew=CPU:TICKS moves that CPU's TSC by TICKS (IA32_TSC_
   ADJUST, else IA32_TIME_STAMP_COUNTER; Intel SDM vol. 3B, 18.17.3) between
   two sets of exchanges; the change they find must contain TICKS. Where the
   write does not move the TSC (checked at once on that CPU) it is said and
   the check skipped.

   Every phase is bounded by TSC time, so under emulation (every
   instruction ~1000x slower) it takes as long as on hardware and does less;
   the report says when a budget cut something short. The APs are parked
   (HLT, interrupts off) at the end, so they do not take host CPU time from
   the experiments that follow. */
#include "exp_cpus_state.h"

#include "../drivers/cpuinfo.h"
#include "../kernel/discover.h"
#include "../kernel/memory.h"
#include "../kernel/probe.h"
#include "../kernel/reads.h"
#include "../kernel/results.h"
#include "../kernel/smp.h"
#include "../lib/cmdline.h"
#include "../lib/counters.h"
#include "../lib/cpus_analysis.h"
#include "../lib/format.h"
#include "../lib/stats.h"
#include "../lib/string.h"
#include "../lib/tsc_sync.h"
#include "experiment.h"

#define MSR_TSC_AUX 0xC0000103u

#define COST_READS 255
#define COST_EMPTY 255
/* A read below the TSC's step is timed in a batch, as read_cost times it:
   CPU_BATCH_K reads in a row between two brackets, the least of
   CPU_BATCH_REPS such batches less the least of as many empty ones. */
#define CPU_BATCH_K 64
#define CPU_BATCH_REPS 16
#define NONE_OWNER 0xFFFFFFFFu

struct cpus_state cpus_st;

static inline uint64_t ordered_rdtsc(void)
{
    /* nothing before it is still in flight, nothing after it starts early */
    return bracket_begin();
}

/* --- per-CPU facts, run on each CPU --- */

/* The registers behind the time bits, on this CPU; only leaves within the
   boot CPU's maxima are asked. */
static void time_regs(struct cpus_cpuid *r)
{
    const struct cpu_info *ci = &boot_cpu.info;
    struct cpuid_regs r1 = cpuid(1, 0);
    *r = (struct cpus_cpuid){.l1_ebx = r1.ebx, .l1_ecx = r1.ecx, .l1_edx = r1.edx};
    if (ci->max_leaf >= 7)
        r->l7_ebx = cpuid(7, 0).ebx;
    if (ci->max_leaf >= 0xB) {
        struct cpuid_regs rb = cpuid(0xB, 0);
        r->lb_ebx = rb.ebx;
        r->lb_edx = rb.edx;
    }
    if (ci->max_ext_leaf >= 0x80000001)
        r->e1_edx = cpuid(0x80000001, 0).edx;
    if (ci->max_ext_leaf >= 0x80000007)
        r->e7_edx = cpuid(0x80000007, 0).edx;
}

/* Each AP's own kvmclock page (the boot CPU's is discovery's), as
   kvm-unit-tests' kvmclock test does: every CPU reads its own page. */
static volatile struct pvclock_vcpu_time_info kvm_pages[PERCPU_MAX] __attribute__((aligned(64)));
#define KVM_SETTLE_SPINS 1000000

static volatile struct pvclock_vcpu_time_info *kvm_page_of(uint32_t index)
{
    return index == 0 ? &kvmclock_page : &kvm_pages[index];
}

static bool kvm_register_here(uint32_t index)
{
    if (index == 0)
        return true; /* registered by discovery */
    volatile struct pvclock_vcpu_time_info *pg = kvm_page_of(index);
    /* a refusal leaves this CPU without its page (kvm_page_ok false), not the run */
    struct probe_fault fault;
    if (!msr_write_safe(MSR_KVM_SYSTEM_TIME_NEW, (uint64_t)(uintptr_t)pg | KVM_SYSTEM_TIME_ENABLE, &fault))
        return false;
    for (uint32_t i = 0; i < KVM_SETTLE_SPINS; i++) {
        uint32_t v = pg->version;
        if (v && !(v & 1))
            return true;
        cpu_relax();
    }
    return false;
}

static void kvm_unregister_job(void *unused)
{
    (void)unused;
    struct probe_fault fault;
    (void)msr_write_safe(MSR_KVM_SYSTEM_TIME_NEW, 0, &fault);
}

#define REPEAT8(x) x x x x x x x x

/* CPU_BATCH_K reads unrolled: no loop counter between them. */
static inline __attribute__((always_inline)) uint64_t batch(enum read_kind k)
{
    uint64_t a = bracket_begin();
    REPEAT8(REPEAT8(read_raw(k, 0);))
    uint64_t b = bracket_end();
    return b - a;
}

_Static_assert(CPU_BATCH_K == 64, "batch() reads 8 x 8 times");

static void facts_job(void *p)
{
    struct cpu_facts *f = p;
    struct probe_fault fault;
    if (counters[COUNTER_KVMCLOCK].present)
        f->kvm_page_ok = kvm_register_here(this_cpu()->index);
    struct cpus_cpuid regs;
    time_regs(&regs);
    f->time_bits = cpus_time_bits(&regs, &f->apic_id_cpuid);
    f->apic_base = rdmsr(MSR_APIC_BASE);
    if (f->time_bits & CPUS_TB_ADJUST)
        f->adjust_read = msr_read_safe(MSR_TSC_ADJUST, &f->tsc_adjust, &fault);
    if ((f->time_bits & CPUS_TB_ADJUST) && !f->adjust_read)
        fmt_format(f->adjust_fault, sizeof f->adjust_fault, "%s", fault.text);
    if (f->time_bits & CPUS_TB_RDTSCP) {
        rdtscp(&f->tsc_aux);
        f->aux_read = true;
    }
    uint64_t over = ~0ull;
    for (int i = 0; i < COST_EMPTY; i++) {
        uint64_t a = bracket_begin();
        read_raw(READ_NONE, 0);
        uint64_t b = bracket_end();
        if (b - a < over)
            over = b - a;
    }
    f->overhead = over;
    for (int i = 0; i < COST_READS; i++) {
        uint64_t a = bracket_begin();
        read_raw(READ_RDTSC, 0);
        uint64_t b = bracket_end();
        f->costs[i] = b - a > over ? b - a - over : 0;
    }
    uint64_t best = ~0ull, best_empty = ~0ull;
    for (int r = 0; r < CPU_BATCH_REPS; r++) {
        uint64_t x = batch(READ_RDTSC), y = batch(READ_NONE);
        if (x < best)
            best = x;
        if (y < best_empty)
            best_empty = y;
    }
    f->batch_ticks = xf_div(xf_from_u64(best > best_empty ? best - best_empty : 0), xf_from_u64(CPU_BATCH_K));
    f->done = true;
}

/* --- offset exchanges --- */

struct exchange {
    volatile uint64_t req __attribute__((aligned(64)));  /* written by the boot CPU */
    volatile uint32_t stop;
    volatile uint64_t ack __attribute__((aligned(64)));  /* written by the AP */
    volatile uint64_t theirs;
    volatile uint32_t ready;
    volatile uint32_t napping;                           /* the AP sleeps until woken (smp_nap) */
    uint64_t ap_limit_ticks;
};
/* One per AP: an AP that was given up on (smp_wait timed out) and runs on
   later writes only its own, never the next AP's exchanges. */
static struct exchange xcs[PERCPU_MAX];

/* The AP takes a job when it next polls its mailbox, which under a
   hypervisor can be a scheduling quantum away: the timed part starts when
   it says it is there, not when the job was posted. */
static bool wait_ready(volatile uint32_t *ready)
{
    uint64_t t0 = rdtsc(), limit = ms_to_tsc(JOB_SLACK_MS);
    for (uint32_t i = 0; i < 100000000u && !*ready; i++) {
        cpu_relax();
        if (rdtsc() - t0 > limit)
            return false;
    }
    return *ready;
}

/* The AP's side: answer each request with a TSC read, until told to stop
   or its own bound (by its own TSC) runs out. Both sides wait with PAUSE
   (SDM vol. 2B, PAUSE: the spin-wait hint): it costs some latency in each
   round trip, which only widens the bounds, and under an emulator that
   runs its virtual CPUs in turn (QEMU's TCG in round-robin mode) PAUSE is
   what hands the host CPU to the other side at all. With no request for
   a while the AP sleeps until the boot CPU's next one wakes it (smp_nap):
   on a host with fewer CPUs than the guest (an emulator on a small
   machine, an overcommitted cloud guest) a spinning AP takes the host CPU
   the boot CPU needs to send that request, and a round trip then lasts a
   host time slice. "A while" is NAP_LONG_US at first: two CPUs that run
   side by side never wait that long, so they never nap (a napping thread
   is one the host's scheduler may move onto the boot CPU's host CPU, and
   two that spin are spread over two). Once the AP has waited that long it
   naps after NAP_SHORT_US, which hands a shared host CPU over at once,
   but after NAP_LONG_US every NAP_LONG_EVERY requests, which catches a
   boot CPU that runs beside it again. A woken AP
   is a round trip that only widens its own bound; the narrowest one
   decides the interval. */
#define NAP_SHORT_US 2
#define NAP_LONG_US 1000
#define NAP_LONG_EVERY 8

static inline uint32_t nap_after_us(bool crowded, uint64_t round)
{
    return crowded && round % NAP_LONG_EVERY ? NAP_SHORT_US : NAP_LONG_US;
}
static void exchange_ap(void *p)
{
    struct exchange *x = p;
    uint64_t seen = 0, t0 = rdtsc(), last = t0;
    bool crowded = false;
    x->ready = 1;
    for (uint32_t spins = 0;; spins++) {
        uint64_t r = x->req;
        if (x->stop)
            return;
        if (r == seen) {
            cpu_relax();
            if ((spins & 1023) == 0 && rdtsc() - t0 > x->ap_limit_ticks)
                return;
            if ((spins & 63) == 0 && smp_nap_due(last, nap_after_us(crowded, seen))) {
                crowded = true;
                smp_nap(&x->napping, &x->req, seen);
                last = rdtsc();
            }
            continue;
        }
        uint64_t t = ordered_rdtsc();
        x->theirs = t;
        __asm__ volatile("" ::: "memory");
        x->ack = r;
        seen = r;
        last = t;
    }
}

/* The boot CPU, after changing what the AP waits on: wake it if it naps. */
static inline void exchange_nudge(struct exchange *x, int index)
{
    cpu_store_load_fence();
    if (x->napping)
        smp_wake(index);
}

static void exchange_stop(struct exchange *x, int index)
{
    x->stop = 1;
    x->req = x->req + 1; /* a change the napping AP looks for */
    exchange_nudge(x, index);
}

/* The boot CPU's side, with the AP running exchange_ap. Returns whether
   the time budget cut it short of EXCHANGES. */
static bool exchange_with(int index, struct tsc_offset *o, uint64_t *mid_tsc)
{
    struct exchange *x = &xcs[index];
    tsc_offset_init(o);
    x->req = 0;
    x->ack = 0;
    x->stop = 0;
    x->ready = 0;
    x->napping = 0;
    uint64_t budget = ms_to_tsc(EXCHANGE_MS);
    x->ap_limit_ticks = 2 * ms_to_tsc(EXCHANGE_CAP_MS) + ms_to_tsc(JOB_SLACK_MS);
    if (!smp_post(index, exchange_ap, x))
        return false;
    if (!wait_ready(&x->ready)) {
        exchange_stop(x, index);
        smp_wait(index, x->ap_limit_ticks, 0, 0);
        return false;
    }
    uint64_t start = rdtsc();
    bool cut = false;
    uint64_t cap = ms_to_tsc(EXCHANGE_CAP_MS);
    for (uint64_t i = 1; i <= EXCHANGES; i++) {
        uint64_t before = ordered_rdtsc();
        x->req = i;
        exchange_nudge(x, index);
        uint32_t spins = 0;
        while (x->ack != i) {
            cpu_relax();
            if ((++spins & 255) == 0 && rdtsc() - start > cap)
                break;
        }
        if (x->ack != i) {
            cut = true;
            break;
        }
        uint64_t after = rdtsc_lfence();
        tsc_offset_add(o, before, x->theirs, after);
        if (i < EXCHANGES && ((after - start > budget && i >= EXCHANGES_MIN) || after - start > cap)) {
            cut = true;
            break;
        }
    }
    uint64_t end = rdtsc();
    exchange_stop(x, index);
    *mid_tsc = start + (end - start) / 2;
    smp_wait(index, ms_to_tsc(JOB_SLACK_MS), 0, 0);
    return cut;
}

/* --- warp test --- */

struct warp {
    volatile uint32_t lock __attribute__((aligned(64)));
    volatile uint32_t owner;
    volatile uint64_t last;
    bool kvmclock;              /* compare kvmclock readings (ns, each CPU's own page) instead of the TSC */
    volatile uint32_t stop __attribute__((aligned(64)));
    volatile uint64_t bsp_seq;  /* the boot CPU's turns (and its stop): what a napping AP waits on */
    volatile uint32_t ready;
    volatile uint32_t napping;
    uint64_t ap_limit_ticks;
};
static struct warp wps[PERCPU_MAX]; /* one per AP, as the exchanges */

struct warp_side {
    struct warp *w;
    uint32_t me;
    uint64_t rounds, cross, warps, max_warp;
    bool lock_timeout;
};
static struct warp_side warp_ap_sides[PERCPU_MAX];

/* One turn: take the lock, read the TSC after the other CPU's last store,
   compare with it. False when the lock could not be had within limit. */
static inline bool warp_turn(struct warp_side *s, uint64_t t0, uint64_t limit)
{
    struct warp *w = s->w;
    uint32_t spins = 0;
    while (__atomic_exchange_n(&w->lock, 1, __ATOMIC_ACQUIRE)) {
        cpu_relax();
        if ((++spins & 255) == 0 && (rdtsc() - t0 > limit || w->stop))
            return false;
    }
    uint64_t prev = w->last;
    uint32_t who = w->owner;
    uint64_t now = w->kvmclock ? kvmclock_read(kvm_page_of(s->me)) : ordered_rdtsc();
    w->last = now;
    w->owner = s->me;
    __atomic_store_n(&w->lock, 0, __ATOMIC_RELEASE);
    s->rounds++;
    if (who != s->me && who != NONE_OWNER) {
        s->cross++;
        if ((int64_t)(now - prev) < 0) {
            s->warps++;
            if (prev - now > s->max_warp)
                s->max_warp = prev - now;
        }
    }
    return true;
}

/* The AP naps, as in the exchanges, when the boot CPU has not taken a turn
   for a while: two CPUs sharing one host CPU then pass the lock at once. */
static void warp_ap(void *p)
{
    struct warp_side *s = p;
    struct warp *w = s->w;
    uint64_t t0 = rdtsc(), last = t0, cross = 0;
    bool crowded = false;
    w->ready = 1;
    while (!w->stop && s->rounds < 4ull * WARP_ROUNDS && rdtsc() - t0 < w->ap_limit_ticks) {
        uint64_t seq = w->bsp_seq;
        if (!warp_turn(s, t0, w->ap_limit_ticks))
            break;
        if (s->cross != cross) {
            cross = s->cross;
            last = rdtsc();
        } else if (smp_nap_due(last, nap_after_us(crowded, s->rounds))) {
            crowded = true;
            smp_nap(&w->napping, &w->bsp_seq, seq);
            last = rdtsc();
        }
    }
}

static inline void warp_nudge(struct warp *w, int index)
{
    w->bsp_seq = w->bsp_seq + 1;
    cpu_store_load_fence();
    if (w->napping)
        smp_wake(index);
}

static void warp_with(struct sync_row *row, bool kvmclock)
{
    struct warp *w = &wps[row->index];
    struct warp_side *aps = &warp_ap_sides[row->index];
    w->kvmclock = kvmclock;
    w->lock = 0;
    w->owner = NONE_OWNER;
    w->last = 0;
    w->stop = 0;
    w->ready = 0;
    w->napping = 0;
    w->bsp_seq = 0;
    /* kvmclock gets longer: each reading is a page read and a scaled TSC,
       and under a hypervisor the lock passes slowly */
    uint64_t budget = ms_to_tsc(kvmclock ? KVM_WARP_MS : WARP_MS), cap = ms_to_tsc(WARP_CAP_MS);
    w->ap_limit_ticks = 2 * cap + ms_to_tsc(JOB_SLACK_MS);
    *aps = (struct warp_side){.w = w, .me = (uint32_t)row->index};
    if (!smp_post(row->index, warp_ap, aps))
        return;
    if (!wait_ready(&w->ready)) {
        w->stop = 1;
        warp_nudge(w, row->index);
        smp_wait(row->index, ms_to_tsc(JOB_SLACK_MS) + w->ap_limit_ticks, 0, 0);
        return;
    }
    struct warp_side me = {.w = w, .me = 0};
    uint64_t t0 = rdtsc();
    /* past the budget only until the lock has passed between them
       WARP_CROSS_MIN times: where the two share a host CPU with others,
       it passes only when both happen to run */
    while (me.rounds < WARP_ROUNDS) {
        uint64_t spent = rdtsc() - t0;
        if ((spent > budget && me.cross >= WARP_CROSS_MIN) || spent > cap) {
            row->warp_cut = true;
            break;
        }
        if (!warp_turn(&me, t0, cap)) {
            row->warp_cut = true;
            break;
        }
        warp_nudge(w, row->index);
    }
    w->stop = 1;
    warp_nudge(w, row->index);
    if (!smp_wait(row->index, ms_to_tsc(JOB_SLACK_MS) + cap, 0, 0))
        return;
    if (kvmclock) {
        row->kvm_done = true;
        row->kvm_cut = row->warp_cut;
        row->kvm_cross = me.cross + aps->cross;
        row->kvm_warps = me.warps + aps->warps;
        row->kvm_max_warp_ns = me.max_warp > aps->max_warp ? me.max_warp : aps->max_warp;
        return;
    }
    row->warp_done = true;
    row->warp_rounds_bsp = me.rounds;
    row->warp_rounds_ap = aps->rounds;
    row->warp_cross = me.cross + aps->cross;
    row->warps = me.warps + aps->warps;
    row->max_warp = me.max_warp > aps->max_warp ? me.max_warp : aps->max_warp;
}

/* --- the known answer --- */

struct skew_job {
    int64_t ticks;
    bool via_adjust;
    uint64_t before, after;
    uint32_t msr;
    bool faulted;
    struct probe_fault fault;
};

/* IA32_TSC_ADJUST where it exists: a write there moves the TSC by the same
   amount (SDM vol. 3B, 18.17.3); else IA32_TIME_STAMP_COUNTER itself. */
static void skew_run(void *p)
{
    struct skew_job *j = p;
    struct probe_fault fault;
    uint64_t a = 0;
    j->msr = j->via_adjust ? MSR_TSC_ADJUST : MSR_TSC;
    if (j->via_adjust && !msr_read_safe(MSR_TSC_ADJUST, &a, &fault))
        goto fail;
    j->before = rdtsc();
    if (!msr_write_safe(j->msr, j->via_adjust ? a + (uint64_t)j->ticks : j->before + (uint64_t)j->ticks, &fault))
        goto fail;
    j->after = rdtsc();
    return;
fail:
    /* handed back as the job's own fault: skew_apply reports it, MSR named */
    j->faulted = true;
    j->fault = fault;
}

static bool skew_apply(int index, int64_t ticks, bool *faulted, struct probe_fault *fault)
{
    struct skew_job j = {.ticks = ticks, .via_adjust = cpus_st.skew_via_adjust};
    if (!smp_run(index, skew_run, &j, ms_to_tsc(JOB_SLACK_MS), faulted, fault) || *faulted)
        return false;
    if (j.faulted) {
        *faulted = true;
        *fault = j.fault;
        return false;
    }
    cpus_st.skew_moved = (int64_t)(j.after - j.before);
    return true;
}

static void skew_parse(void)
{
    const char *v = cmdline_get(&boot_cmdline, "tsc_skew");
    cpus_st.skew_asked = v != 0;
    if (!v)
        return;
    cpus_st.skew_valid = tsc_skew_parse(v, &cpus_st.skew_cpu, &cpus_st.skew_ticks);
    if (!cpus_st.skew_valid)
        fmt_format(cpus_st.skew_why, sizeof cpus_st.skew_why, "tsc_skew=%s is not CPU:TICKS (a CPU index and non-zero ticks)", v);
    else if (cpus_st.skew_cpu == 0)
        fmt_format(cpus_st.skew_why, sizeof cpus_st.skew_why,
                   "tsc_skew names CPU 0, the reference every other CPU is measured against; name an AP");
}

static void skew_measure(struct sync_row *row)
{
    bool faulted = false;
    struct probe_fault fault;
    cpus_st.skew_via_adjust = cpus_st.facts[row->index].time_bits & CPUS_TB_ADJUST;
    if (!skew_apply(row->index, cpus_st.skew_ticks, &faulted, &fault)) {
        char name[48];
        fmt_format(cpus_st.skew_why, sizeof cpus_st.skew_why, "writing %s on CPU %d %s%s",
                   msr_name(cpus_st.skew_via_adjust ? MSR_TSC_ADJUST : MSR_TSC, name), row->index,
                   faulted ? "faulted: " : "did not finish", faulted ? fault.text : "");
        return;
    }
    cpus_st.skew_applied = true;
    cpus_st.skew_honoured = cpus_skew_took(cpus_st.skew_ticks, cpus_st.skew_moved);
    uint64_t mid;
    exchange_with(row->index, &row->skewed, &mid);
    /* Put it back, so the rate check sees the same TSC (exact through
       TSC_ADJUST; through IA32_TSC the read-to-write time is lost). */
    struct skew_job back = {.ticks = -cpus_st.skew_ticks, .via_adjust = cpus_st.skew_via_adjust};
    if (cpus_st.skew_honoured)
        smp_run(row->index, skew_run, &back, ms_to_tsc(JOB_SLACK_MS), &faulted, &fault);
    else
        fmt_format(cpus_st.skew_why, sizeof cpus_st.skew_why,
                   "this platform ignores writes to %s: the TSC moved %lld ticks, not %lld",
                   cpus_st.skew_via_adjust ? "IA32_TSC_ADJUST (MSR 0x3B)" : "IA32_TSC (MSR 0x10)",
                   (long long)cpus_st.skew_moved, (long long)cpus_st.skew_ticks);
}

/* --- topology --- */

#define LEAF_TOPO_V2 0x1Fu
#define LEAF_TOPO 0x0Bu
#define LEAF_AMD_SIZE 0x80000008u
#define LEAF_AMD_TOPO 0x8000001Eu

/* The boot CPU's answer: leaf 1Fh where it says something, else 0Bh, else
   AMD's leaves. Every CPU of a package answers the same shifts. */
static void topology_read(struct topo_shifts *t)
{
    const struct cpu_info *ci = &boot_cpu.info;
    static const uint32_t leaves[] = {LEAF_TOPO_V2, LEAF_TOPO};
    static const char *const names[] = {"CPUID 1Fh", "CPUID 0Bh"};
    *t = (struct topo_shifts){0};
    for (int k = 0; k < 2; k++) {
        if (ci->max_leaf < leaves[k])
            continue;
        struct topo_level l[TOPO_MAX_LEVELS];
        for (uint32_t i = 0; i < TOPO_MAX_LEVELS; i++) {
            struct cpuid_regs r = cpuid(leaves[k], i);
            l[i] = (struct topo_level){.eax = r.eax, .ecx = r.ecx};
        }
        if (topo_from_extended(l, TOPO_MAX_LEVELS, names[k], t))
            return;
    }
    bool amd = !strcmp(ci->vendor, "AuthenticAMD") || !strcmp(ci->vendor, "HygonGenuine");
    if (amd && ci->max_ext_leaf >= LEAF_AMD_SIZE) {
        bool have_1e = ci->max_ext_leaf >= LEAF_AMD_TOPO;
        topo_from_amd(cpuid(LEAF_AMD_SIZE, 0).ecx, have_1e, have_1e ? cpuid(LEAF_AMD_TOPO, 0).ebx : 0, t);
    }
}

/* --- measure --- */

bool cpus_phase_over(void) { return rdtsc() - cpus_st.phase_start > ms_to_tsc(cpus_st.budget_ms); }

/* An AP's first set of exchanges (and the tsc_skew known answer on its
   CPU), then its warp tests. */
static void measure_first(struct sync_row *row)
{
    uint64_t t = rdtsc();
    row->first_cut = exchange_with(row->index, &row->first, &row->first_mid_tsc);
    row->measured = row->first.exchanges > 0;
    const struct smp_cpu *c = smp_cpu_of(row->index);
    if (!row->measured && c && c->lost)
        fmt_format(row->why, sizeof row->why, "not measured: %s", c->never_woke ? "it never woke for a job" : "it stopped taking jobs");
    else if (!row->measured)
        fmt_format(row->why, sizeof row->why, "no exchange completed (the CPU did not answer)");
    if (cpus_st.skew_valid && cpus_st.skew_cpu == (uint32_t)row->index && row->measured)
        skew_measure(row);
    cpus_st.part_ticks[PART_FIRST] += rdtsc() - t;
    t = rdtsc();
    if (row->measured && !cpus_phase_over())
        warp_with(row, false);
    /* kvmclock across CPUs, where both pages are up */
    if (row->measured && !cpus_phase_over() && cpus_st.facts[0].kvm_page_ok && cpus_st.facts[row->index].kvm_page_ok) {
        bool cut = row->warp_cut;
        row->warp_cut = false;
        warp_with(row, true);
        row->warp_cut = cut;
    }
    cpus_st.part_ticks[PART_WARPS] += rdtsc() - t;
}

/* Its second set, RATE_WINDOW_MS after the first at least, and the rate. */
static void measure_second(struct sync_row *row)
{
    row->second_done = true;
    if (cpus_phase_over()) {
        cpus_st.phase_cut = true;
        row->rate_why = "the experiment's time budget ran out before the second set of exchanges";
        return;
    }
    uint64_t t = rdtsc();
    row->second_cut = exchange_with(row->index, &row->second, &row->second_mid_tsc);
    row->rate_ok = tsc_offset_rate(&row->first, &row->second, row->second_mid_tsc - row->first_mid_tsc, &row->rate_mppm,
                                   &row->rate_unc_mppm);
    if (!row->rate_ok)
        row->rate_why = "an offset interval was empty (see the offset), so no rate";
    cpus_st.part_ticks[PART_SECOND] += rdtsc() - t;
}

static void cpus_measure(const struct profile *p)
{
    (void)p;
    cpus_st = (struct cpus_state){0};
    cpus_st.phase_start = rdtsc();
    skew_parse();
    topology_read(&cpus_st.topo);
    smp_start();
    cpus_st.started = true;
    uint64_t mark = memory_mark(), t = rdtsc();
    bool facts_late = false;
    cpus_st.part_ticks[PART_START] = t - cpus_st.phase_start;

    /* facts on every running CPU, the boot CPU's here */
    for (int i = 0; i < PERCPU_MAX; i++) {
        if (!smp_cpu_of(i))
            continue;
        struct cpu_facts *f = &cpus_st.facts[i];
        f->costs = memory_alloc(COST_READS * sizeof *f->costs);
        if (!f->costs) {
            fmt_format(f->fault, sizeof f->fault, "no memory for the read-cost samples");
            continue;
        }
        struct probe_fault fault;
        bool faulted = false;
        if (i == 0)
            faulted = !probe_run(facts_job, f, &fault);
        else if (!smp_run(i, facts_job, f, ms_to_tsc(JOB_SLACK_MS), &faulted, &fault)) {
            fmt_format(f->fault, sizeof f->fault, "the job did not finish within %u ms", JOB_SLACK_MS);
            facts_late = true;
        }
        if (faulted) {
            f->faulted = true;
            f->done = false;
            fmt_format(f->fault, sizeof f->fault, "%s", fault.text);
        }
        if (f->done) {
            uint64_t scratch[COST_READS];
            struct summary s;
            stats_summarise(f->costs, COST_READS, scratch, &s);
            f->p50_ticks = s.p50;
        }
        f->costs = 0;
    }
    /* a CPU given up on may still finish its job later, writing its
       samples: their memory is not handed to anything else */
    if (!facts_late)
        memory_release(mark);
    cpus_st.part_ticks[PART_FACTS] = rdtsc() - t;

    /* One AP after another: its first set of exchanges, its warp tests,
       then on to the next; each AP's second set (the rate) as soon as
       RATE_WINDOW_MS have passed since its first, between the next APs'.
       A new AP is begun only while the budget leaves room for the second
       sets still owed, so a budget that runs out leaves whole rows, not a
       table of first sets with no rates. Each AP runs only while it is
       measured and sleeps otherwise (smp.h). */
    uint32_t aps = smp.running > 1 ? smp.running - 1 : 0;
    cpus_st.budget_ms = PHASE_MS_PER_AP * aps > PHASE_MS ? PHASE_MS_PER_AP * aps : PHASE_MS;
    int owed = 0; /* rows[owed..] may still owe their second set */
    uint64_t second_total = 0;
    uint32_t seconds = 0;
    for (int i = 1; i < PERCPU_MAX; i++) {
        if (!smp_cpu_of(i))
            continue;
        struct sync_row *row = &cpus_st.rows[cpus_st.row_count++];
        row->index = i;
        uint64_t per_second = seconds ? second_total / seconds : ms_to_tsc(EXCHANGE_MS);
        uint64_t pending = 0;
        for (int k = owed; k < cpus_st.row_count - 1; k++)
            pending += cpus_st.rows[k].measured && !cpus_st.rows[k].second_done;
        /* twice the second sets' mean so far: they vary with the host */
        if (rdtsc() - cpus_st.phase_start + 2 * (pending + 1) * per_second > ms_to_tsc(cpus_st.budget_ms)) {
            cpus_st.phase_cut = true;
            fmt_format(row->why, sizeof row->why, "not measured: the experiment's %u ms budget ran out", cpus_st.budget_ms);
        } else {
            measure_first(row);
        }
        while (owed < cpus_st.row_count) {
            struct sync_row *o = &cpus_st.rows[owed];
            if (o->measured && !o->second_done) {
                if (rdtsc() - o->first_mid_tsc < ms_to_tsc(RATE_WINDOW_MS))
                    break;
                uint64_t t0 = rdtsc();
                measure_second(o);
                second_total += rdtsc() - t0;
                seconds++;
            }
            owed++;
        }
    }
    for (; owed < cpus_st.row_count; owed++) {
        struct sync_row *o = &cpus_st.rows[owed];
        if (!o->measured || o->second_done)
            continue;
        uint64_t window = ms_to_tsc(RATE_WINDOW_MS);
        for (uint32_t spin = 0; spin < 100000000u && rdtsc() - o->first_mid_tsc < window; spin++)
            cpu_relax();
        measure_second(o);
    }
    if (cpus_st.skew_valid && cpus_st.skew_cpu != 0 && !cpus_st.skew_applied && !cpus_st.skew_why[0])
        fmt_format(cpus_st.skew_why, sizeof cpus_st.skew_why, "tsc_skew names CPU %u, which is not running", cpus_st.skew_cpu);
    for (int i = 1; i < PERCPU_MAX; i++)
        if (smp_cpu_of(i) && cpus_st.facts[i].kvm_page_ok && smp_run(i, kvm_unregister_job, 0, ms_to_tsc(JOB_SLACK_MS), 0, 0))
            cpus_st.facts[i].kvm_page_ok = false;
    if (!experiment_chosen("stolen"))
        smp_park_all(); /* else the stolen-time phase registers their steal-time areas, then parks them */
    cpus_st.phase_ticks = rdtsc() - cpus_st.phase_start;
}

const struct experiment exp_cpus = {
    .name = "cpus",
    .what = "every CPU started; its TSC against the boot CPU's (offset bounds, warps, rate)",
    .needs_tsc = true,
    .measure = cpus_measure,
    .report = cpus_report,
};
