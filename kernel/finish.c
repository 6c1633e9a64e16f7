/* Ending a run (see finish.h). */
#include "finish.h"

#include "console.h"
#include "cpu.h"

const char *run_status_name(enum run_status s)
{
    switch (s) {
    case RUN_PASSED: return "passed";
    case RUN_FAILED: return "failed";
    case RUN_NOTHING_RAN: return "nothing ran";
    case RUN_CRASHED: return "crashed";
    }
    return "unknown";
}

void run_finish(enum run_status s)
{
    interrupts_off();
    kprintf("clockbench: run ended: %s (status %d). Halted; it is safe to power off.\n", run_status_name(s), (int)s);
    console_flush();
    outb(DEBUG_EXIT_PORT, (uint8_t)(DEBUG_EXIT_BASE + s));
    for (;;)
        cpu_halt();
}

void run_finish_crashed(void) { run_finish(RUN_CRASHED); }
