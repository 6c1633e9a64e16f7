/* See os_hostlibc.h. */
#define _GNU_SOURCE
#include "os_hostlibc.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "os_probe_run.h"

struct hostlibc_info hostlibc;

/* The loader an ELF program names (PT_INTERP), "" when it names none or
   is no ELF (a script). */
static void elf_interp(const char *path, char *out, size_t size)
{
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf64_Ehdr eh;
    if (fd < 0)
        return;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
        eh.e_phentsize == sizeof(Elf64_Phdr))
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
                break;
            if (ph.p_type != PT_INTERP)
                continue;
            size_t n = ph.p_filesz < size ? (size_t)ph.p_filesz : size - 1;
            if (pread(fd, out, n, (off_t)ph.p_offset) != (ssize_t)n)
                n = 0;
            out[n] = 0;
            break;
        }
    close(fd);
}

/* musl's loader prints "Version 1.2.3" among its usage lines when run alone. */
static void musl_version(void)
{
    const char *argv[] = {hostlibc.loader, 0};
    struct probe_talk t;
    struct probe_outcome o;
    char why[200], line[200];
    bool timed_out = false;
    if (!probe_talk_start(argv, PROBE_CPUS_OURS, 5, &t, why, sizeof why))
        return;
    while (probe_talk_line(&t, line, sizeof line, &timed_out))
        ;
    probe_talk_end(&t, &o, timed_out);
    const char *v = o.err ? strstr(o.err, "Version ") : 0;
    if (v)
        snprintf(hostlibc.version, sizeof hostlibc.version, "%.*s", (int)strcspn(v + 8, " \n"), v + 8);
    probe_outcome_free(&o);
}

void hostlibc_setup(void)
{
    hostlibc = (struct hostlibc_info){0};
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = 0, strrchr(exe, '/')) : 0;
    if (!slash) {
        snprintf(hostlibc.why, sizeof hostlibc.why, "clockbench-os cannot tell its own folder (/proc/self/exe), where its helper is");
        hostlibc.failed = true;
        return;
    }
    *slash = 0;
    snprintf(hostlibc.path, sizeof hostlibc.path, "%s/%s", exe, HOSTLIBC_NAME);
    struct stat st;
    if (stat(hostlibc.path, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(hostlibc.why, sizeof hostlibc.why, "no helper %s (make os builds it beside clockbench-os)", hostlibc.path);
        hostlibc.failed = true;
        return;
    }
    hostlibc.found = true;
    char interp[200];
    elf_interp(hostlibc.path, interp, sizeof interp);
    if (!interp[0] || access(interp, X_OK) == 0)
        return;
    /* no glibc loader: a musl host (Alpine) has its own, which loads a
       glibc program's libc.so.6 as itself (musl's ldso reserves the name) */
    if (access(HOSTLIBC_MUSL_LOADER, X_OK) == 0) {
        snprintf(hostlibc.loader, sizeof hostlibc.loader, "%s", HOSTLIBC_MUSL_LOADER);
        return;
    }
    snprintf(hostlibc.why, sizeof hostlibc.why, "no glibc here: the helper's loader %s is missing, and no musl loader (%s) either",
             interp, HOSTLIBC_MUSL_LOADER);
    hostlibc.failed = true;
}

/* "libc name=glibc version=2.36 file=/path" */
static bool parse_libc(const char *line)
{
    const char *n = strstr(line, " name="), *v = strstr(line, " version="), *f = strstr(line, " file=");
    if (strncmp(line, "libc ", 5) || !n || !v || !f || n > v || v > f)
        return false;
    snprintf(hostlibc.name, sizeof hostlibc.name, "%.*s", (int)(v - n - 6), n + 6);
    if (strncmp(v + 9, "unknown ", 8) || !hostlibc.version[0])
        snprintf(hostlibc.version, sizeof hostlibc.version, "%.*s", (int)(f - v - 9), v + 9);
    snprintf(hostlibc.file, sizeof hostlibc.file, "%s", f + 6);
    return hostlibc.name[0] && hostlibc.file[0];
}

static bool fail(const char *fmt, const char *a, const char *b)
{
    char msg[260];
    snprintf(msg, sizeof msg, fmt, a, b);
    snprintf(hostlibc.why, sizeof hostlibc.why, "the helper %s: %s", hostlibc.path, msg);
    hostlibc.failed = true;
    return false;
}

bool hostlibc_measure(const enum os_call *calls, int n, unsigned reads, uint64_t budget_ticks, unsigned timeout_s,
                      struct hostlibc_cost out[CALL_COUNT])
{
    if (hostlibc.failed || !hostlibc.found || n <= 0)
        return false;
    if (hostlibc.loader[0] && !hostlibc.version[0])
        musl_version();
    const char *argv[CALL_COUNT + 6];
    char reads_s[24], budget_s[24];
    snprintf(reads_s, sizeof reads_s, "%u", reads);
    snprintf(budget_s, sizeof budget_s, "%llu", (unsigned long long)(budget_ticks ? budget_ticks : 1));
    int a = 0;
    if (hostlibc.loader[0])
        argv[a++] = hostlibc.loader;
    argv[a++] = hostlibc.path;
    argv[a++] = reads_s;
    argv[a++] = budget_s;
    for (int i = 0; i < n && i < CALL_COUNT; i++)
        argv[a++] = os_calls[calls[i]].name;
    argv[a] = 0;
    struct probe_talk t;
    char why[200], line[512];
    if (!probe_talk_start(argv, PROBE_CPUS_OURS, timeout_s, &t, why, sizeof why))
        return fail("could not be started: %s%s", why, "");
    bool timed_out = false, libc_said = false, ended = false, bad = false;
    const char *bad_why = "";
    static char bad_line[120];
    int got = 0;
    for (const char *l; !bad && (l = probe_talk_line(&t, line, sizeof line, &timed_out));) {
        if (!libc_said) {
            libc_said = parse_libc(l);
            bad = !libc_said, bad_why = "its first line is not 'libc name=... version=... file=...'";
        } else if (!strcmp(l, "end"))
            ended = true;
        else if (got < n) {
            enum os_call k = calls[got];
            struct hostlibc_cost *c = &out[k];
            const char *w;
            *c = (struct hostlibc_cost){0};
            if (!lang_parse_cost(l, os_calls[k].name, &c->cost, &w) || !c->cost.tsc) {
                bad = true, bad_why = c->cost.tsc ? w : "a cost line not of method=tsc";
                break;
            }
            const char *sd = strstr(l, " stddev=");
            c->stddev_ticks = sd ? strtod(sd + 8, 0) : -1;
            c->measured = true;
            got++;
        } else
            bad = true, bad_why = "more lines than calls asked for";
        if (bad)
            snprintf(bad_line, sizeof bad_line, "%.100s", l);
    }
    struct probe_outcome o;
    probe_talk_end(&t, &o, timed_out || bad);
    bool ok = !bad && o.ok && ended && got == n;
    if (!ok) {
        for (int i = 0; i < n; i++)
            out[calls[i]].measured = false;
        if (bad)
            fail("%s: '%s'", bad_why, bad_line);
        else if (!o.ok)
            fail("%s%s", o.why, hostlibc.loader[0] ? " (run by musl's loader)" : "");
        else
            fail("%s%s", got < n ? "answered fewer calls than asked for" : "ended without its last line 'end'", "");
    }
    probe_outcome_free(&o);
    hostlibc.measured |= ok;
    return ok;
}
