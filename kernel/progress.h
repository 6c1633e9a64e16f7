/* Progress records: where a long run is, for the host tool's progress bar
   (docs/output.md, record "progress"). Serial only, like every record. */
#ifndef CLOCKBENCH_PROGRESS_H
#define CLOCKBENCH_PROGRESS_H

#include <stdint.h>

#define PROGRESS_UNKNOWN (-1)

/* One "progress" record: phase (an experiment's name, or "done"), percent
   of that phase (0-100), and its seconds left, or PROGRESS_UNKNOWN. */
void progress(const char *phase, unsigned percent, int64_t seconds_left);

#endif
