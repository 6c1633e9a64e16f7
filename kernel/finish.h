/* Ending a run. Under QEMU the status leaves through isa-debug-exit
   (I/O port 0xf4): we write DEBUG_EXIT_BASE + status and QEMU exits with
   (value << 1) | 1, so 33, 35, 37 or 39: never 0 or 1, which QEMU itself
   uses for a normal end and for its own errors. On real hardware there is no
   such device: the image halts with interrupts off and leaves the output in
   place; where the summary screen is up, it then waits for its keys (R the
   report again, B reboot; see summary.h). Codes: docs/output.md. */
#ifndef CLOCKBENCH_FINISH_H
#define CLOCKBENCH_FINISH_H

#define DEBUG_EXIT_PORT 0xF4
#define DEBUG_EXIT_BASE 0x10

enum run_status {
    RUN_PASSED = 0,      /* every check passed (skips allowed) -> QEMU exit 33 */
    RUN_FAILED = 1,      /* at least one check failed          -> QEMU exit 35 */
    RUN_NOTHING_RAN = 2, /* no check could run                 -> QEMU exit 37 */
    RUN_CRASHED = 3,     /* an unexpected CPU exception        -> QEMU exit 39 */
};

const char *run_status_name(enum run_status s);
__attribute__((noreturn)) void run_finish(enum run_status s);
__attribute__((noreturn)) void run_finish_crashed(void);
/* Resets the machine: the keyboard controller, then the chipset's reset
   register (0xcf9), then a triple fault. */
__attribute__((noreturn)) void machine_reboot(void);

#endif
