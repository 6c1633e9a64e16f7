/* Intel 8254 programmable interval timer, channel 2 (the one gated through
   port 0x61 and never wired to an interrupt): 1.193182 MHz, 16 bits. */
#ifndef CLOCKBENCH_PIT_H
#define CLOCKBENCH_PIT_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu.h"

#define PIT_CH2_DATA 0x42
#define PIT_COMMAND 0x43
#define   PIT_SELECT_CH2 (2u << 6)
#define   PIT_ACCESS_LOHI (3u << 4)
#define   PIT_MODE_RATE (2u << 1)
#define   PIT_LATCH_CH2 (2u << 6) /* counter latch command: access bits 00 */

/* 14.31818 MHz / 12 = 1193181.667 Hz, in millihertz (the PC's PIT clock). */
#define PIT_MILLIHZ 1193181667ull

/* Starts channel 2 counting down from 65536 (mode 2, gate on, speaker off)
   and checks that it moves within a bounded time. */
bool pit_init(char *why, unsigned why_len);
/* The count as an up-counter modulo 2^16 (65536 minus the latched count).
   Inline: it is the read the experiments time. */
static inline uint16_t pit_read(void)
{
    outb(PIT_COMMAND, PIT_LATCH_CH2);
    uint8_t lo = inb(PIT_CH2_DATA);
    uint8_t hi = inb(PIT_CH2_DATA);
    return (uint16_t)(0u - (uint16_t)(lo | hi << 8));
}
/* Leaves channel 2 gated off, as the firmware had it. */
void pit_stop(void);

#endif
