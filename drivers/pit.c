/* 8254 PIT channel 2 (Intel 82C54 datasheet; the port 0x61 gate and speaker
   bits as on every PC since the AT). */
#include "pit.h"

#include "../kernel/cpu.h"
#include "../kernel/format.h"

#define PIT_CH2_DATA 0x42
#define PIT_COMMAND 0x43
#define   PIT_SELECT_CH2 (2u << 6)
#define   PIT_ACCESS_LOHI (3u << 4)
#define   PIT_MODE_RATE (2u << 1)
#define   PIT_LATCH_CH2 (2u << 6) /* counter latch command: access bits 00 */
#define PORT_B 0x61
#define   PORT_B_GATE2 (1u << 0)
#define   PORT_B_SPEAKER (1u << 1)

#define PIT_WAIT_SPINS 200000
#define PIT_WAIT_TSC (1ull << 28)

uint16_t pit_read(void)
{
    outb(PIT_COMMAND, PIT_LATCH_CH2);
    uint8_t lo = inb(PIT_CH2_DATA);
    uint8_t hi = inb(PIT_CH2_DATA);
    return (uint16_t)(0u - (uint16_t)(lo | hi << 8));
}

bool pit_init(char *why, unsigned why_len)
{
    outb(PORT_B, (uint8_t)((inb(PORT_B) & ~PORT_B_SPEAKER) | PORT_B_GATE2));
    outb(PIT_COMMAND, PIT_SELECT_CH2 | PIT_ACCESS_LOHI | PIT_MODE_RATE);
    outb(PIT_CH2_DATA, 0); /* reload 0 means 65536: the count then wraps modulo 2^16 exactly */
    outb(PIT_CH2_DATA, 0);
    uint16_t first = pit_read();
    uint64_t t0 = rdtsc();
    for (int i = 0; i < PIT_WAIT_SPINS && rdtsc() - t0 < PIT_WAIT_TSC; i++)
        if (pit_read() != first)
            return true;
    fmt_format(why, why_len, "channel 2 did not count within 2^28 TSC ticks (gated off or absent on this platform)");
    pit_stop();
    return false;
}

void pit_stop(void) { outb(PORT_B, (uint8_t)(inb(PORT_B) & ~(PORT_B_GATE2 | PORT_B_SPEAKER))); }
