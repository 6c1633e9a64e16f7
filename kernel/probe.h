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

/* rdmsr and wrmsr that report a #GP instead of dying: every MSR the CPU or
   hypervisor may lack goes through these (issue 37), and a fault becomes a
   SKIP or a note that names the MSR (msr_name). */
bool msr_read_safe(uint32_t msr, uint64_t *value, struct probe_fault *fault);
bool msr_write_safe(uint32_t msr, uint64_t value, struct probe_fault *fault);
/* "MSR 0x8b (IA32_BIOS_SIGN_ID)": for the notes. Returns buf. */
const char *msr_name(uint32_t msr, char buf[48]);

/* msr_fault=MSR[,MSR...] (up to MSR_FAULT_MAX, hex or decimal): those MSRs
   fault in msr_read_safe and msr_write_safe, by a real #GP taken inside
   the probe (a non-canonical access in place of the rdmsr or wrmsr), so
   each caller's fault path runs as on a CPU that lacks the MSR. Parsed once,
   in kmain, before anything reads an MSR; false with why for a bad value
   (then nothing is injected). */
#define MSR_FAULT_MAX 8
bool msr_fault_setup(char *why, unsigned why_len);
/* How many are injected, and the list as text ("0x8b, 0x10"), for the report. */
unsigned msr_fault_list(char *out, unsigned out_len);

/* Called by the exception handler: resumes the armed probe and does not
   return, or returns at once when none is armed or the vector is not one a
   probe can cause. */
void probe_recover(const struct trap_frame *f, uint64_t cr2);

#endif
