/* Ending a run. The machine is identified first, from its firmware and
   CPUID, never by touching a port it may not have (finish.c, identify()).
   Under QEMU (identified, or vouched for by the command line's `debug_exit`)
   the status leaves through isa-debug-exit (I/O port 0xf4): we
   write DEBUG_EXIT_BASE + status and QEMU exits with (value << 1) | 1, so
   33, 35, 37 or 39: never 0 or 1, which QEMU itself uses for a normal end
   and for its own errors. On another VMM, identified or not (the CPUID hypervisor bit set),
   the image powers the machine off once everything is printed: ACPI S5
   (the FADT's PM1 control blocks, or the sleep control register of a
   hardware-reduced machine, with SLP_TYP from \_S5), then, on Firecracker
   only, the i8042 reset. On a PC, and on QEMU without isa-debug-exit, it
   does so only when the command line says `poweroff`; otherwise it halts
   with interrupts off and leaves the output in place; where the summary
   screen is up, it then waits for its keys (R the report again, B reboot;
   see summary.h). Each attempt prints a line and a power_off record first.
   Codes and records: docs/output.md. */
#ifndef CLOCKBENCH_FINISH_H
#define CLOCKBENCH_FINISH_H

#include "../lib/acpi.h"
#include "../lib/run_status.h"
#include "../lib/vmm_rates.h"

const char *run_status_name(enum run_status s);
__attribute__((noreturn)) void run_finish(enum run_status s);
__attribute__((noreturn)) void run_finish_crashed(void);
/* Where there is no isa-debug-exit (real hardware), run_finish() hands the
   halted machine to this function, if set: the summary screen's keys. Set
   by the layer above, so that ending a run needs nothing from it. */
void run_finish_set_idle(void (*idle)(void));
/* The ACPI tables as discovery read them: how to power off, and whether
   this is QEMU. Until set, a virtual machine is taken for QEMU. */
void run_finish_use(const struct acpi_info *acpi);
/* Why the PC's PIT (I/O 0x40-0x43, 0x61), or its VGA's ports (the CRT
   controller, 0x3D4/0x3D5), must not be touched, from the ACPI tables and
   the identification above; 0 where they may be: finish.c has the rules. */
const char *machine_pit_ruled_out(void);
/* The same for the legacy PIC (0x20/0x21, 0xA0/0xA1): masked before the
   APIC takes the interrupts, but only where it may be there. */
const char *machine_pic_ruled_out(void);
const char *machine_vga_ruled_out(void);
/* Which VMM this is, for its devices' rates (lib/vmm_rates.h): QEMU by its
   firmware or TCG's CPUID signature, with its accelerator from CPUID;
   Firecracker and Cloud Hypervisor by their ACPI tables; VMM_UNKNOWN for a
   PC and for any machine not identified. */
enum vmm_id machine_vmm(void);
/* Resets the machine: the keyboard controller, then the chipset's reset
   register (0xcf9), then a triple fault. */
__attribute__((noreturn)) void machine_reboot(void);

#endif
