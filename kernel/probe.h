/* Recoverable probes. Code that touches hardware the firmware only claims
   exists (an MSR, an MMIO address from an ACPI table) runs inside
   probe_run(): a CPU fault there is caught, described, and turned into a
   false return, and the run goes on. Outside a probe a fault ends the run. */
#ifndef CLOCKBENCH_PROBE_H
#define CLOCKBENCH_PROBE_H

#include <stdbool.h>
#include <stdint.h>

struct trap_frame;

struct probe_fault {
    uint64_t vector;
    uint64_t error_code;
    uint64_t rip;
    uint64_t cr2;
    char text[96]; /* "general protection (#GP) at rip ..., error 0x0" */
};

typedef void (*probe_fn)(void *ctx);

/* Runs fn(ctx). True when it returned; false when it faulted (fault filled). */
bool probe_run(probe_fn fn, void *ctx, struct probe_fault *fault);

/* rdmsr that reports a #GP instead of dying. */
bool msr_read_safe(uint32_t msr, uint64_t *value, struct probe_fault *fault);

/* Called by the exception handler: resumes the armed probe and does not
   return, or returns at once when none is armed or the vector is not one a
   probe can cause. */
void probe_recover(const struct trap_frame *f, uint64_t cr2);

#endif
