/* Keeping a run's log (issue 43): `--out DIR`, or, when clockbench-os runs
   from the bundle (`make bundle`; a BUNDLE file beside it), a new folder
   named by host and time. The whole output, report and @cb records, goes
   to DIR/os.log as well as to the terminal; a log is never overwritten. */
#ifndef CLOCKBENCH_OS_KEEP_H
#define CLOCKBENCH_OS_KEEP_H

#include <stdbool.h>
#include <stddef.h>

/* The bundle's version, from the BUNDLE file beside the program ("" when
   clockbench-os does not run from a bundle). */
const char *keep_bundle_version(void);

/* Starts keeping the log: makes the folder (out, or the default when
   default_folder), then splits this process in two. The parent copies
   everything the child writes (stdout and stderr) to the terminal and to
   DIR/os.log, and exits as the child did (status, or the same signal); the
   child returns and runs the measurements. On failure: one line on stderr
   and exit 73 (nothing measured). Returns the folder ("" when nothing is
   kept). */
const char *keep_start(const char *out, bool default_folder, const char *host);

#endif
