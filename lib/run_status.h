/* How a run ends: its status, and the isa-debug-exit port that carries it
   out of QEMU (written as DEBUG_EXIT_BASE + status; QEMU exits with
   (value << 1) | 1, so 33, 35, 37 or 39). Shared by the image and
   clockbench-os; codes in docs/output.md. */
#ifndef CLOCKBENCH_RUN_STATUS_H
#define CLOCKBENCH_RUN_STATUS_H

#define DEBUG_EXIT_PORT 0xF4
#define DEBUG_EXIT_BASE 0x10

enum run_status {
    RUN_PASSED = 0,      /* every check passed (skips allowed) -> QEMU exit 33 */
    RUN_FAILED = 1,      /* at least one check failed          -> QEMU exit 35 */
    RUN_NOTHING_RAN = 2, /* no check could run                 -> QEMU exit 37 */
    RUN_CRASHED = 3,     /* an unexpected CPU exception        -> QEMU exit 39 */
};

#endif
