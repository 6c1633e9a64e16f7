/* See os_keep.h. The split is fork(): the measuring process is the child,
   so it has no extra child of its own to reap (its probes' waits stay as
   they were), and the parent, which the caller started, is the one a
   shell, `timeout` or Ansible waits for: it outlives the child's last
   line and ends as the child ended. */
#define _GNU_SOURCE
#include "os_keep.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KEEP_LOG "os.log"
#define KEEP_REFUSED 73 /* EX_CANTCREAT */

static char folder[PATH_MAX];
static char bundle_version[64];
static bool bundle_read;
static volatile pid_t child;

/* The folder clockbench-os runs from ("" when /proc/self/exe is unreadable). */
static void exe_folder(char *out, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    out[0] = 0;
    if (n <= 0)
        return;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) {
        *slash = 0;
        snprintf(out, size, "%s", exe);
    }
}

const char *keep_bundle_version(void)
{
    if (bundle_read)
        return bundle_version;
    bundle_read = true;
    char dir[PATH_MAX], path[PATH_MAX + 16];
    exe_folder(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/BUNDLE", dir);
    FILE *f = dir[0] ? fopen(path, "r") : 0;
    if (!f)
        return bundle_version;
    /* its first line: "clockbench-os VERSION x86_64-linux" */
    char line[160] = "";
    if (fgets(line, sizeof line, f) && !strncmp(line, "clockbench-os ", 14)) {
        size_t len = strcspn(line + 14, " \n");
        snprintf(bundle_version, sizeof bundle_version, "%.*s", (int)(len < 63 ? len : 63), line + 14);
    }
    if (!bundle_version[0])
        snprintf(bundle_version, sizeof bundle_version, "unknown");
    fclose(f);
    return bundle_version;
}

static bool writable_dir(const char *d)
{
    struct stat st;
    return d && *d && stat(d, &st) == 0 && S_ISDIR(st.st_mode) && access(d, W_OK | X_OK) == 0;
}

/* mkdir -p, each part made 0755 */
static bool make_dirs(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return false;
            *p = '/';
        }
    return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

static void refuse(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "clockbench-os: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    exit(KEEP_REFUSED);
}

/* A host name fit for a folder's name: letters, digits, '.', '-', '_'. */
static void tidy(char *out, size_t size, const char *s)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < size; i++) {
        char c = s[i];
        out[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ? c : '_';
    }
    out[i] = 0;
    if (!i)
        snprintf(out, size, "host");
}

/* The default: clockbench-os-HOST-YYYYmmddTHHMMSSZ in the first writable
   of the current folder, $HOME, $TMPDIR and /tmp; "-2", "-3"... when a run
   of the same second is there. */
static void default_folder_of(const char *host, char *out, size_t size)
{
    const char *places[] = {".", getenv("HOME"), getenv("TMPDIR"), "/tmp"};
    const char *base = 0;
    for (size_t i = 0; i < sizeof places / sizeof *places && !base; i++)
        if (writable_dir(places[i]))
            base = places[i];
    if (!base)
        refuse("no folder to keep the log in (the current folder, $HOME, $TMPDIR and /tmp are not writable%s%s): give --out DIR", "", "");
    char name[80], stamp[32];
    time_t now = time(0);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    tidy(name, sizeof name, host);
    for (int n = 1; n < 100; n++) {
        if (n == 1)
            snprintf(out, size, "%s/clockbench-os-%s-%s", base, name, stamp);
        else
            snprintf(out, size, "%s/clockbench-os-%s-%s-%d", base, name, stamp, n);
        if (mkdir(out, 0755) == 0)
            return;
        if (errno != EEXIST)
            refuse("cannot make the folder %s: %s", out, strerror(errno));
    }
    refuse("%s: 99 folders of that name and second already%s", out, "");
}

static void forward(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    /* a terminal's ^C reaches the child itself (same process group): only
       a signal sent to this process alone (kill, timeout) is passed on */
    if (child > 0 && si && (si->si_code == SI_USER || si->si_code == SI_QUEUE))
        kill(child, sig);
}

static void write_all(int fd, const char *p, size_t n, bool *ok)
{
    while (*ok && n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            *ok = false; /* a closed terminal (`| head`): the log goes on */
            return;
        }
        p += w, n -= (size_t)w;
    }
}

const char *keep_start(const char *out, bool default_folder, const char *host)
{
    if (!out && !default_folder)
        return "";
    if (out) {
        if (!make_dirs(out))
            refuse("--out %s: cannot make that folder: %s", out, strerror(errno));
        if (!realpath(out, folder))
            snprintf(folder, sizeof folder, "%s", out);
    } else {
        char made[PATH_MAX];
        default_folder_of(host, made, sizeof made);
        if (!realpath(made, folder))
            snprintf(folder, sizeof folder, "%s", made);
    }
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/%s", folder, KEEP_LOG);
    int fd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        refuse(errno == EEXIST ? "%s: a run's log is already there (a run is never overwritten: give another --out folder)%s"
                               : "cannot write %s: %s",
               log, errno == EEXIST ? "" : strerror(errno));
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        refuse("cannot keep the log: pipe: %s%s", strerror(errno), "");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        refuse("cannot keep the log: fork: %s%s", strerror(errno), "");
    if (pid == 0) { /* the measuring side */
        close(fd);
        close(p[0]);
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[1]);
        return folder;
    }
    child = pid;
    close(p[1]);
    struct sigaction sa = {.sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigaction(sigs[i], &sa, 0);
    signal(SIGPIPE, SIG_IGN);
    bool term_ok = true, log_ok = true;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(p[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        write_all(fd, buf, (size_t)n, &log_ok);
        write_all(1, buf, (size_t)n, &term_ok);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!log_ok)
        fprintf(stderr, "clockbench-os: the log %s could not be written whole\n", log);
    if (fsync(fd) != 0 || close(fd) != 0)
        fprintf(stderr, "clockbench-os: the log %s could not be written whole\n", log);
    char end[PATH_MAX + 80];
    int len = snprintf(end, sizeof end, "clockbench-os: this run's log is kept in %s\n", log);
    if (term_ok)
        write_all(1, end, (size_t)len, &term_ok);
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
        _exit(128 + WTERMSIG(status));
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
