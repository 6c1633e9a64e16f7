/* The application processors: found in the MADT, started with INIT-SIPI-SIPI
   (Intel SDM vol. 3A, 9.4.4 "MP Initialization Example", 11.6.1 the ICR),
   and then run jobs handed to them through a mailbox. An AP never prints
   and never touches the console. An AP with no job sleeps (HLT) with
   interrupts on, and the boot CPU wakes it with a fixed IPI, VEC_SMP_WAKE,
   when it posts one: only the CPUs being measured run, which matters where
   the virtual CPUs outnumber the host's (an emulator, an overcommitted
   guest). Jobs run with interrupts off, except while they nap (smp_nap).
   Each running CPU has an index (its per-CPU slot, percpu.h): 0 is the
   boot CPU, the APs follow in MADT order. */
#ifndef CLOCKBENCH_SMP_H
#define CLOCKBENCH_SMP_H

#include <stdbool.h>
#include <stdint.h>

#include "../drivers/lapic.h"
#include "../lib/acpi.h"
#include "../lib/bootinfo.h"
#include "percpu.h"
#include "probe.h"

/* How far an AP got, from what it writes as it goes (boot/trampoline.asm). */
enum smp_stage { STAGE_NONE, STAGE_REAL, STAGE_PROTECTED, STAGE_LONG, STAGE_RUNNING };

struct smp_cpu {
    uint32_t apic_id, uid;   /* from the MADT */
    uint8_t madt_type;       /* 0 Local APIC, 9 Local x2APIC */
    bool enabled, online_capable, is_bsp;
    bool started;            /* running and answering its mailbox */
    bool lost;               /* started, then a job did not finish in time: no more jobs */
    bool never_woke;         /* lost because it never took the job (asleep through the IPIs) */
    int index;               /* its per-CPU slot, -1 when it has none */
    uint8_t stage;           /* enum smp_stage reached */
    uint64_t start_ticks;    /* first SIPI to running, boot CPU's TSC */
    char reason[112];        /* why it is not running ("" when it is) */
};

struct smp_info {
    bool tried;
    bool apic_ok;            /* the boot CPU's local APIC can send IPIs */
    char why[128];           /* why no AP was started at all, or "" */
    struct lapic lapic;
    bool x2apic_by_us;       /* we switched the boot CPU into x2APIC mode (x2apic=on, or x2apic_needed) */
    bool x2apic_needed;      /* the MADT enables a CPU with an APIC ID above 254 */
    bool svr_enabled_by_us;  /* the APIC was software-disabled; we enabled it */
    uint32_t bsp_apic_id;
    uint64_t trampoline_page;
    uint32_t count;                       /* entries in cpus[] */
    struct smp_cpu cpus[ACPI_MAX_CPUS];   /* the MADT's processors, boot CPU included */
    uint32_t running;                     /* CPUs with an index: boot CPU + APs started */
    int entry_of[PERCPU_MAX];             /* cpus[] entry of each index */
    uint64_t total_ticks;                 /* the whole start-up */
    bool deaf_asked;                      /* smp_deaf=CPU: that AP is sent no wake-up IPI (a known answer) */
    uint64_t deaf_index;
    const struct boot_info *boot;         /* smp_use(): the memory map */
    const struct acpi_info *acpi;         /* smp_use(): the MADT's processors */
};

extern struct smp_info smp;

/* What the other CPUs are started from, given by discovery before any
   start: the loader's memory map (the trampoline's page) and the MADT's
   list of processors. */
void smp_use(const struct boot_info *bi, const struct acpi_info *acpi);

/* The wake-up IPI's vector: its handler only ends the interrupt
   (kernel/interrupts.c); it is never counted as unexpected. */
#define VEC_SMP_WAKE 0xF0

typedef void (*smp_job)(void *arg);

/* Maps and enables the boot CPU's local APIC once (smp.lapic); false with
   smp.why when it is not usable. smp_start calls it too. */
bool smp_bsp_apic(void);

/* Starts every enabled AP once; later calls do nothing. Every wait is
   bounded; a CPU that does not answer gets a reason and is left behind. */
void smp_start(void);

/* Hands fn(arg) to CPU index (an AP), not waiting. False when that CPU does
   not take jobs (not started, lost, or busy with the previous one). */
bool smp_post(int index, smp_job fn, void *arg);
/* Waits up to budget_ticks (boot CPU's TSC) for the posted job to finish.
   False on timeout: the CPU is marked lost, its reason saying whether it
   never woke for the job or did not finish it. *faulted tells whether the job
   ended in a CPU exception on the AP (caught by probe_run), fault says which. */
bool smp_wait(int index, uint64_t budget_ticks, bool *faulted, struct probe_fault *fault);
/* smp_wait, then, for a job that runs with interrupts on and ends by its
   own deadline (budget_ticks after it was posted), up to grace_ticks more
   during which the CPU gets the wake-up IPI every 10 ms: a job halted for
   an interrupt that never reaches it wakes, finds its bound passed, and
   ends. Before budget_ticks such a job is left undisturbed. */
bool smp_wait_past(int index, uint64_t budget_ticks, uint64_t grace_ticks, bool *faulted, struct probe_fault *fault);
/* post + wait. */
bool smp_run(int index, smp_job fn, void *arg, uint64_t budget_ticks, bool *faulted, struct probe_fault *fault);
/* Every AP halts with interrupts off for the rest of the run: no job or
   IPI wakes it again. */
void smp_park_all(void);

/* Sends CPU index (an AP) the wake-up IPI: it ends an HLT with interrupts
   on (smp_nap), or is taken at the next one. */
void smp_wake(int index);

/* For a job on an AP that waits for the boot CPU: where the host has fewer
   CPUs than the guest, a waiting CPU that spins takes the host CPU the
   other side needs. The job spins for spin_us after the last thing it saw
   (smp_nap_due), then sets *napping, looks once more (*word != seen) and
   sleeps until an interrupt; the boot CPU, after changing *word, fences
   (cpu_store_load_fence) and calls smp_wake when *napping is set. Either
   the AP sees the change or the boot CPU sees it napping (the store-load
   fence on both sides). smp_wait wakes a job's CPU every 10 ms until the job
   ends, so a nap is bounded even if a wake-up is missed. */
bool smp_nap_due(uint64_t last_seen_tsc, uint32_t spin_us);
void smp_nap(volatile uint32_t *napping, const volatile uint64_t *word, uint64_t seen);

/* The cpus[] entry of a running index, or 0. */
const struct smp_cpu *smp_cpu_of(int index);

#endif
