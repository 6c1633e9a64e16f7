/* Experiment "cpus": every CPU the MADT lists, started (kernel/smp.c), and
   its TSC tested against the boot CPU's.

   Per CPU: APIC ID and mode, TSC_ADJUST (MSR 0x3B, where CPUID.7:EBX[1]
   says it exists), TSC_AUX through RDTSCP, the CPUID time bits, and what one
   RDTSC costs there (p50, an empty bracket subtracted, as read_cost does).

   Across CPUs, each AP against the boot CPU:
   - offset bounds from request-reply exchanges (kernel/tsc_sync.h): an
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
#include "exp_cpus.h"

#include "../drivers/cpuinfo.h"
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/memory.h"
#include "../kernel/probe.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../kernel/smp.h"
#include "../lib/cmdline.h"
#include "../lib/cpus_analysis.h"
#include "../lib/record.h"
#include "../lib/stats.h"
#include "../lib/string.h"
#include "../lib/tsc_sync.h"
#include "experiment.h"

#define MSR_TSC 0x10u
#define MSR_TSC_ADJUST 0x3Bu
#define MSR_TSC_AUX 0xC0000103u

/* Budgets: together under 1 s for 64 CPUs on hardware (15 ms each), plus
   the rate window. */
#define EXCHANGES 1000
#define EXCHANGE_MS 3
#define EXCHANGES_MIN 16       /* taken even past EXCHANGE_MS, up to EXCHANGE_CAP_MS: an */
#define EXCHANGE_CAP_MS 60     /* emulator may hand the host CPU over only every few ms */
#define WARP_ROUNDS 100000
#define WARP_MS 5
#define KVM_WARP_MS 50
#define RATE_WINDOW_MS 100
#define PHASE_MS 3000          /* the most the whole experiment takes */
#define JOB_SLACK_MS 200       /* a job's wait beyond its own budget */
#define COST_READS 255
#define COST_EMPTY 255
#define NONE_OWNER 0xFFFFFFFFu

struct cpu_facts {
    bool done, faulted;
    char fault[96];
    uint32_t apic_id_cpuid;     /* CPUID.0Bh:EDX, else CPUID.1:EBX[31:24] */
    uint64_t apic_base;
    uint32_t time_bits;         /* CPUS_TB_* */
    bool adjust_read;
    uint64_t tsc_adjust;
    bool aux_read;
    uint32_t tsc_aux;
    uint64_t *costs;            /* COST_READS, empty bracket subtracted */
    uint64_t overhead;
    uint64_t p50_ticks;
    bool kvm_page_ok;           /* this CPU's kvmclock page registered and settled */
};

struct sync_row {
    int index;
    struct tsc_offset first, second, skewed;
    uint64_t first_mid_tsc, second_mid_tsc;  /* boot CPU's TSC at each set's middle */
    bool first_cut, second_cut;              /* a set stopped at its time budget */
    uint64_t warp_rounds_bsp, warp_rounds_ap, warp_cross, warps, max_warp;
    bool warp_done, warp_cut;
    uint64_t kvm_cross, kvm_warps, kvm_max_warp_ns;   /* the same warp test on kvmclock, each CPU its own page */
    bool kvm_done, kvm_cut;
    bool rate_ok;
    int64_t rate_mppm;
    uint64_t rate_unc_mppm;
    const char *rate_why;
    bool measured;
    char why[96];
};

static struct {
    bool started;
    uint64_t phase_start, phase_ticks;
    bool phase_cut;
    struct cpu_facts facts[PERCPU_MAX];
    struct sync_row rows[PERCPU_MAX];
    int row_count;
    /* tsc_skew */
    bool skew_asked, skew_valid;
    uint32_t skew_cpu;
    int64_t skew_ticks;
    bool skew_applied, skew_honoured, skew_via_adjust;
    int64_t skew_moved;
    char skew_why[112];
} st;

struct cpus_verdict cpus_verdict;

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
    wrmsr(MSR_KVM_SYSTEM_TIME_NEW, (uint64_t)(uintptr_t)pg | KVM_SYSTEM_TIME_ENABLE);
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
    wrmsr(MSR_KVM_SYSTEM_TIME_NEW, 0);
}

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
    f->done = true;
}

/* --- offset exchanges --- */

struct exchange {
    volatile uint64_t req __attribute__((aligned(64)));  /* written by the boot CPU */
    volatile uint32_t stop;
    volatile uint64_t ack __attribute__((aligned(64)));  /* written by the AP */
    volatile uint64_t theirs;
    volatile uint32_t ready;
    uint64_t ap_limit_ticks;
};
static struct exchange xc;

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
   what hands the host CPU to the other side at all. */
static void exchange_ap(void *p)
{
    struct exchange *x = p;
    uint64_t seen = 0, t0 = rdtsc();
    x->ready = 1;
    for (uint32_t spins = 0;; spins++) {
        uint64_t r = x->req;
        if (x->stop)
            return;
        if (r == seen) {
            cpu_relax();
            if ((spins & 1023) == 0 && rdtsc() - t0 > x->ap_limit_ticks)
                return;
            continue;
        }
        uint64_t t = ordered_rdtsc();
        x->theirs = t;
        __asm__ volatile("" ::: "memory");
        x->ack = r;
        seen = r;
    }
}

/* The boot CPU's side, with the AP running exchange_ap. Returns whether
   the time budget cut it short of EXCHANGES. */
static bool exchange_with(int index, struct tsc_offset *o, uint64_t *mid_tsc)
{
    tsc_offset_init(o);
    xc.req = 0;
    xc.ack = 0;
    xc.stop = 0;
    xc.ready = 0;
    uint64_t budget = ms_to_tsc(EXCHANGE_MS);
    xc.ap_limit_ticks = 2 * ms_to_tsc(EXCHANGE_CAP_MS) + ms_to_tsc(JOB_SLACK_MS);
    if (!smp_post(index, exchange_ap, &xc))
        return false;
    if (!wait_ready(&xc.ready)) {
        xc.stop = 1;
        smp_wait(index, xc.ap_limit_ticks, 0, 0);
        return false;
    }
    uint64_t start = rdtsc();
    bool cut = false;
    uint64_t cap = ms_to_tsc(EXCHANGE_CAP_MS);
    for (uint64_t i = 1; i <= EXCHANGES; i++) {
        uint64_t before = ordered_rdtsc();
        xc.req = i;
        uint32_t spins = 0;
        while (xc.ack != i) {
            cpu_relax();
            if ((++spins & 255) == 0 && rdtsc() - start > cap)
                break;
        }
        if (xc.ack != i) {
            cut = true;
            break;
        }
        uint64_t after = rdtsc_lfence();
        tsc_offset_add(o, before, xc.theirs, after);
        if (i < EXCHANGES && ((after - start > budget && i >= EXCHANGES_MIN) || after - start > cap)) {
            cut = true;
            break;
        }
    }
    uint64_t end = rdtsc();
    xc.stop = 1;
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
    volatile uint32_t ready;
    uint64_t ap_limit_ticks;
};
static struct warp wp;

struct warp_side {
    uint32_t me;
    uint64_t rounds, cross, warps, max_warp;
    bool lock_timeout;
};
static struct warp_side warp_ap_side;

/* One turn: take the lock, read the TSC after the other CPU's last store,
   compare with it. False when the lock could not be had within limit. */
static inline bool warp_turn(struct warp_side *s, uint64_t t0, uint64_t limit)
{
    uint32_t spins = 0;
    while (__atomic_exchange_n(&wp.lock, 1, __ATOMIC_ACQUIRE)) {
        cpu_relax();
        if ((++spins & 255) == 0 && (rdtsc() - t0 > limit || wp.stop))
            return false;
    }
    uint64_t prev = wp.last;
    uint32_t who = wp.owner;
    uint64_t now = wp.kvmclock ? kvmclock_read(kvm_page_of(s->me)) : ordered_rdtsc();
    wp.last = now;
    wp.owner = s->me;
    __atomic_store_n(&wp.lock, 0, __ATOMIC_RELEASE);
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

static void warp_ap(void *p)
{
    struct warp_side *s = p;
    uint64_t t0 = rdtsc();
    wp.ready = 1;
    while (!wp.stop && s->rounds < 4ull * WARP_ROUNDS && rdtsc() - t0 < wp.ap_limit_ticks)
        if (!warp_turn(s, t0, wp.ap_limit_ticks))
            break;
}

static void warp_with(struct sync_row *row, bool kvmclock)
{
    wp.kvmclock = kvmclock;
    wp.lock = 0;
    wp.owner = NONE_OWNER;
    wp.last = 0;
    wp.stop = 0;
    wp.ready = 0;
    /* kvmclock gets longer: each reading is a page read and a scaled TSC,
       and under a hypervisor the lock passes slowly */
    uint64_t budget = ms_to_tsc(kvmclock ? KVM_WARP_MS : WARP_MS);
    wp.ap_limit_ticks = 2 * budget + ms_to_tsc(JOB_SLACK_MS);
    warp_ap_side = (struct warp_side){.me = (uint32_t)row->index};
    if (!smp_post(row->index, warp_ap, &warp_ap_side))
        return;
    if (!wait_ready(&wp.ready)) {
        wp.stop = 1;
        smp_wait(row->index, ms_to_tsc(JOB_SLACK_MS) + wp.ap_limit_ticks, 0, 0);
        return;
    }
    struct warp_side me = {.me = 0};
    uint64_t t0 = rdtsc();
    while (me.rounds < WARP_ROUNDS) {
        if (rdtsc() - t0 > budget) {
            row->warp_cut = true;
            break;
        }
        if (!warp_turn(&me, t0, budget)) {
            row->warp_cut = true;
            break;
        }
    }
    wp.stop = 1;
    if (!smp_wait(row->index, ms_to_tsc(JOB_SLACK_MS) + budget, 0, 0))
        return;
    if (kvmclock) {
        row->kvm_done = true;
        row->kvm_cut = row->warp_cut;
        row->kvm_cross = me.cross + warp_ap_side.cross;
        row->kvm_warps = me.warps + warp_ap_side.warps;
        row->kvm_max_warp_ns = me.max_warp > warp_ap_side.max_warp ? me.max_warp : warp_ap_side.max_warp;
        return;
    }
    row->warp_done = true;
    row->warp_rounds_bsp = me.rounds;
    row->warp_rounds_ap = warp_ap_side.rounds;
    row->warp_cross = me.cross + warp_ap_side.cross;
    row->warps = me.warps + warp_ap_side.warps;
    row->max_warp = me.max_warp > warp_ap_side.max_warp ? me.max_warp : warp_ap_side.max_warp;
}

/* --- the known answer --- */

struct skew_job {
    int64_t ticks;
    bool via_adjust;
    uint64_t before, after;
};

/* IA32_TSC_ADJUST where it exists: a write there moves the TSC by the same
   amount (SDM vol. 3B, 18.17.3); else IA32_TIME_STAMP_COUNTER itself. */
static void skew_run(void *p)
{
    struct skew_job *j = p;
    if (j->via_adjust) {
        uint64_t a = rdmsr(MSR_TSC_ADJUST);
        j->before = rdtsc();
        wrmsr(MSR_TSC_ADJUST, a + (uint64_t)j->ticks);
        j->after = rdtsc();
    } else {
        j->before = rdtsc();
        wrmsr(MSR_TSC, j->before + (uint64_t)j->ticks);
        j->after = rdtsc();
    }
}

static bool skew_apply(int index, int64_t ticks, bool *faulted, struct probe_fault *fault)
{
    struct skew_job j = {.ticks = ticks, .via_adjust = st.skew_via_adjust};
    if (!smp_run(index, skew_run, &j, ms_to_tsc(JOB_SLACK_MS), faulted, fault) || *faulted)
        return false;
    st.skew_moved = (int64_t)(j.after - j.before);
    return true;
}

static void skew_parse(void)
{
    const char *v = cmdline_get(&boot_cmdline, "tsc_skew");
    st.skew_asked = v != 0;
    if (!v)
        return;
    st.skew_valid = tsc_skew_parse(v, &st.skew_cpu, &st.skew_ticks);
    if (!st.skew_valid)
        fmt_format(st.skew_why, sizeof st.skew_why, "tsc_skew=%s is not CPU:TICKS (a CPU index and non-zero ticks)", v);
    else if (st.skew_cpu == 0)
        fmt_format(st.skew_why, sizeof st.skew_why,
                   "tsc_skew names CPU 0, the reference every other CPU is measured against; name an AP");
}

static void skew_measure(struct sync_row *row)
{
    bool faulted = false;
    struct probe_fault fault;
    st.skew_via_adjust = st.facts[row->index].time_bits & CPUS_TB_ADJUST;
    if (!skew_apply(row->index, st.skew_ticks, &faulted, &fault)) {
        fmt_format(st.skew_why, sizeof st.skew_why, "writing %s on CPU %d %s",
                   st.skew_via_adjust ? "IA32_TSC_ADJUST" : "IA32_TSC", row->index,
                   faulted ? fault.text : "did not finish");
        return;
    }
    st.skew_applied = true;
    st.skew_honoured = cpus_skew_took(st.skew_ticks, st.skew_moved);
    uint64_t mid;
    exchange_with(row->index, &row->skewed, &mid);
    /* Put it back, so the rate check sees the same TSC (exact through
       TSC_ADJUST; through IA32_TSC the read-to-write time is lost). */
    struct skew_job back = {.ticks = -st.skew_ticks, .via_adjust = st.skew_via_adjust};
    if (st.skew_honoured)
        smp_run(row->index, skew_run, &back, ms_to_tsc(JOB_SLACK_MS), &faulted, &fault);
    else
        fmt_format(st.skew_why, sizeof st.skew_why,
                   "this platform ignores writes to %s: the TSC moved %lld ticks, not %lld",
                   st.skew_via_adjust ? "IA32_TSC_ADJUST (MSR 0x3B)" : "IA32_TSC (MSR 0x10)",
                   (long long)st.skew_moved, (long long)st.skew_ticks);
}

/* --- measure --- */

static bool phase_over(void) { return rdtsc() - st.phase_start > ms_to_tsc(PHASE_MS); }

static void cpus_measure(const struct profile *p)
{
    (void)p;
    st = (typeof(st)){0};
    st.phase_start = rdtsc();
    skew_parse();
    smp_start();
    st.started = true;
    uint64_t mark = memory_mark();

    /* facts on every running CPU, the boot CPU's here */
    for (int i = 0; i < PERCPU_MAX; i++) {
        if (!smp_cpu_of(i))
            continue;
        struct cpu_facts *f = &st.facts[i];
        f->costs = memory_alloc(COST_READS * sizeof *f->costs);
        if (!f->costs) {
            fmt_format(f->fault, sizeof f->fault, "no memory for the read-cost samples");
            continue;
        }
        struct probe_fault fault;
        bool faulted = false;
        if (i == 0)
            faulted = !probe_run(facts_job, f, &fault);
        else if (!smp_run(i, facts_job, f, ms_to_tsc(JOB_SLACK_MS), &faulted, &fault))
            fmt_format(f->fault, sizeof f->fault, "the job did not finish within %u ms", JOB_SLACK_MS);
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
    memory_release(mark);

    /* the first set of exchanges with each AP */
    for (int i = 1; i < PERCPU_MAX; i++) {
        if (!smp_cpu_of(i))
            continue;
        struct sync_row *row = &st.rows[st.row_count++];
        row->index = i;
        if (phase_over()) {
            st.phase_cut = true;
            fmt_format(row->why, sizeof row->why, "not measured: the experiment's %u ms budget ran out", PHASE_MS);
            continue;
        }
        row->first_cut = exchange_with(i, &row->first, &row->first_mid_tsc);
        row->measured = row->first.exchanges > 0;
        if (!row->measured)
            fmt_format(row->why, sizeof row->why, "no exchange completed (the CPU did not answer)");
        if (st.skew_valid && st.skew_cpu == (uint32_t)i && row->measured)
            skew_measure(row);
    }
    if (st.skew_valid && st.skew_cpu != 0 && !st.skew_applied && !st.skew_why[0])
        fmt_format(st.skew_why, sizeof st.skew_why, "tsc_skew names CPU %u, which is not running", st.skew_cpu);

    for (int k = 0; k < st.row_count; k++)
        if (st.rows[k].measured && !phase_over())
            warp_with(&st.rows[k], false);
    /* kvmclock across CPUs, where both pages are up */
    for (int k = 0; k < st.row_count; k++) {
        struct sync_row *row = &st.rows[k];
        if (row->measured && !phase_over() && st.facts[0].kvm_page_ok && st.facts[row->index].kvm_page_ok) {
            bool cut = row->warp_cut;
            row->warp_cut = false;
            warp_with(row, true);
            row->warp_cut = cut;
        }
    }

    /* the second set, RATE_WINDOW_MS after the first at least */
    for (int k = 0; k < st.row_count; k++) {
        struct sync_row *row = &st.rows[k];
        if (!row->measured)
            continue;
        if (phase_over()) {
            st.phase_cut = true;
            row->rate_why = "the experiment's time budget ran out before the second set of exchanges";
            continue;
        }
        uint64_t window = ms_to_tsc(RATE_WINDOW_MS);
        for (uint32_t spin = 0; spin < 100000000u && rdtsc() - row->first_mid_tsc < window; spin++)
            cpu_relax();
        row->second_cut = exchange_with(row->index, &row->second, &row->second_mid_tsc);
        row->rate_ok = tsc_offset_rate(&row->first, &row->second, row->second_mid_tsc - row->first_mid_tsc, &row->rate_mppm,
                                       &row->rate_unc_mppm);
        if (!row->rate_ok)
            row->rate_why = "an offset interval was empty (see the offset), so no rate";
    }
    for (int i = 1; i < PERCPU_MAX; i++)
        if (smp_cpu_of(i) && st.facts[i].kvm_page_ok && smp_run(i, kvm_unregister_job, 0, ms_to_tsc(JOB_SLACK_MS), 0, 0))
            st.facts[i].kvm_page_ok = false;
    smp_park_all();
    st.phase_ticks = rdtsc() - st.phase_start;
}

/* --- report --- */

static const char *mode_name(const struct cpu_facts *f)
{
    if (!f->done)
        return "-";
    if (!(f->apic_base & APIC_BASE_ENABLE))
        return "off";
    return f->apic_base & APIC_BASE_EXTD ? "x2APIC" : "xAPIC";
}

static void report_cpu_table(void)
{
    char a[FMT_FIXED_CHARS];
    const struct cpu_facts *bf = &st.facts[0];
    kprintf("  %-3s %5s %5s %-6s %-10s %10s %7s %10s  %s\n", "cpu", "apic", "uid", "mode", "state", "TSC_ADJUST", "TSC_AUX",
            "rdtsc p50", "CPUID bits");
    for (uint32_t e = 0; e < smp.count; e++) {
        const struct smp_cpu *c = &smp.cpus[e];
        const struct cpu_facts *f = c->index >= 0 ? &st.facts[c->index] : 0;
        struct record r;
        record_begin(&r, "cpu");
        if (c->index >= 0)
            record_u64(&r, "index", (uint64_t)c->index);
        else
            record_null(&r, "index");
        record_u64(&r, "apic_id", c->apic_id);
        record_u64(&r, "uid", c->uid);
        record_u64(&r, "madt_type", c->madt_type);
        record_bool(&r, "enabled", c->enabled);
        record_bool(&r, "online_capable", c->online_capable);
        record_bool(&r, "started", c->started && !c->lost);
        record_str(&r, "reason", c->reason[0] ? c->reason : (f && f->fault[0] ? f->fault : 0));
        if (f && f->done) {
            record_bool(&r, "x2apic", f->apic_base & APIC_BASE_EXTD);
            if (f->adjust_read)
                record_i64(&r, "tsc_adjust", (int64_t)f->tsc_adjust);
            else
                record_null(&r, "tsc_adjust");
            if (f->aux_read)
                record_u64(&r, "tsc_aux", f->tsc_aux);
            else
                record_null(&r, "tsc_aux");
            record_xf_fixed(&r, "read_p50_ns", tsc_ticks_ns(f->p50_ticks), 1);
            record_u64(&r, "read_p50_ticks", f->p50_ticks);
            record_hex(&r, "cpuid_time_bits", f->time_bits);
            record_u64(&r, "cpuid_apic_id", f->apic_id_cpuid);
            record_u64(&r, "start_ticks", c->start_ticks);
        } else {
            record_null(&r, "x2apic");
            record_null(&r, "tsc_adjust");
            record_null(&r, "tsc_aux");
            record_null(&r, "read_p50_ns");
        }
        emit(&r);

        char idx[8], adj[24], aux[16], cost[FMT_FIXED_CHARS + 4];
        fmt_format(idx, sizeof idx, c->index >= 0 ? "%d" : "-", c->index);
        const char *state = c->is_bsp ? "boot CPU" : c->started && !c->lost ? "started" : "not running";
        if (!f || !f->done) {
            kprintf("  %-3s %5u %5u %-6s %-10s\n      %s\n", idx, c->apic_id, c->uid, "-", state,
                    c->reason[0] ? c->reason : f && f->fault[0] ? f->fault : "");
            continue;
        }
        if (f->adjust_read)
            fmt_format(adj, sizeof adj, "%lld", (long long)f->tsc_adjust);
        else
            fmt_format(adj, sizeof adj, "-");
        if (f->aux_read)
            fmt_format(aux, sizeof aux, "%u", f->tsc_aux);
        else
            fmt_format(aux, sizeof aux, "-");
        fmt_format(cost, sizeof cost, "%s ns", ns_cell(a, tsc_ticks_ns(f->p50_ticks)));
        kprintf("  %-3s %5u %5u %-6s %-10s %10s %7s %10s  0x%02x%s\n", idx, c->apic_id, c->uid, mode_name(f), state, adj, aux,
                cost, f->time_bits, c->index == 0 ? "" : f->time_bits == bf->time_bits ? " same" : " DIFFERS");
        if (f->apic_id_cpuid != c->apic_id)
            kprintf("       note: CPUID gives APIC ID %u on this CPU, the MADT %u\n", f->apic_id_cpuid, c->apic_id);
    }
    kprintf("  CPUID bits: 0x01 TSC, 0x02 RDTSCP, 0x04 invariant TSC, 0x08 TSC-deadline,\n"
            "  0x10 TSC_ADJUST, 0x20 x2APIC; bits that differ from CPU 0's are a finding\n");
}

/* A signed tick count as a time with its unit: ns below 10 us, us below
   10 ms, then ms. */
static const char *ticks_ns(char b[FMT_FIXED_CHARS + 4], int64_t ticks)
{
    struct xf ns = tsc_ticks_to_ns(xf_from_i64(ticks));
    struct xf mag = xf_abs(ns);
    const char *end;
    if (xf_cmp(mag, xf_from_u64(10000)) < 0) {
        xs(b, ns, 1);
        end = " ns";
    } else if (xf_cmp(mag, xf_from_u64(10000000)) < 0) {
        xs(b, xf_div(ns, xf_from_u64(1000)), 2);
        end = " us";
    } else {
        xs(b, xf_div(ns, xf_from_u64(1000000)), 3);
        end = " ms";
    }
    size_t n = strlen(b);
    for (int i = 0; end[i]; i++)
        b[n++] = end[i];
    b[n] = '\0';
    return b;
}

static void report_sync(struct cpus_tally *t)
{
    char a[FMT_FIXED_CHARS + 4], b[FMT_FIXED_CHARS + 4], c[FMT_FIXED_CHARS + 4], d[FMT_FIXED_CHARS + 4];
    kprintf("\n  Each CPU against CPU 0. offset: its TSC minus CPU 0's, an interval that\n"
            "  must hold the truth (up to %u request-reply exchanges, %u ms); warps:\n"
            "  readings that went back across CPUs (a lock passed to and fro, %u ms);\n"
            "  rate: how far the offset moved in at least %u ms, in ppm\n",
            EXCHANGES, EXCHANGE_MS, WARP_MS, RATE_WINDOW_MS);
    for (int k = 0; k < st.row_count; k++) {
        const struct sync_row *row = &st.rows[k];
        struct record r;
        record_begin(&r, "tsc_sync");
        record_u64(&r, "cpu", (uint64_t)row->index);
        const struct tsc_offset *o = &row->first;
        bool ok = row->measured && tsc_offset_consistent(o);
        if (ok) {
            record_i64(&r, "offset_lo_ticks", o->lo);
            record_i64(&r, "offset_hi_ticks", o->hi);
            record_u64(&r, "round_trip_min_ticks", o->round_trip_min);
            record_xf_fixed(&r, "offset_lo_ns", tsc_ticks_to_ns(xf_from_i64(o->lo)), 1);
            record_xf_fixed(&r, "offset_hi_ns", tsc_ticks_to_ns(xf_from_i64(o->hi)), 1);
        } else {
            record_null(&r, "offset_lo_ticks");
            record_null(&r, "offset_hi_ticks");
            if (row->measured)
                record_u64(&r, "round_trip_min_ticks", o->round_trip_min);
            else
                record_null(&r, "round_trip_min_ticks");
        }
        record_u64(&r, "exchanges", o->exchanges);
        record_bool(&r, "exchanges_cut", row->first_cut);
        if (row->warp_done) {
            record_u64(&r, "warps", row->warps);
            record_u64(&r, "max_warp_ticks", row->max_warp);
            record_u64(&r, "warp_rounds", row->warp_rounds_bsp + row->warp_rounds_ap);
            record_u64(&r, "warp_cross", row->warp_cross);
            record_bool(&r, "warp_cut", row->warp_cut);
        } else {
            record_null(&r, "warps");
            record_null(&r, "max_warp_ticks");
        }
        if (row->kvm_done) {
            record_u64(&r, "kvmclock_warps", row->kvm_warps);
            record_u64(&r, "kvmclock_max_warp_ns", row->kvm_max_warp_ns);
            record_u64(&r, "kvmclock_warp_cross", row->kvm_cross);
        }
        if (row->rate_ok) {
            record_fixed(&r, "rate_ppm", row->rate_mppm, 3);
            record_fixed(&r, "rate_uncertainty_ppm", (int64_t)row->rate_unc_mppm, 3);
            record_xf_fixed(&r, "rate_window_s", tsc_ticks_s(row->second_mid_tsc - row->first_mid_tsc), 3);
            record_null(&r, "rate_reason");
        } else {
            record_null(&r, "rate_ppm");
            record_null(&r, "rate_uncertainty_ppm");
            record_str(&r, "rate_reason", row->rate_why ? row->rate_why : row->why[0] ? row->why : "not measured");
        }
        record_str(&r, "reason", row->why[0] ? row->why : 0);
        emit(&r);

        if (!row->measured) {
            kprintf("  CPU %d: %s\n", row->index, row->why);
            continue;
        }
        cpus_tally_offset(t, row->index, o);
        if (!ok) {
            kprintf("  CPU %d: the exchanges disagree (lowest bound %lld above highest %lld ticks): the two TSCs\n"
                    "         moved against each other while they were taken\n",
                    row->index, (long long)o->lo, (long long)o->hi);
        } else {
            int64_t mid = tsc_offset_mid(o);
            uint64_t half = tsc_offset_half(o);
            kprintf("  CPU %d: offset [%lld, %lld] ticks, %s +- %s\n", row->index, (long long)o->lo, (long long)o->hi,
                    ticks_ns(a, mid), ticks_ns(b, (int64_t)half));
            kprintf("         round trip min %llu ticks (%s), %u exchanges%s\n", (unsigned long long)o->round_trip_min,
                    ticks_ns(c, (int64_t)o->round_trip_min), o->exchanges, row->first_cut ? ", budget cut short" : "");
        }
        if (row->warp_done) {
            cpus_tally_warps(t, row->warps);
            if (row->warp_cross)
                kprintf("         warps: %llu in %llu cross-CPU comparisons, largest %llu ticks%s\n",
                        (unsigned long long)row->warps, (unsigned long long)row->warp_cross, (unsigned long long)row->max_warp,
                        row->warp_cut ? ", cut by its time budget" : "");
            else
                kprintf("         warps: none compared (the lock never passed between them in %u ms)\n", WARP_MS);
        } else {
            kprintf("         warps: not tested (%s)\n", phase_over() ? "time budget" : "the CPU did not take the job");
        }
        if (row->kvm_done) {
            cpus_tally_kvm_warps(t, row->kvm_warps, row->kvm_cross);
            kprintf("         kvmclock warps: %llu in %llu cross-CPU comparisons, largest %llu ns\n", (unsigned long long)row->kvm_warps,
                    (unsigned long long)row->kvm_cross, (unsigned long long)row->kvm_max_warp_ns);
        }
        if (row->rate_ok) {
            kprintf("         rate: %s +- %s ppm against CPU 0 over %s s\n", fmt_fixed(d, row->rate_mppm, 3, 3),
                    fmt_fixed(a, (int64_t)row->rate_unc_mppm, 3, 3),
                    xs(b, tsc_ticks_s(row->second_mid_tsc - row->first_mid_tsc), 3));
            cpus_tally_rate(t, row->rate_mppm, row->rate_unc_mppm);
        } else {
            kprintf("         rate: not measured: %s\n", row->rate_why ? row->rate_why : "-");
        }
    }
}

/* Every pair of application processors, derived from each one's interval
   against CPU 0 (tsc_offset_between): no extra measurement, so wider, but
   an interval that must hold the truth all the same. */
static void report_pairs(void)
{
    char a[FMT_FIXED_CHARS + 4], b[FMT_FIXED_CHARS + 4];
    uint32_t shown = 0;
    if (!cpus_pairs_listed((uint32_t)st.row_count))
        return;
    for (int k = 0; k < st.row_count; k++)
        for (int l = k + 1; l < st.row_count; l++) {
            const struct sync_row *p = &st.rows[k], *q = &st.rows[l];
            int64_t lo, hi;
            if (!p->measured || !q->measured || !tsc_offset_between(&q->first, &p->first, &lo, &hi))
                continue;
            if (!shown++)
                kprintf("\n  Pairs of the other CPUs (from their intervals against CPU 0: wider than\n"
                        "  a direct measurement, and as sure):\n");
            kprintf("  CPU %d - CPU %d: [%lld, %lld] ticks (%s to %s)\n", q->index, p->index, (long long)lo, (long long)hi,
                    ticks_ns(a, lo), ticks_ns(b, hi));
            struct record r;
            record_begin(&r, "tsc_pair");
            record_u64(&r, "cpu", (uint64_t)q->index);
            record_u64(&r, "other", (uint64_t)p->index);
            record_i64(&r, "offset_lo_ticks", lo);
            record_i64(&r, "offset_hi_ticks", hi);
            record_bool(&r, "derived", true);
            emit(&r);
        }
}

static void report_skew(void)
{
    if (!st.skew_asked)
        return;
    const char *name = "tsc_skew known answer";
    struct record r;
    record_begin(&r, "tsc_skew");
    record_u64(&r, "cpu", st.skew_cpu);
    record_i64(&r, "ticks", st.skew_ticks);
    record_str(&r, "method", st.skew_via_adjust ? "IA32_TSC_ADJUST" : "IA32_TSC");
    record_bool(&r, "applied", st.skew_applied);
    record_bool(&r, "honoured", st.skew_honoured);
    record_i64(&r, "moved_ticks", st.skew_moved);
    const struct sync_row *row = 0;
    for (int k = 0; k < st.row_count; k++)
        if (st.rows[k].index == (int)st.skew_cpu)
            row = &st.rows[k];
    bool found = false;
    int64_t lo = 0, hi = 0;
    /* the change between the two sets: the skew, bounded by both intervals */
    if (st.skew_honoured && row && tsc_offset_between(&row->skewed, &row->first, &lo, &hi)) {
        found = true;
        record_i64(&r, "change_lo_ticks", lo);
        record_i64(&r, "change_hi_ticks", hi);
    } else {
        record_null(&r, "change_lo_ticks");
        record_null(&r, "change_hi_ticks");
    }
    record_str(&r, "reason", st.skew_why[0] ? st.skew_why : 0);
    emit(&r);
    kprintf("\n  Known answer: tsc_skew asks CPU %u's TSC moved by %lld ticks\n", st.skew_cpu, (long long)st.skew_ticks);
    if (!found) {
        check_skip(name, "%s", st.skew_why[0] ? st.skew_why : "the offset could not be measured on that CPU");
        return;
    }
    kprintf("  through %s; the offset moved by [%lld, %lld] ticks\n", st.skew_via_adjust ? "IA32_TSC_ADJUST" : "IA32_TSC",
            (long long)lo, (long long)hi);
    if (lo <= st.skew_ticks && st.skew_ticks <= hi)
        check_pass(name, "CPU %u moved by %lld ticks, found within [%lld, %lld]", st.skew_cpu, (long long)st.skew_ticks,
                   (long long)lo, (long long)hi);
    else
        check_fail(name, "CPU %u moved by %lld ticks, but the measured change is [%lld, %lld]", st.skew_cpu,
                   (long long)st.skew_ticks, (long long)lo, (long long)hi);
}

static void verdict(const struct cpus_tally *t)
{
    const char *name = "TSC synchronised across CPUs";
    char a[FMT_FIXED_CHARS + 4];
    struct cpus_verdict *v = &cpus_verdict;
    v->ran = true;
    v->cpus = smp.running;
    v->listed = discovered.acpi.cpus_enabled;
    v->warps = t->warps;
    v->worst_cpu = t->worst;
    const struct sync_row *wr = 0;
    for (int k = 0; k < st.row_count; k++)
        if (st.rows[k].index == t->worst)
            wr = &st.rows[k];
    enum cpus_outcome outcome = cpus_outcome(t, wr ? &wr->first : 0, tsc_ticks_ns(t->worst_ticks));
    if (outcome == CPUS_NOT_COMPARED) {
        const char *why = smp.why[0] ? smp.why : smp.running > 1 ? "no other CPU could be measured" : 0;
        if (why)
            fmt_format(v->line, sizeof v->line, "TSC across CPUs: not compared (%s)", why);
        else
            fmt_format(v->line, sizeof v->line, "TSC across CPUs: one CPU running, nothing to compare");
        kprintf("  %s\n", v->line);
        check_skip(name, "%s", why ? why : "one CPU running, the only one the MADT enables");
        return;
    }
    v->compared = true;
    uint32_t cpus = t->compared + 1;
    v->synchronised = outcome == CPUS_SYNCHRONISED || outcome == CPUS_SYNC_COARSE;
    if (v->synchronised) {
        v->worst_ns = xf_to_fixed(tsc_ticks_ns(t->worst_ticks), 0);
        /* an interval this wide says only that no larger offset exists: the
           exchanges were too slow (an emulator) to tell a smaller one */
        if (outcome == CPUS_SYNC_COARSE)
            fmt_format(v->line, sizeof v->line, "TSC across %u CPUs: no offset beyond +-%s (slow exchanges: cannot tell smaller)",
                       cpus, ticks_ns(a, (int64_t)t->worst_ticks));
        else
            fmt_format(v->line, sizeof v->line, "TSC synchronised across %u CPUs: the worst offset is within +-%s", cpus,
                       ticks_ns(a, (int64_t)t->worst_ticks));
        kprintf("  Verdict: %s\n", v->line);
        check_pass(name, "%u CPUs, offsets within +-%s, no warps", cpus, ticks_ns(a, (int64_t)t->worst_ticks));
        return;
    }
    if (outcome == CPUS_OFFSET) {
        int64_t mid = tsc_offset_mid(&wr->first);
        v->worst_ns = xf_to_fixed(tsc_ticks_to_ns(xf_from_i64(mid)), 0);
        struct xf us = xf_div(tsc_ticks_to_ns(xf_from_i64(mid < 0 ? -mid : mid)), xf_from_u64(1000));
        fmt_format(v->line, sizeof v->line, "TSC not synchronised: CPU %d is %s us %s; compare timestamps only on one CPU",
                   t->worst, xs(a, us, 3), mid < 0 ? "behind" : "ahead");
    } else if (outcome == CPUS_WARPS) {
        fmt_format(v->line, sizeof v->line, "TSC not synchronised: %llu warps across CPUs; compare timestamps only on one CPU",
                   (unsigned long long)t->warps);
    } else if (outcome == CPUS_RATE) {
        fmt_format(v->line, sizeof v->line, "TSC not synchronised: a CPU's TSC runs at another rate; compare timestamps only on one CPU");
    } else {
        fmt_format(v->line, sizeof v->line, "TSC not synchronised: CPU %d's offset cannot be bounded; compare timestamps only on one CPU",
                   t->worst);
    }
    kprintf("  Verdict: %s\n", v->line);
    check_fail(name, "%s", v->line);
}

static void cpus_report(void)
{
    char a[FMT_FIXED_CHARS];
    cpus_verdict = (struct cpus_verdict){.worst_cpu = -1};
    kprintf("\n== CPUs and the TSC across them ==\n");
    const struct acpi_info *acpi = &discovered.acpi;
    if (acpi->madt_found)
        kprintf("  MADT: %u processors listed, %u enabled, %u online-capable%s\n", acpi->cpus_listed, acpi->cpus_enabled,
                acpi->cpus_online_capable, acpi->cpus_dropped ? " (more than the image keeps)" : "");
    if (smp.apic_ok)
        kprintf("  Local APIC: %s mode%s, boot CPU APIC ID %u%s\n", smp.lapic.x2apic ? "x2APIC" : "xAPIC",
                smp.x2apic_by_us ? " (switched by x2apic=on)" : "", smp.bsp_apic_id,
                smp.svr_enabled_by_us ? "; it was software-disabled and was enabled" : "");
    if (cmdline_get(&boot_cmdline, "x2apic") && !smp.lapic.x2apic)
        kprintf("  Note: x2apic=on asked, but the CPU has no x2APIC (CPUID.1:ECX[21] clear); xAPIC mode used\n");
    if (smp.trampoline_page)
        kprintf("  Trampoline at 0x%llx; %u of %u enabled CPUs running; starting took %s ms\n",
                (unsigned long long)smp.trampoline_page, smp.running, acpi->cpus_enabled,
                xs(a, xf_div(tsc_ticks_ns(smp.total_ticks), xf_from_u64(1000000)), 3));
    if (smp.why[0])
        kprintf("  No other CPU started: %s\n", smp.why);
    report_cpu_table();

    struct cpus_tally t;
    cpus_tally_init(&t);
    report_sync(&t);
    if (counters[COUNTER_KVMCLOCK].present && st.row_count) {
        const char *name = "kvmclock monotonic across CPUs";
        if (!t.kvm_cross)
            check_skip(name, "no cross-CPU comparison was made (pages not registered on the other CPUs, or no time left)");
        else if (t.kvm_warps)
            check_fail(name, "%llu readings went back across CPUs in %llu comparisons", (unsigned long long)t.kvm_warps,
                       (unsigned long long)t.kvm_cross);
        else
            check_pass(name, "no reading went back across CPUs in %llu comparisons", (unsigned long long)t.kvm_cross);
    }
    report_pairs();
    if (st.phase_cut)
        kprintf("  The experiment's %u ms time budget cut it short: CPUs after the budget were not measured\n", PHASE_MS);
    kprintf("  The phase took %s ms (its time budget: %u ms)\n",
            xs(a, xf_div(tsc_ticks_ns(st.phase_ticks), xf_from_u64(1000000)), 1), PHASE_MS);
    report_skew();
    verdict(&t);
}

const struct experiment exp_cpus = {
    .name = "cpus",
    .what = "every CPU started; its TSC against the boot CPU's (offset bounds, warps, rate)",
    .needs_tsc = true,
    .measure = cpus_measure,
    .report = cpus_report,
};
