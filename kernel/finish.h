/* Ending a run. Under QEMU the status leaves through isa-debug-exit
   (I/O port 0xf4): we write DEBUG_EXIT_BASE + status and QEMU exits with
   (value << 1) | 1, so 33, 35, 37 or 39: never 0 or 1, which QEMU itself
   uses for a normal end and for its own errors. On real hardware there is no
   such device: the image halts with interrupts off and leaves the output in
   place; where the summary screen is up, it then waits for its keys (R the
   report again, B reboot; see summary.h). Codes: docs/output.md. */
#ifndef CLOCKBENCH_FINISH_H
#define CLOCKBENCH_FINISH_H

#include "../lib/run_status.h"

const char *run_status_name(enum run_status s);
__attribute__((noreturn)) void run_finish(enum run_status s);
__attribute__((noreturn)) void run_finish_crashed(void);
/* Where there is no isa-debug-exit (real hardware), run_finish() hands the
   halted machine to this function, if set: the summary screen's keys. Set
   by the layer above, so that ending a run needs nothing from it. */
void run_finish_set_idle(void (*idle)(void));
/* Resets the machine: the keyboard controller, then the chipset's reset
   register (0xcf9), then a triple fault. */
__attribute__((noreturn)) void machine_reboot(void);

#endif
