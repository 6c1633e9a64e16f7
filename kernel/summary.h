/* The last screen of a run: the machine's identity, the verdict table and
   the checks, on one screen (1024x768 or 80x25), with a QR code carrying
   the same results when the screen is a framebuffer. */
#ifndef CLOCKBENCH_SUMMARY_H
#define CLOCKBENCH_SUMMARY_H

#include "finish.h"

void summary_screen(enum run_status status);

#endif
