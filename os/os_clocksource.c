/* See os_clocksource.h. */
#include "os_clocksource.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char cs_dir[256] = "/sys/devices/system/clocksource/clocksource0";
static char original[CS_NAME_MAX];
static volatile int switched; /* read by the signal handlers */

/* Only open, read and close, and no stdio: also called from the signal
   handlers (through os_cs_restore). */
static bool read_file(const char *name, char *buf, size_t size)
{
    char path[320];
    size_t d = strlen(cs_dir), m = strlen(name);
    if (d + m + 2 > sizeof path)
        return false;
    memcpy(path, cs_dir, d);
    path[d] = '/';
    memcpy(path + d + 1, name, m + 1);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == '\n') {
            buf[i] = 0;
            break;
        }
    return true;
}

/* Only open, write and close: safe in a signal handler. */
static bool write_current(const char *name)
{
    char path[320];
    size_t d = strlen(cs_dir), m = strlen("/current_clocksource");
    if (d + m + 1 > sizeof path)
        return false;
    memcpy(path, cs_dir, d);
    memcpy(path + d, "/current_clocksource", m + 1);
    int fd = open(path, O_WRONLY | O_TRUNC); /* as `echo NAME >` does: sysfs ignores the truncation */
    if (fd < 0)
        return false;
    ssize_t n = write(fd, name, strlen(name));
    close(fd);
    return n == (ssize_t)strlen(name);
}

bool os_cs_current(char out[CS_NAME_MAX]) { return read_file("current_clocksource", out, CS_NAME_MAX); }

void os_cs_probe(const char *dir, bool root, struct os_clocksources *cs)
{
    memset(cs, 0, sizeof *cs);
    if (dir)
        snprintf(cs_dir, sizeof cs_dir, "%s", dir);
    if (!os_cs_current(cs->original)) {
        snprintf(cs->original, sizeof cs->original, "unknown");
        cs->why_not = "the clocksource cannot be read from sysfs (is /sys mounted?)";
        return;
    }
    memcpy(original, cs->original, sizeof original);
    char list[CS_MAX * CS_NAME_MAX];
    if (read_file("available_clocksource", list, sizeof list))
        for (char *save = 0, *w = strtok_r(list, " ", &save); w && cs->count < CS_MAX; w = strtok_r(0, " ", &save))
            snprintf(cs->available[cs->count++], CS_NAME_MAX, "%s", w);
    char cur[320];
    snprintf(cur, sizeof cur, "%s/current_clocksource", cs_dir);
    if (!root && !dir)
        cs->why_not = "not root (switching the machine's clocksource needs root)";
    else if (access(cur, W_OK) != 0)
        cs->why_not = root ? "current_clocksource is not writable here" : "not root, and current_clocksource is not writable";
}

bool os_cs_select(const char *name, const char **why)
{
    switched = 1; /* before the write: a signal arriving during it still restores */
    if (!write_current(name)) {
        *why = errno == EPERM || errno == EACCES ? "permission denied" : "the kernel refused the write";
    } else {
        char now[CS_NAME_MAX];
        if (os_cs_current(now) && strcmp(now, name) == 0)
            return true;
        *why = "the kernel kept another clocksource (it may have marked this one unstable)";
    }
    return false;
}

/* Writing a name sets a sticky override: the kernel then keeps that one
   whatever registers later. An empty write clears the override and lets
   the kernel choose again; when that is the original, the machine is as it
   was. Otherwise (the original was itself an override) the name is written. */
void os_cs_restore(void)
{
    if (!switched)
        return;
    char now[CS_NAME_MAX];
    if (write_current("\n") && os_cs_current(now) && strcmp(now, original) == 0) {
        switched = 0;
        return;
    }
    if (write_current(original))
        switched = 0;
}

bool os_cs_switched(void) { return switched != 0; }
