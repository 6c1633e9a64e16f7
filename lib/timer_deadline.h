/* When each timer fires, from its own semantics and tick: Intel SDM vol. 3A 11.5.4 (APIC timer, one-shot) and 11.5.4.1
   (TSC-deadline); IA-PC HPET 1.0a 2.3.9 (comparator match); Intel 8254 data sheet, mode 0. Pure. */
#ifndef CLOCKBENCH_TIMER_DEADLINE_H
#define CLOCKBENCH_TIMER_DEADLINE_H

#include <stdint.h>

#include "xf.h"

/* Lateness is measured from the first instant the hardware can fire, not
   from the time asked for: a count is whole ticks of the timer's own clock
   (and pushed late so that a rate error cannot fire it early), and where the
   timer counts from an edge of a clock that is not the TSC's, the phase of
   that edge is unknown. Each mode's instant is a window [earliest,
   earliest + width]: the timer fires inside it; width is the unknown part
   (the tick's phase plus the TSC bracket around the access that armed it),
   the figure's stated quantisation.

   TIMER_FIRE_TSC_DEADLINE  SDM 11.5.4.1: fires when the TSC reaches the
       value written to IA32_TSC_DEADLINE: earliest = that value, width 0.
   TIMER_FIRE_LAPIC_ONESHOT SDM 11.5.4: writing the initial count N starts
       the count-down at the APIC timer's clock (bus or crystal clock /
       divide); it fires when the count reaches 0: N decrements, the first
       at the next edge of the divided clock after the write, so between
       N-1 and N ticks after it. The SDM does not say whether the write's
       own edge counts; QEMU's apic fires N+1 ticks after the write (its
       8254-like reading), so the window holds both: earliest = t0 + (N-1)
       ticks, width = 2 ticks + (t1 - t0), t0, t1 the TSC read just before
       and after the write.
   TIMER_FIRE_HPET_MATCH    HPET 1.0a 2.3.9.2: the comparator fires at the
       tick at which the main counter reaches its value. Armed as the
       counter read plus N: the read value began at a tick boundary at most
       one tick before the read, so the match is N ticks after a boundary
       in (t0 - 1 tick, t1], t0, t1 the TSC around the counter's read:
       earliest = t0 + (N - 1) ticks, width = 1 tick + (t1 - t0).
   TIMER_FIRE_PIT_MODE0     8254 data sheet, mode 0: "the initial count will
       be loaded on the next CLK pulse. This CLK pulse does not decrement
       the count, so for an initial count of N, OUT does not go high until
       N + 1 CLK pulses after the initial count is written"; the counter
       works on CLK's falling edges. The first edge falls within one input
       clock (838 ns) of the write: OUT rises between N and N+1 input clocks
       after it: earliest = t0 + N clocks, width = 1 clock + (t1 - t0), t0,
       t1 around the write of the count's last byte. A count of 0 is 65536
       (binary counting). */
enum timer_fire_mode { TIMER_FIRE_TSC_DEADLINE, TIMER_FIRE_LAPIC_ONESHOT, TIMER_FIRE_HPET_MATCH, TIMER_FIRE_PIT_MODE0 };

struct timer_fire {
    uint64_t earliest;  /* TSC */
    uint64_t width;     /* TSC ticks after earliest within which it fires */
};

/* TSC ticks per tick of the clock a timer counts, from its ticks per TSC
   tick measured at divide 1 and the divide in force (1 for all but the
   APIC timer). */
struct xf timer_tsc_per_tick(struct xf per_tsc, uint32_t divide);
/* The window a timer armed with count (the TSC-deadline: the target TSC
   itself, t0 and t1 unused) fires in. tsc_per_tick as above; a tick of
   more than 2^32 TSC ticks is not a timer this handles. */
struct timer_fire timer_fire_of(enum timer_fire_mode mode, uint64_t t0, uint64_t t1, uint64_t count, struct xf tsc_per_tick);
/* How far the instant may be off because the rate behind tsc_per_tick is
   uncertain: sigmas x rel_u x count x tick, in TSC ticks, rounded up. */
uint64_t timer_fire_rate_u(uint64_t count, struct xf tsc_per_tick, struct xf rel_u, unsigned sigmas);

#endif
