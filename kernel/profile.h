/* Run profiles: how long each experiment measures and how many samples it
   may keep. Chosen with profile= or duration= on the command line. */
#ifndef CLOCKBENCH_PROFILE_H
#define CLOCKBENCH_PROFILE_H

#include <stdint.h>

struct profile {
    const char *name;
    uint32_t drift_ms;      /* the frequency/drift window */
    uint32_t hwlat_ms;      /* the stolen-time scan */
    uint32_t latency_fast;  /* reads costed, per TSC variant (at most) */
    uint32_t latency_slow;  /* reads costed, per slower counter (at most) */
    uint32_t sequence_fast; /* back-to-back reads for the sequential table (at most) */
    uint32_t sequence_slow;
    uint32_t latency_ms;    /* time budget per target for the costed reads */
    uint32_t sequence_ms;   /* and for the back-to-back reads */
    uint32_t slots_per_s;   /* frequency samples kept per second per counter */
    uint32_t timer_events;  /* timer interrupts per timer, wait mode and delay (at most) */
    uint32_t timer_cell_ms; /* and the time budget for each such cell */
};

/* The most frequency samples kept per counter (the fit's exact sums hold 2^14). */
#define PROFILE_MAX_SLOTS 16384

/* The profile the command line asks for; note gets a message when a value
   was not usable (empty otherwise). */
const struct profile *profile_select(char *note, unsigned note_len);

#endif
