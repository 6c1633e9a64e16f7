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

static bool read_file(const char *name, char *buf, size_t size)
{
    char path[320];
    snprintf(path, sizeof path, "%s/%s", cs_dir, name);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    buf[strcspn(buf, "\n")] = 0;
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
    if (!root)
        cs->why_not = "not root: only the current clocksource is measured (run as root to switch between them)";
    else if (access(cs_dir, W_OK) != 0)
        cs->why_not = "current_clocksource is not writable here";
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

void os_cs_restore(void)
{
    if (!switched)
        return;
    if (write_current(original))
        switched = 0;
}

bool os_cs_switched(void) { return switched != 0; }
