/* Ending a run (see finish.h). */
#include "finish.h"

#include "../drivers/cpu.h"
#include "../drivers/keyboard.h"
#include "console.h"

#define PCI_RESET_CONTROL 0xCF9 /* Intel chipsets' Reset Control Register */
#define   RESET_SYS  (1u << 1)  /* system reset, not only the CPU */
#define   RESET_CPU  (1u << 2)  /* the 0-to-1 edge starts the reset */
#define   RESET_FULL (1u << 3)  /* power-cycle style (full) reset */

static void (*finish_idle)(void);

void run_finish_set_idle(void (*idle)(void)) { finish_idle = idle; }

const char *run_status_name(enum run_status s)
{
    switch (s) {
    case RUN_PASSED: return "passed";
    case RUN_FAILED: return "failed";
    case RUN_NOTHING_RAN: return "nothing ran";
    case RUN_CRASHED: return "crashed";
    }
    return "unknown";
}

static void spin(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        (void)inb(0x80); /* the POST port: about a microsecond a read */
}

/* The ways Linux tries in turn (arch/x86/kernel/reboot.c): the keyboard
   controller's reset line, the chipset's reset register, and a triple
   fault, which every x86 turns into a reset. */
void machine_reboot(void)
{
    interrupts_off();
    keyboard_pulse_reset();
    spin(50000);
    uint8_t cf9 = inb(PCI_RESET_CONTROL) & (uint8_t)~(RESET_SYS | RESET_CPU | RESET_FULL);
    outb(PCI_RESET_CONTROL, cf9 | RESET_SYS);
    spin(50);
    outb(PCI_RESET_CONTROL, cf9 | RESET_SYS | RESET_CPU | RESET_FULL);
    spin(50000);
    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } no_idt = {0, 0};
    __asm__ volatile("lidt %0; int3" ::"m"(no_idt));
    for (;;)
        cpu_halt();
}

void run_finish(enum run_status s)
{
    interrupts_off();
    kprintf("clockbench: run ended: %s (status %d). Halted; it is safe to power off.\n", run_status_name(s), (int)s);
    console_flush();
    outb(DEBUG_EXIT_PORT, (uint8_t)(DEBUG_EXIT_BASE + s));
    /* Still here: no isa-debug-exit, so real hardware (or QEMU without it).
       The final screen's keys, if there is a screen and a keyboard. */
    if (finish_idle)
        finish_idle();
    for (;;)
        cpu_halt();
}

void run_finish_crashed(void) { run_finish(RUN_CRASHED); }
