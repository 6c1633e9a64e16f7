/* 8254 PIT channel 2 (Intel 82C54 datasheet; the port 0x61 gate and speaker
   bits as on every PC since the AT). */
#include "pit.h"

#include "../lib/format.h"
#include "cpu.h"

#define PORT_B 0x61
#define   PORT_B_GATE2 (1u << 0)
#define   PORT_B_SPEAKER (1u << 1)

#define PIT_WAIT_SPINS 200000
#define PIT_WAIT_TSC (1ull << 28)

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
