/* Intel 8254 programmable interval timer, channel 2 (the one gated through
   port 0x61 and never wired to an interrupt): 1.193182 MHz, 16 bits. */
#ifndef CLOCKBENCH_PIT_H
#define CLOCKBENCH_PIT_H

#include <stdbool.h>
#include <stdint.h>

/* 14.31818 MHz / 12 = 1193181.667 Hz, in millihertz (the PC's PIT clock). */
#define PIT_MILLIHZ 1193181667ull

/* Starts channel 2 counting down from 65536 (mode 2, gate on, speaker off)
   and checks that it moves within a bounded time. */
bool pit_init(char *why, unsigned why_len);
/* The count as an up-counter modulo 2^16 (65536 minus the latched count). */
uint16_t pit_read(void);
/* Leaves channel 2 gated off, as the firmware had it. */
void pit_stop(void);

#endif
