/* The last screen of a run: the machine's identity, the verdict table and
   the checks (the failed and skipped ones by name), on one screen
   (1024x768 or 80x25), with a QR code carrying the same results: drawn in
   pixels on a framebuffer, in half-block characters on a text screen. Then,
   where there is no isa-debug-exit to end the run (real hardware), its
   keys: R pages through the whole report again, B reboots. */
#ifndef CLOCKBENCH_SUMMARY_H
#define CLOCKBENCH_SUMMARY_H

#include "../lib/run_status.h"

void summary_screen(enum run_status status);
/* Returns at once when there is no summary screen or no keyboard
   controller; otherwise never. */
void summary_keys(void);

#endif
