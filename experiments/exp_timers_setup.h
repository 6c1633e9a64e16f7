/* Experiment "timers", private: setting up each timer and its interrupt route (exp_timers_setup.c), for its measurement (exp_timers.c). */
#ifndef CLOCKBENCH_EXP_TIMERS_SETUP_H
#define CLOCKBENCH_EXP_TIMERS_SETUP_H

#include <stdbool.h>
#include <stdint.h>

#include "../drivers/cpuinfo.h"
#include "../kernel/reads.h"
#include "../lib/xf.h"

#define TIMERS_RATE_WINDOW_MS 40    /* the PIT wraps in 55 ms */

/* PIT channel 0 (8254), the one on IRQ 0 (drivers/pit.h has channel 2) */
#define PIT_CH0_DATA 0x40
#define   PIT_SELECT_CH0 (0u << 6)
#define   PIT_MODE_TERMINAL (0u << 1) /* mode 0: OUT rises when the count reaches 0 */

/* Finds and programs every timer for the boot CPU, measures the rates of
   those that count against the TSC (and the best reference's), and lists
   the ways of waiting: fills timers_state (exp_timers.h) but the cells. */
void timers_setup(const struct cpu_info *ci);
#define TIMERS_RATE_TRIES 3         /* windows tried when one is disturbed */

struct timers_window;
/* Ticks of the counter per TSC tick over about TIMERS_RATE_WINDOW_MS, with
   its relative uncertainty. A window in which the TSC stepped by over 1 ms
   between two reads, or over which the counter's step is not what the TSC
   time allows (lib/unwrap.h), is noted in *w and measured again, up to
   TIMERS_RATE_TRIES windows. */
bool timers_rate_against_tsc(int counter, struct xf *ratio, struct xf *u, struct timers_window *w);
/* Stops timer id from firing (the PIT: until a count is written). */
void timers_disarm(int id);
/* Whether the HPET and the PIT share one I/O APIC pin (the pc machine). */
bool timers_pin_shared(void);
/* A shared pin goes to the vector of whichever of the HPET and the PIT a
   cell on timer id with watchdog wd uses. */
void timers_route_shared_pin(int id, int wd);
/* Sends the HPET's and the PIT's interrupts to APIC ID dest. */
void timers_route_to(uint32_t dest);
/* Disarms every timer and leaves the HPET, the PIT's pin and the APIC timer
   as they were found (interrupts off). */
void timers_stop(void);

#endif
