/* Shared findings (see results.h). */
#include "results.h"

#include "../drivers/cpuinfo.h"
#include "../lib/string.h"
#include "report_util.h"

struct results results = {.reference = -1};

struct xf tsc_ticks_to_ns(struct xf ticks)
{
    return xf_div(xf_mul(ticks, xf_from_u64(1000000000ull)), results.tsc_hz);
}

struct xf tsc_ticks_ns(uint64_t ticks) { return tsc_ticks_to_ns(xf_from_u64(ticks)); }

struct xf tsc_ticks_s(uint64_t ticks) { return xf_div(xf_from_u64(ticks), results.tsc_hz); }

uint64_t ms_to_tsc(uint64_t ms) { return results.tsc_estimate_hz / 1000 * ms; }

bool results_rdtsc_intercepted(void)
{
    const struct target_findings *t = &results.target[TARGET_RDTSC];
    struct read_cost c;
    results_cost_of(TARGET_RDTSC, &c);
    /* A hardware RDTSC costs 10-40 ns (../shared/ANCHORS.md); 250 ns is far
       beyond any real CPU and typical of a VM exit. The read's one figure:
       its p50, or below the TSC's step the batch's. */
    return t->cost_done && boot_cpu.info.hypervisor && read_cost_ns_x10(&c) > 2500;
}

void results_cost_of(int target, struct read_cost *c)
{
    const struct target_findings *tf = &results.target[target];
    *c = (struct read_cost){.p50_ns = tsc_ticks_ns(tf->p50_ticks), .below_step = tf->below_step,
                            .step_ns = tsc_ticks_ns(results.tsc_step_ticks), .batch_done = tf->batch_done,
                            .batch_ns = tsc_ticks_to_ns(tf->batch_ticks)};
}

const char *results_read_cost(char buf[RESULTS_COST_CHARS], int target)
{
    struct read_cost c;
    results_cost_of(target, &c);
    return read_cost_text(buf, &c);
}

bool results_emulator(void)
{
    return results.emulated || (boot_cpu.info.hypervisor && !strcmp(boot_cpu.info.hv_vendor, TCG_SIGNATURE));
}

/* 1 %: the estimate's own spread (0.5 % at most) plus the counter's nominal
   accuracy (500 ppm), with room to spare; 2 ticks of slack: the tick the
   reading may sit in and a latch that lags by one. */
#define UNWRAP_RATE_TOL_PPM 10000
/* when the estimate is only a claim or an assumption (no reference held
   still for the calibration), judging steps needs a much looser bound */
#define UNWRAP_RATE_TOL_UNCHECKED_PPM 300000
#define UNWRAP_SLACK_TICKS 2

void unwrap_params_of(int counter, struct unwrap_params *p)
{
    *p = (struct unwrap_params){
        .mask = counters[counter].mask,
        .counter_millihz = counters[counter].nominal_millihz ? counters[counter].nominal_millihz : 1,
        .tsc_hz = results.tsc_estimate_hz ? results.tsc_estimate_hz : 1,
        .rate_tol_ppm = results.tsc_estimate_checked ? UNWRAP_RATE_TOL_PPM : UNWRAP_RATE_TOL_UNCHECKED_PPM,
        .slack_ticks = UNWRAP_SLACK_TICKS,
    };
}
