/* Ending a run. Under QEMU the status leaves through isa-debug-exit
   (I/O port 0xf4): QEMU exits with (status << 1) | 1. On real hardware there
   is no such device: the image halts with interrupts off and leaves the
   output in place. Codes: docs/output.md. */
#ifndef CLOCKBENCH_FINISH_H
#define CLOCKBENCH_FINISH_H

enum run_status {
    RUN_PASSED = 0,      /* every check passed (skips allowed) -> QEMU exit 1 */
    RUN_FAILED = 1,      /* at least one check failed          -> QEMU exit 3 */
    RUN_NOTHING_RAN = 2, /* no check could run                 -> QEMU exit 5 */
    RUN_CRASHED = 3,     /* an unexpected CPU exception        -> QEMU exit 7 */
};

const char *run_status_name(enum run_status s);
__attribute__((noreturn)) void run_finish(enum run_status s);
__attribute__((noreturn)) void run_finish_crashed(void);

#endif
