/* Linux's clocksource, through sysfs: the current one, the ones available,
   and switching between them (root only). Whatever happens (an error, a
   signal, the run's timeout) the original is written back: os_cs_restore
   is async-signal-safe, and is called from the signal handlers and at exit. */
#ifndef CLOCKBENCH_OS_CLOCKSOURCE_H
#define CLOCKBENCH_OS_CLOCKSOURCE_H

#include <stdbool.h>

#define CS_NAME_MAX 64
#define CS_MAX 8

struct os_clocksources {
    char original[CS_NAME_MAX];
    char available[CS_MAX][CS_NAME_MAX];
    int count;
    const char *why_not; /* why they cannot be switched, or NULL */
};

/* dir: the sysfs folder (default /sys/devices/system/clocksource/clocksource0). */
void os_cs_probe(const char *dir, bool root, struct os_clocksources *cs);
/* The clocksource in use now, read back; false when unreadable. */
bool os_cs_current(char out[CS_NAME_MAX]);
/* Switches and reads back; false (with *why) when it did not take. */
bool os_cs_select(const char *name, const char **why);
/* Writes the original back when a switch was made. Async-signal-safe. */
void os_cs_restore(void);
/* Whether a switch is outstanding (os_cs_select made one, not yet restored). */
bool os_cs_switched(void);

#endif
