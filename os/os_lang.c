/* See os_lang.h. The probes' command lines and output: the contract in
   docs/output.md ("Language probes"). ptrace(2): PTRACE_O_TRACECLONE and
   PTRACE_GET_SYSCALL_INFO (Linux 5.3). */
#define _GNU_SOURCE
#include "os_lang.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/record.h"
#include "os_clocksource.h"

struct lang_options lang_opt = {.calls = 20000, .timeout_s = 30};

#define PATH_CALLS 1000
#define STAMP_ROUNDS 12
#define CROSS_PAIRS_MAX 4
#define THREAD_COUNTS 3
#define OUT_MAX (1 << 20)

static char lang_dir[512];
static const char *unavailable[LANG_COUNT]; /* why a language cannot be run, or NULL */
static char unavailable_text[LANG_COUNT][200];
static char runner_path[LANG_COUNT][512];
static struct lang_info infos[LANG_COUNT];
static bool info_done[LANG_COUNT];

/* what went wrong, over the whole run */
static unsigned n_failed, n_missing, n_changed;
static char failed_what[512], missing_what[256], changed_what[256];

static void note(char *buf, size_t size, const char *text)
{
    size_t at = strlen(buf);
    if (at + 1 < size)
        snprintf(buf + at, size - at, "%s%s", at ? "; " : "", text);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void emit(struct record *r) { fputs(record_end(r), stdout); }

static void rec_f(struct record *r, const char *key, double v, bool known)
{
    if (!known || v != v || fabs(v) > 9e15)
        record_null(r, key);
    else
        record_fixed(r, key, llround(v * 1000), 3);
}

/* ---- where the probes and runtimes are ---- */
static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The program name in PATH (as init there may be no PATH: the usual folders). */
static bool find_in_path(const char *name, char *out, size_t size)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(out, size, "%.*s/%s", (int)len, p, name);
        if (len && access(out, X_OK) == 0 && is_file(out))
            return true;
        p += len + (p[len] == ':');
    }
    return false;
}

/* LANG_DIR: --lang-dir, else the folder "lang" beside clockbench-os, else
   beside its folder (build/os/clockbench-os and build/lang), else ./build/lang. */
static void find_lang_dir(void)
{
    if (lang_opt.dir) {
        snprintf(lang_dir, sizeof lang_dir, "%s", lang_opt.dir);
        return;
    }
    char exe[400];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(lang_dir, sizeof lang_dir, "%s/lang", exe[0] ? exe : "");
            if (is_dir(lang_dir))
                return;
            char *up = strrchr(exe, '/');
            if (up) {
                *up = 0;
                snprintf(lang_dir, sizeof lang_dir, "%s/lang", exe[0] ? exe : "");
                if (is_dir(lang_dir))
                    return;
            }
        }
    }
    snprintf(lang_dir, sizeof lang_dir, "build/lang");
}

static void probe_path(int l, char *out, size_t size) { snprintf(out, size, "%s/%s", lang_dir, lang_defs[l].probe); }

void lang_setup(void)
{
    if (lang_opt.off)
        return;
    find_lang_dir();
    printf("\n== Languages: probes from %s ==\n", lang_dir);
    for (int l = 0; l < LANG_COUNT; l++) {
        if (lang_opt.picked && !lang_opt.pick[l])
            continue;
        const struct lang_def *d = &lang_defs[l];
        char probe[600];
        probe_path(l, probe, sizeof probe);
        if (!strcmp(d->key, "java"))
            snprintf(probe + strlen(probe), sizeof probe - strlen(probe), "/Probe.class");
        if (d->runner && !find_in_path(d->runner, runner_path[l], sizeof runner_path[l]))
            snprintf(unavailable_text[l], sizeof unavailable_text[l], "%s", d->missing);
        else if (!is_file(probe))
            snprintf(unavailable_text[l], sizeof unavailable_text[l], "no probe %s (run 'make lang'%s%s)", probe, d->runner ? "" : "; ",
                     d->runner ? "" : d->missing);
        if (unavailable_text[l][0]) {
            unavailable[l] = unavailable_text[l];
            printf("  %s: not measured: %s\n", d->title, unavailable[l]);
            n_missing++;
            note(missing_what, sizeof missing_what, d->key);
        }
    }
}

/* ---- running a probe ---- */
enum cpus { CPUS_OURS, CPUS_ALL };

struct outcome {
    bool ok;           /* exited 0 */
    bool timed_out;
    int status;
    char *out, *err;   /* what it wrote (NUL-terminated, malloc'd) */
    char why[200];     /* one line when not ok */
};

static void outcome_free(struct outcome *o)
{
    free(o->out), free(o->err);
    o->out = o->err = 0;
}

static int build_argv(int l, const char *const *cmd, int n_cmd, const char **argv, char *buf, size_t size)
{
    const struct lang_def *d = &lang_defs[l];
    int k = 0;
    if (!strcmp(d->key, "java")) {
        argv[k++] = runner_path[l];
        argv[k++] = "-cp";
        snprintf(buf, size, "%s/java", lang_dir);
        argv[k++] = buf;
        argv[k++] = "Probe";
    } else {
        probe_path(l, buf, size);
        if (d->runner)
            argv[k++] = runner_path[l];
        argv[k++] = buf;
    }
    for (int i = 0; i < n_cmd; i++)
        argv[k++] = cmd[i];
    argv[k] = 0;
    return k;
}

static char *slurp(int fd)
{
    char *b = malloc(OUT_MAX + 1);
    size_t n = 0;
    if (!b)
        return 0;
    lseek(fd, 0, SEEK_SET);
    for (ssize_t r; n < OUT_MAX && (r = read(fd, b + n, OUT_MAX - n)) != 0;) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        n += (size_t)r;
    }
    b[n] = 0;
    return b;
}

/* In the forked child, before exec: its own process group (so that a
   timeout kills what it started too), the CPUs asked for, the default
   scheduling (threads on every CPU at --rt's priority would starve the
   machine), the files given. */
static void child_setup(enum cpus cpus, int in, int out, int err)
{
    setpgid(0, 0);
    if (cpus == CPUS_ALL) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int i = 0; i < CPU_SETSIZE; i++)
            CPU_SET(i, &set);
        sched_setaffinity(0, sizeof set, &set);
        struct sched_param sp = {0};
        sched_setscheduler(0, SCHED_OTHER, &sp);
    }
    dup2(in, 0), dup2(out, 1), dup2(err, 2);
    signal(SIGPIPE, SIG_DFL);
}

static void describe_end(struct outcome *o, const char *err_text, unsigned timeout_s)
{
    o->ok = !o->timed_out && WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0;
    if (o->ok)
        return;
    char last[120] = "";
    if (err_text && *err_text) {
        /* the last non-empty line of its stderr says most */
        const char *e = err_text + strlen(err_text);
        while (e > err_text && (e[-1] == '\n' || e[-1] == '\r'))
            e--;
        const char *s = e;
        while (s > err_text && s[-1] != '\n')
            s--;
        snprintf(last, sizeof last, ": %.*s", (int)(e - s > 100 ? 100 : e - s), s);
    }
    if (o->timed_out)
        snprintf(o->why, sizeof o->why, "hung: killed after %u s", timeout_s);
    else if (WIFSIGNALED(o->status))
        snprintf(o->why, sizeof o->why, "crashed (signal %d, %s)%s", WTERMSIG(o->status), strsignal(WTERMSIG(o->status)), last);
    else if (WIFEXITED(o->status) && WEXITSTATUS(o->status) == 127)
        snprintf(o->why, sizeof o->why, "could not be started%s", last);
    else
        snprintf(o->why, sizeof o->why, "exited with status %d%s", WEXITSTATUS(o->status), last);
}

/* Runs argv to its end, its output in memory files (no pipe to fill while
   we wait); killed, with its process group, after timeout_s. */
static void run_batch(const char **argv, enum cpus cpus, unsigned timeout_s, struct outcome *o)
{
    *o = (struct outcome){0};
    int out = memfd_create("probe-out", 0), err = memfd_create("probe-err", 0), in = open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) {
        snprintf(o->why, sizeof o->why, "no memory file for its output: %s", strerror(errno));
        goto done;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(o->why, sizeof o->why, "fork failed: %s", strerror(errno));
        goto done;
    }
    if (pid == 0) {
        child_setup(cpus, in, out, err);
        execv(argv[0], (char *const *)argv);
        dprintf(2, "%s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    uint64_t deadline = now_ns() + (uint64_t)timeout_s * 1000000000u;
    for (;;) {
        pid_t w = waitpid(pid, &o->status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            break;
        if (now_ns() > deadline) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &o->status, 0);
            o->timed_out = true;
            break;
        }
        nanosleep(&(struct timespec){0, 2000000}, 0);
    }
    kill(-pid, SIGKILL); /* anything it left behind */
    o->out = slurp(out);
    o->err = slurp(err);
    describe_end(o, o->err, timeout_s);
done:
    if (out >= 0)
        close(out);
    if (err >= 0)
        close(err);
    if (in >= 0)
        close(in);
}

/* ---- a probe we talk to (stamp, cross) ---- */
struct talk {
    pid_t pid;
    int to, from, err;
    char buf[4096];
    size_t have;
    uint64_t deadline;
    unsigned timeout_s;
};

static bool talk_start(const char **argv, enum cpus cpus, unsigned timeout_s, struct talk *t, char *why, size_t why_size)
{
    int in[2], out[2];
    *t = (struct talk){.pid = -1, .to = -1, .from = -1, .err = -1, .timeout_s = timeout_s};
    t->err = memfd_create("probe-err", 0);
    if (t->err < 0 || pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
        snprintf(why, why_size, "no pipe: %s", strerror(errno));
        return false;
    }
    fflush(stdout);
    t->pid = fork();
    if (t->pid == 0) {
        child_setup(cpus, in[0], out[1], t->err);
        execv(argv[0], (char *const *)argv);
        dprintf(2, "%s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(in[0]), close(out[1]);
    t->to = in[1], t->from = out[0];
    if (t->pid < 0) {
        snprintf(why, why_size, "fork failed: %s", strerror(errno));
        return false;
    }
    t->deadline = now_ns() + (uint64_t)timeout_s * 1000000000u;
    return true;
}

static bool talk_send(struct talk *t, const char *text)
{
    size_t n = strlen(text);
    return write(t->to, text, n) == (ssize_t)n;
}

/* One line (without its newline) before the deadline; 0 at EOF or timeout. */
static const char *talk_line(struct talk *t, char *line, size_t size, bool *timed_out)
{
    for (;;) {
        char *nl = memchr(t->buf, '\n', t->have);
        if (nl) {
            size_t len = (size_t)(nl - t->buf);
            snprintf(line, size, "%.*s", (int)(len < size ? len : size - 1), t->buf);
            memmove(t->buf, nl + 1, t->have - len - 1);
            t->have -= len + 1;
            return line;
        }
        if (t->have == sizeof t->buf)
            t->have = 0; /* a line longer than any the contract has: garbage */
        uint64_t now = now_ns();
        if (now >= t->deadline) {
            *timed_out = true;
            return 0;
        }
        struct pollfd p = {.fd = t->from, .events = POLLIN};
        int r = poll(&p, 1, (int)((t->deadline - now) / 1000000 + 1));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        ssize_t got = read(t->from, t->buf + t->have, sizeof t->buf - t->have);
        if (got <= 0)
            return 0;
        t->have += (size_t)got;
    }
}

/* Closes its stdin, waits for its end (bounded), kills it if need be. */
static void talk_end(struct talk *t, struct outcome *o, bool timed_out)
{
    *o = (struct outcome){.timed_out = timed_out};
    if (t->to >= 0)
        close(t->to);
    if (t->pid > 0) {
        uint64_t deadline = now_ns() + 3000000000u;
        for (;;) {
            pid_t w = waitpid(t->pid, &o->status, WNOHANG);
            if (w == t->pid || (w < 0 && errno != EINTR))
                break;
            if (timed_out || now_ns() > deadline) {
                o->timed_out = true;
                kill(-t->pid, SIGKILL);
                kill(t->pid, SIGKILL);
                waitpid(t->pid, &o->status, 0);
                break;
            }
            nanosleep(&(struct timespec){0, 2000000}, 0);
        }
        kill(-t->pid, SIGKILL);
    }
    if (t->from >= 0)
        close(t->from);
    if (t->err >= 0) {
        o->err = slurp(t->err);
        close(t->err);
    }
    describe_end(o, o->err, t->timeout_s);
}

/* ---- the path under ptrace ---- */
static const char BEGIN_MARK[] = "cb-path-begin\n", END_MARK[] = "cb-path-end\n";

/* Whether the write(2, buf, len) being entered writes that marker. */
static bool writes_marker(pid_t tid, uint64_t buf, uint64_t len, const char *mark)
{
    size_t n = strlen(mark);
    char got[32];
    if (len != n)
        return false;
    struct iovec local = {got, n}, remote = {(void *)(uintptr_t)buf, n};
    return process_vm_readv(tid, &local, 1, &remote, 1, 0) == (ssize_t)n && !memcmp(got, mark, n);
}

/* At the stop after execve, before the new program runs: its auxiliary
   vector's AT_SYSINFO_EHDR becomes AT_IGNORE, so that libc, Go's runtime
   and every other reader of the vector find no vDSO and make each clock
   read a system call, whose clock id the trace then sees. The vector sits
   above argv and envp on the new stack (System V x86-64 ABI, 3.4.1). */
static bool hide_vdso(pid_t pid)
{
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, pid, 0, &regs))
        return false;
    uint64_t a = regs.rsp;
    errno = 0;
    long argc = ptrace(PTRACE_PEEKDATA, pid, (void *)a, 0);
    if (errno || argc < 0 || argc > 100000)
        return false;
    a += 8 * ((uint64_t)argc + 2); /* argc, argv[], NULL */
    for (int i = 0; i < 100000; i++, a += 8) { /* envp[], NULL */
        long v = ptrace(PTRACE_PEEKDATA, pid, (void *)a, 0);
        if (errno)
            return false;
        if (!v)
            break;
    }
    a += 8;
    for (int i = 0; i < 200; i++, a += 16) {
        long type = ptrace(PTRACE_PEEKDATA, pid, (void *)a, 0);
        if (errno || type == AT_NULL)
            return false;
        if (type == AT_SYSINFO_EHDR)
            return ptrace(PTRACE_POKEDATA, pid, (void *)a, (void *)(long)AT_IGNORE) == 0;
    }
    return false;
}

/* A seccomp filter, installed in the child before exec, that stops it for
   us only at write(2, ...): the markers. Until the begin marker nothing
   else stops (a JVM's start-up makes thousands of system calls, and with
   the vDSO hidden every clock read of its warm-up is one more); from it,
   the marked thread alone stops at every system call. */
static bool install_marker_filter(void)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1 /* write */, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof *code, .filter = code};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

/* Whether the stopped child runs under a seccomp filter (/proc/PID/status "Seccomp: 2"). */
static bool filtered(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    const char *s = strstr(buf, "\nSeccomp:");
    return s && strtol(s + 9, 0, 10) == SECCOMP_MODE_FILTER;
}

/* Runs `probe path <api> n` traced: every thread and child followed; the
   system calls of the thread that wrote the begin marker, from it to the
   end marker, folded into t. A watchdog process kills it after timeout_s.
   Without the seccomp filter (a kernel without it) every system call of
   every thread stops: slower, the same count. */
static void run_traced(const char **argv, bool hide, unsigned timeout_s, struct lang_trace *t, struct outcome *o)
{
    *o = (struct outcome){0};
    *t = (struct lang_trace){0};
    int out = open("/dev/null", O_WRONLY), err = memfd_create("probe-err", 0), in = open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) {
        snprintf(o->why, sizeof o->why, "no file for its output: %s", strerror(errno));
        goto done;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(o->why, sizeof o->why, "fork failed: %s", strerror(errno));
        goto done;
    }
    if (pid == 0) {
        child_setup(CPUS_OURS, in, out, err);
        if (ptrace(PTRACE_TRACEME, 0, 0, 0)) {
            dprintf(2, "ptrace refused: %s\n", strerror(errno));
            _exit(126);
        }
        raise(SIGSTOP);
        install_marker_filter(); /* after the stop: the tracer's options (TRACESECCOMP) are set by then */
        execv(argv[0], (char *const *)argv);
        dprintf(2, "%s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, __WALL) != pid || !WIFSTOPPED(st)) {
        o->status = st;
        snprintf(o->why, sizeof o->why, "could not be traced");
        goto done;
    }
    ptrace(PTRACE_SETOPTIONS, pid, 0,
           PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |
               PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL);
    pid_t watchdog = fork();
    if (watchdog == 0) {
        nanosleep(&(struct timespec){timeout_s, 0}, 0);
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        _exit(0);
    }
    /* to the filter's install: each system call stops, then (at the exec
       stop) we know whether the filter took */
    ptrace(PTRACE_SYSCALL, pid, 0, 0);
    pid_t marked = -1;
    bool counting = false, main_done = false, hidden = !hide, use_filter = false, exec_seen = false;
    while (!main_done) {
        pid_t w = waitpid(-1, &st, __WALL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (w == watchdog) {
            o->timed_out = true;
            watchdog = -1;
            continue;
        }
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            if (w == pid)
                o->status = st, main_done = true;
            continue;
        }
        if (!WIFSTOPPED(st))
            continue;
        int sig = WSTOPSIG(st), event = st >> 16, inject = 0;
        struct __ptrace_syscall_info si;
        if (sig == (SIGTRAP | 0x80) || (sig == SIGTRAP && event == PTRACE_EVENT_SECCOMP)) {
            if (ptrace(PTRACE_GET_SYSCALL_INFO, w, (void *)sizeof si, &si) > 0 &&
                (si.op == PTRACE_SYSCALL_INFO_ENTRY || si.op == PTRACE_SYSCALL_INFO_SECCOMP)) {
                /* entry and seccomp share the layout of nr and args */
                long nr = (long)si.entry.nr;
                bool to_stderr = nr == 1 && si.entry.args[0] == 2;
                if (to_stderr && marked < 0 && writes_marker(w, si.entry.args[1], si.entry.args[2], BEGIN_MARK))
                    marked = w, counting = true, t->begin_seen = true;
                else if (to_stderr && w == marked && counting && writes_marker(w, si.entry.args[1], si.entry.args[2], END_MARK))
                    counting = false, t->end_seen = true;
                else if (w == marked && counting && si.op == PTRACE_SYSCALL_INFO_ENTRY &&
                         !(to_stderr && writes_marker(w, si.entry.args[1], si.entry.args[2], BEGIN_MARK)))
                    lang_trace_add(t, nr, si.entry.args[0]); /* the begin write's own entry, after its seccomp stop, is not counted */
            }
        } else if (sig == SIGTRAP && event) {
            if (event == PTRACE_EVENT_EXEC) {
                if (hide)
                    hidden = hide_vdso(w) || hidden;
                if (!exec_seen)
                    use_filter = filtered(w);
                exec_seen = true;
            }
        } else if (sig != SIGSTOP && sig != SIGTRAP)
            inject = sig; /* the program's own signals (a JVM's SIGSEGV for its safepoints) go through */
        bool step = !exec_seen || !use_filter || (w == marked && counting);
        ptrace(step ? PTRACE_SYSCALL : PTRACE_CONT, w, 0, (void *)(long)inject);
    }
    kill(-pid, SIGKILL);
    if (watchdog > 0) {
        kill(watchdog, SIGKILL);
        waitpid(watchdog, 0, 0);
    }
    /* what is left of the group (killed): reaped so that no zombie remains */
    while (waitpid(-1, &st, __WALL | WNOHANG) > 0)
        ;
    o->err = slurp(err);
    describe_end(o, o->err, timeout_s);
    if (o->ok && hide && !hidden) {
        o->ok = false;
        snprintf(o->why, sizeof o->why, "the vDSO could not be hidden (no AT_SYSINFO_EHDR in its auxiliary vector)");
    }
done:
    if (out >= 0)
        close(out);
    if (err >= 0)
        close(err);
    if (in >= 0)
        close(in);
}

/* ---- one API ---- */
struct api_result {
    const struct lang_api_info *info;
    bool cost_ok, steps_ok, seen_ok, hidden_ok, stamp_ok;
    struct lang_cost cost;
    struct lang_steps steps;
    struct lang_trace seen, hidden;
    unsigned bracket;     /* indices of lang_clock_ids whose bracket held in every round */
    unsigned alike;       /* of those, the ones within the bracket of each other here */
    int stamp_rounds;
    struct lang_cross cross[CROSS_PAIRS_MAX];
    bool cross_ok[CROSS_PAIRS_MAX];
    int n_cross;
    struct lang_threads thr[THREAD_COUNTS];
    bool thr_ok[THREAD_COUNTS];
    unsigned ks[THREAD_COUNTS];
    int n_k;
    char failures[400];
};

static void fail(int l, struct api_result *a, const char *what, const char *why)
{
    char line[400];
    snprintf(line, sizeof line, "%s %s: %s: %s", lang_defs[l].title, a->info ? a->info->api : "", what, why);
    printf("  FAILED: %s\n", line);
    n_failed++;
    note(failed_what, sizeof failed_what, line);
    note(a->failures, sizeof a->failures, line);
}

static void u_text(char *b, size_t size, uint64_t v) { snprintf(b, size, "%llu", (unsigned long long)v); }

/* Runs one command whose answer is one line; the line's text in *line
   (malloc'd by the outcome), or a failure said. */
static bool one_line(int l, struct api_result *a, const char *what, const char *const *cmd, int n_cmd, enum cpus cpus, struct outcome *o,
                     const char **line)
{
    const char *argv[16];
    char buf[600];
    build_argv(l, cmd, n_cmd, argv, buf, sizeof buf);
    run_batch(argv, cpus, lang_opt.timeout_s, o);
    if (!o->ok) {
        fail(l, a, what, o->why);
        return false;
    }
    char *s = o->out;
    while (*s == '\n')
        s++;
    char *nl = strchr(s, '\n');
    if (nl)
        *nl = 0;
    *line = s;
    return true;
}

static void garbage(int l, struct api_result *a, const char *what, const char *line, const char *why)
{
    char text[240];
    snprintf(text, sizeof text, "printed garbage (%s): '%.60s'", why, line);
    fail(l, a, what, text);
}

/* Reads every candidate clock, in lang_clock_ids' order; the CPU-time
   clocks are the probe's own (its process, its main thread). */
static void read_candidates(pid_t child, uint64_t v[LANG_CLOCKS])
{
    clockid_t process = 0;
    bool have_process = clock_getcpuclockid(child, &process) == 0;
    clockid_t thread = (clockid_t)((~(unsigned)child << 3) | 6); /* MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) */
    for (int i = 0; i < LANG_CLOCKS; i++) {
        clockid_t id = lang_clock_ids[i];
        if (id == CLOCK_PROCESS_CPUTIME_ID) {
            if (!have_process) {
                v[i] = 0;
                continue;
            }
            id = process;
        } else if (id == CLOCK_THREAD_CPUTIME_ID)
            id = thread;
        struct timespec t;
        v[i] = clock_gettime(id, &t) == 0 ? (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec : 0;
    }
}

/* `stamp`: each round brackets one read of the API between reads of every
   candidate clock; the ids that hold in every round remain. */
static void bracket_api(int l, struct api_result *a)
{
    const char *cmd[] = {"stamp", a->info->api};
    const char *argv[16];
    char buf[600], why[200], line[256];
    build_argv(l, cmd, 2, argv, buf, sizeof buf);
    struct talk t;
    struct outcome o;
    bool timed_out = false;
    if (!talk_start(argv, CPUS_OURS, lang_opt.timeout_s, &t, why, sizeof why)) {
        fail(l, a, "stamp", why);
        talk_end(&t, &o, false);
        outcome_free(&o);
        return;
    }
    /* a value truncated to its unit lies up to one step under its bracket */
    uint64_t below = a->steps_ok && a->steps.least_known ? (uint64_t)ceil(a->steps.least_ns) + 1 : 1000000;
    unsigned mask = (1u << LANG_CLOCKS) - 1, alike = (1u << LANG_CLOCKS) - 1;
    bool bad = false;
    for (int r = 0; r < STAMP_ROUNDS; r++) {
        uint64_t before[LANG_CLOCKS], after[LANG_CLOCKS], v;
        read_candidates(t.pid, before);
        if (!talk_send(&t, "\n"))
            break;
        const char *got = talk_line(&t, line, sizeof line, &timed_out);
        read_candidates(t.pid, after);
        if (!got)
            break;
        if (!lang_parse_stamp(got, &v)) {
            garbage(l, a, "stamp", got, "not a whole number of ns");
            bad = true;
            break;
        }
        uint64_t above = 1 + (v >> 52); /* a float's rounding */
        mask &= lang_bracket_round(before, after, v, below, above);
        unsigned m = 0;
        for (int i = 0; i < LANG_CLOCKS; i++)
            if (mask & (1u << i))
                m |= lang_bracket_alike(before, i, (after[i] - before[i]) + below);
        alike &= m;
        a->stamp_rounds++;
    }
    talk_end(&t, &o, timed_out);
    if (!bad && a->stamp_rounds < STAMP_ROUNDS)
        fail(l, a, "stamp", o.ok ? "it ended before answering every line" : o.why);
    else if (!bad) {
        a->stamp_ok = true;
        a->bracket = mask;
        a->alike = alike & mask;
    }
    outcome_free(&o);
}

/* `cross`: the probe may ask us to pin its threads ("pin <tid> <cpu>"). */
static void cross_pair(int l, struct api_result *a, unsigned cpu_a, unsigned cpu_b, unsigned rounds)
{
    char sa[16], sb[16], sr[16], buf[600], why[200], line[512];
    u_text(sa, sizeof sa, cpu_a), u_text(sb, sizeof sb, cpu_b), u_text(sr, sizeof sr, rounds);
    const char *cmd[] = {"cross", a->info->api, sa, sb, sr};
    const char *argv[16];
    build_argv(l, cmd, 5, argv, buf, sizeof buf);
    struct talk t;
    struct outcome o;
    bool timed_out = false, got_result = false;
    int i = a->n_cross;
    if (!talk_start(argv, CPUS_ALL, lang_opt.timeout_s, &t, why, sizeof why)) {
        fail(l, a, "cross", why);
        talk_end(&t, &o, false);
        outcome_free(&o);
        return;
    }
    for (const char *s; !got_result && (s = talk_line(&t, line, sizeof line, &timed_out));) {
        unsigned long tid, cpu;
        if (sscanf(s, "pin %lu %lu", &tid, &cpu) == 2) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            if (sched_setaffinity((pid_t)tid, sizeof set, &set) == 0)
                talk_send(&t, "ok\n");
            else {
                char no[120];
                snprintf(no, sizeof no, "no %s\n", strerror(errno));
                talk_send(&t, no);
            }
        } else if (!strncmp(s, "cross ", 6)) {
            const char *why2;
            if (lang_parse_cross(s, a->info->api, &a->cross[i], &why2))
                a->cross_ok[i] = got_result = true;
            else {
                garbage(l, a, "cross", s, why2);
                break;
            }
        } else {
            garbage(l, a, "cross", s, "neither a pin request nor the result");
            break;
        }
    }
    talk_end(&t, &o, timed_out && !got_result);
    if (got_result && !o.ok)
        a->cross_ok[i] = false, fail(l, a, "cross", o.why);
    else if (!got_result && !a->failures[0])
        fail(l, a, "cross", o.ok ? "no result line" : o.why);
    a->n_cross++;
    outcome_free(&o);
}

static void measure_api(int l, const struct lang_api_info *info, struct api_result *a)
{
    *a = (struct api_result){.info = info};
    const char *api = info->api, *line, *why;
    char n[16], np[16];
    struct outcome o;
    u_text(n, sizeof n, lang_opt.calls);
    u_text(np, sizeof np, PATH_CALLS);
    {
        const char *cmd[] = {"cost", api, n};
        if (one_line(l, a, "cost", cmd, 3, CPUS_OURS, &o, &line)) {
            if (lang_parse_cost(line, api, &a->cost, &why))
                a->cost_ok = true;
            else
                garbage(l, a, "cost", line, why);
        }
        outcome_free(&o);
    }
    {
        const char *cmd[] = {"steps", api, n};
        if (one_line(l, a, "steps", cmd, 3, CPUS_OURS, &o, &line)) {
            if (lang_parse_steps(line, api, &a->steps, &why))
                a->steps_ok = true;
            else
                garbage(l, a, "steps", line, why);
        }
        outcome_free(&o);
    }
    for (int h = 0; h < 2; h++) {
        /* with the vDSO hidden: only when the calls made no clock syscall
           as they ran (their ids are then known only this way) */
        if (h == 1 && (!a->seen_ok || a->seen.clock_calls))
            break;
        const char *cmd[] = {"path", api, np};
        const char *argv[16];
        char buf[600];
        build_argv(l, cmd, 3, argv, buf, sizeof buf);
        struct lang_trace *t = h ? &a->hidden : &a->seen;
        /* a traced runtime starts slower: every one of its system calls stops */
        run_traced(argv, h == 1, lang_opt.timeout_s * 3, t, &o);
        const char *what = h ? "path (vDSO hidden)" : "path";
        if (!o.ok)
            fail(l, a, what, o.why);
        else if (!t->begin_seen || !t->end_seen)
            fail(l, a, what, "the markers cb-path-begin and cb-path-end were not both written to fd 2");
        else if (h)
            a->hidden_ok = true;
        else
            a->seen_ok = true;
        outcome_free(&o);
    }
    if (!info->private_origin)
        bracket_api(l, a);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned rounds = lang_opt.calls / 10 < 2000 ? lang_opt.calls / 10 : 2000;
    for (long b = 1; b < cpus && a->n_cross < CROSS_PAIRS_MAX; b++)
        cross_pair(l, a, 0, (unsigned)b, rounds < 100 ? 100 : rounds);
    unsigned ks[THREAD_COUNTS] = {1, 2, (unsigned)(cpus > 0 ? cpus : 1)};
    for (int i = 0; i < THREAD_COUNTS; i++) {
        bool dup = false;
        for (int j = 0; j < a->n_k; j++)
            dup |= a->ks[j] == ks[i];
        if (dup)
            continue;
        char k[16];
        u_text(k, sizeof k, ks[i]);
        const char *cmd[] = {"threads", api, k, n};
        int at = a->n_k++;
        a->ks[at] = ks[i];
        why = 0;
        if (one_line(l, a, "threads", cmd, 4, CPUS_ALL, &o, &line)) {
            if (lang_parse_threads(line, api, &a->thr[at], &why) && a->thr[at].k == ks[i])
                a->thr_ok[at] = true;
            else
                garbage(l, a, "threads", line, why ? why : "k= is not the count asked for");
        }
        outcome_free(&o);
    }
}

/* ---- what it says ---- */
static double cost_ns(const struct api_result *a, double v, double tsc_hz) { return a->cost.tsc ? lang_ticks_ns(v, tsc_hz) : v; }

/* The clock id the API reads: from the system calls (as it runs, else with
   the vDSO hidden), else by bracketing. */
static void clock_text(const struct api_result *a, bool short_names, char *out, size_t size)
{
    int p[LANG_PATTERN_MAX] = {0}, k = 0;
    out[0] = 0;
    if (a->seen_ok && a->seen.clock_calls)
        k = lang_trace_pattern(&a->seen, PATH_CALLS, p);
    else if (a->hidden_ok && a->hidden.clock_calls)
        k = lang_trace_pattern(&a->hidden, PATH_CALLS, p);
    if (k) {
        lang_pattern_text(p, k, "+", short_names, out, size);
        return;
    }
    if (a->info->private_origin) {
        snprintf(out, size, "private");
        return;
    }
    if (!a->stamp_ok)
        return;
    for (int i = 0; i < LANG_CLOCKS; i++)
        if (a->bracket & (1u << i))
            snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? "|" : "",
                     short_names ? lang_clock_short(lang_clock_ids[i]) : lang_clock_name(lang_clock_ids[i]));
    if (!out[0])
        snprintf(out, size, "none");
}

static void emit_record(int l, const char *cs, const struct api_result *a, double tsc_hz)
{
    const struct lang_api_info *info = a->info;
    struct record r;
    char clock[96];
    record_begin(&r, "lang_clock");
    record_str(&r, "language", lang_defs[l].key);
    record_str(&r, "runtime", infos[l].runtime);
    record_str(&r, "api", info->api);
    record_str(&r, "clocksource", cs);
    clock_text(a, false, clock, sizeof clock);
    record_str(&r, "clock_id", clock[0] ? clock : 0);
    record_str(&r, "origin", info->private_origin ? "private" : "clock");
    record_array_begin(&r, "traced_clock_ids");
    int p[LANG_PATTERN_MAX] = {0}, k = 0;
    if (a->seen_ok && a->seen.clock_calls)
        k = lang_trace_pattern(&a->seen, PATH_CALLS, p);
    else if (a->hidden_ok)
        k = lang_trace_pattern(&a->hidden, PATH_CALLS, p);
    for (int i = 0; i < k; i++)
        record_array_i64(&r, p[i]);
    record_array_end(&r);
    record_array_begin(&r, "bracket_clock_ids");
    for (int i = 0; i < LANG_CLOCKS; i++)
        if (a->stamp_ok && (a->bracket & (1u << i)))
            record_array_i64(&r, lang_clock_ids[i]);
    record_array_end(&r);
    record_bool(&r, "bracketed", a->stamp_ok);
    rec_f(&r, "syscalls_per_1000", lang_per_1000(a->seen.syscalls, PATH_CALLS), a->seen_ok);
    rec_f(&r, "clock_syscalls_per_1000", lang_per_1000(a->seen.clock_calls, PATH_CALLS), a->seen_ok);
    rec_f(&r, "syscalls_per_1000_vdso_hidden", lang_per_1000(a->hidden.syscalls, PATH_CALLS), a->hidden_ok);
    record_str(&r, "path", !a->seen_ok ? 0 : a->seen.clock_calls * 2 >= PATH_CALLS ? "syscall" : a->hidden_ok && a->hidden.clock_calls ? "vdso" : "none");
    record_str(&r, "method", a->cost_ok ? (a->cost.tsc ? "tsc" : "batch") : 0);
    record_u64(&r, "n", a->cost_ok ? a->cost.n : 0);
    if (a->cost_ok && !a->cost.tsc)
        record_u64(&r, "batch", a->cost.batch);
    else
        record_null(&r, "batch");
    rec_f(&r, "min_ns", cost_ns(a, a->cost.min, tsc_hz), a->cost_ok);
    rec_f(&r, "p50_ns", cost_ns(a, a->cost.p50, tsc_hz), a->cost_ok);
    rec_f(&r, "mean_ns", cost_ns(a, a->cost.mean, tsc_hz), a->cost_ok);
    rec_f(&r, "p99_ns", cost_ns(a, a->cost.p99, tsc_hz), a->cost_ok && a->cost.tsc);
    rec_f(&r, "p999_ns", cost_ns(a, a->cost.p999, tsc_hz), a->cost_ok && a->cost.tsc);
    rec_f(&r, "max_ns", cost_ns(a, a->cost.max, tsc_hz), a->cost_ok);
    rec_f(&r, "bracket_ns", cost_ns(a, a->cost.bracket, tsc_hz), a->cost_ok && a->cost.tsc);
    record_str(&r, "batch_timer", a->cost_ok && !a->cost.tsc ? a->cost.timer : 0);
    rec_f(&r, "least_step_ns", a->steps.least_ns, a->steps_ok && a->steps.least_known);
    rec_f(&r, "claimed_resolution_ns", info->claim_ns, info->claim_known);
    record_str(&r, "claim_source", info->claim_source);
    struct lang_row row = {.step_known = a->steps_ok && a->steps.least_known, .least_step_ns = a->steps.least_ns,
                           .claim_known = info->claim_known, .claim_ns = info->claim_ns};
    record_bool(&r, "claim_finer_than_step", lang_claim_finer(&row));
    if (a->steps_ok) {
        record_u64(&r, "steps_n", a->steps.n);
        record_u64(&r, "zero_steps", a->steps.zero);
        record_u64(&r, "backward", a->steps.backward);
    } else {
        record_null(&r, "steps_n");
        record_null(&r, "zero_steps");
        record_null(&r, "backward");
    }
    rec_f(&r, "max_backward_ns", a->steps.max_backward_ns, a->steps_ok);
    uint64_t back = 0, lost = 0, rounds = 0;
    double worst = 0;
    int pairs = 0;
    for (int i = 0; i < a->n_cross; i++)
        if (a->cross_ok[i]) {
            pairs++;
            back += a->cross[i].violations, lost += a->cross[i].lost, rounds += a->cross[i].rounds;
            worst = fmax(worst, a->cross[i].max_violation_ns);
        }
    if (pairs) {
        record_u64(&r, "cross_cpu_backward", back);
        record_u64(&r, "cross_cpu_rounds", rounds);
        record_u64(&r, "cross_cpu_lost", lost);
    } else {
        record_null(&r, "cross_cpu_backward");
        record_null(&r, "cross_cpu_rounds");
        record_null(&r, "cross_cpu_lost");
    }
    rec_f(&r, "cross_cpu_max_backward_ns", worst, pairs > 0);
    record_u64(&r, "cross_cpu_pairs", (uint64_t)pairs);
    /* the cost per thread count: 1, 2 and N (the CPUs online) */
    const char *keys[] = {"threads_1_ns", "threads_2_ns", "threads_n_ns"};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned want[] = {1, 2, (unsigned)cpus};
    for (int i = 0; i < 3; i++) {
        bool known = false;
        double v = 0;
        for (int j = 0; j < a->n_k; j++)
            if (a->ks[j] == want[i] && a->thr_ok[j])
                known = true, v = a->thr[j].per_call_ns;
        rec_f(&r, keys[i], v, known);
    }
    record_u64(&r, "threads_n", (uint64_t)cpus);
    record_str(&r, "failures", a->failures[0] ? a->failures : 0);
    emit(&r);
    if (a->steps_ok && a->steps.bins) {
        record_begin(&r, "lang_histogram");
        record_str(&r, "language", lang_defs[l].key);
        record_str(&r, "api", info->api);
        record_str(&r, "clocksource", cs);
        record_array_begin(&r, "bins"); /* pairs: upper edge in ns (0: zero steps), count */
        for (int i = 0; i < a->steps.bins; i++) {
            record_array_u64(&r, (uint64_t)a->steps.bin_upper_ns[i]);
            record_array_u64(&r, a->steps.bin_count[i]);
        }
        record_array_end(&r);
        emit(&r);
    }
}

static void api_row(const struct api_result *a, double tsc_hz, struct lang_row *row)
{
    *row = (struct lang_row){0};
    snprintf(row->name, sizeof row->name, "  %s", a->info->api);
    row->cost_known = a->cost_ok;
    row->p50_ns = cost_ns(a, a->cost.p50, tsc_hz);
    row->method = a->cost.tsc ? 't' : 'b';
    row->step_known = a->steps_ok && a->steps.least_known;
    row->least_step_ns = a->steps.least_ns;
    row->claim_known = a->info->claim_known;
    row->claim_ns = a->info->claim_ns;
    row->path_known = a->seen_ok;
    row->syscalls_per_1000 = lang_per_1000(a->seen.syscalls, PATH_CALLS);
    row->via_syscall = a->seen.clock_calls * 2 >= PATH_CALLS;
    clock_text(a, true, row->clock, sizeof row->clock);
}

#define ROWS_MAX 64

void lang_measure_clocksource(const char *clocksource, const struct lang_row *os_rows, int n_os, double bare_ns, double tsc_hz)
{
    if (lang_opt.off)
        return;
    static struct lang_row rows[ROWS_MAX];
    static char sentences[LANG_COUNT * LANG_API_MAX][400];
    int n = 0, n_sent = 0;
    for (int i = 0; i < n_os && n < ROWS_MAX; i++)
        rows[n++] = os_rows[i];
    printf("\n-- languages on clocksource %s --\n", clocksource);
    for (int l = 0; l < LANG_COUNT; l++) {
        const struct lang_def *d = &lang_defs[l];
        if (lang_opt.picked && !lang_opt.pick[l])
            continue;
        if (unavailable[l]) {
            if (n < ROWS_MAX) {
                rows[n] = (struct lang_row){.heading = true};
                snprintf(rows[n++].name, sizeof rows[0].name, "%s: not measured", d->title);
            }
            continue;
        }
        if (!info_done[l]) {
            const char *cmd[] = {"info"}, *argv[16], *why;
            char buf[600];
            struct outcome o;
            build_argv(l, cmd, 1, argv, buf, sizeof buf);
            run_batch(argv, CPUS_OURS, lang_opt.timeout_s, &o);
            info_done[l] = true;
            if (!o.ok || !lang_parse_info(l, o.out, &infos[l], &why)) {
                char text[300];
                snprintf(text, sizeof text, "%s: info: %s", d->title, o.ok ? "printed garbage: " : o.why);
                if (o.ok)
                    snprintf(text + strlen(text), sizeof text - strlen(text), "%s", why);
                printf("  FAILED: %s (the language is not measured)\n", text);
                n_failed++;
                note(failed_what, sizeof failed_what, text);
                snprintf(unavailable_text[l], sizeof unavailable_text[l], "its probe failed");
                unavailable[l] = unavailable_text[l];
                outcome_free(&o);
                if (n < ROWS_MAX) {
                    rows[n] = (struct lang_row){.heading = true};
                    snprintf(rows[n++].name, sizeof rows[0].name, "%s: not measured", d->title);
                }
                continue;
            }
            outcome_free(&o);
        }
        printf("  %s (%s)...\n", d->title, infos[l].runtime);
        if (n < ROWS_MAX) {
            rows[n] = (struct lang_row){.heading = true};
            snprintf(rows[n++].name, sizeof rows[0].name, "%.39s", d->title);
        }
        for (int i = 0; i < infos[l].n; i++) {
            struct api_result a;
            measure_api(l, &infos[l].apis[i], &a);
            emit_record(l, clocksource, &a, tsc_hz);
            if (n < ROWS_MAX)
                api_row(&a, tsc_hz, &rows[n++]);
            lang_path_sentence(d->title, a.info->api, PATH_CALLS, &a.seen, a.hidden_ok ? &a.hidden : 0, a.bracket, a.stamp_ok,
                               a.info->private_origin, sentences[n_sent], sizeof sentences[0]);
            if (!a.seen_ok)
                snprintf(sentences[n_sent], sizeof sentences[0], "%s %s: path not traced", d->title, a.info->api);
            /* equal here: say why two clocks could not be told apart */
            if (a.stamp_ok && (a.alike & 0x82) == 0x82)
                snprintf(sentences[n_sent] + strlen(sentences[n_sent]), sizeof sentences[0] - strlen(sentences[n_sent]),
                         " (equal here: the machine never slept)");
            n_sent++;
        }
        /* the kernel may demote the TSC (its watchdog) while we measure */
        char now[CS_NAME_MAX] = "unreadable";
        if (os_cs_current(now) && strcmp(now, clocksource)) {
            printf("  WARNING: the clocksource changed from %s to %s during %s's measurement: its figures may mix the two\n", clocksource,
                   now, d->title);
            char text[200];
            snprintf(text, sizeof text, "%s during %s", now, d->key);
            n_changed++;
            note(changed_what, sizeof changed_what, text);
            struct record r;
            record_begin(&r, "lang_clocksource_change");
            record_str(&r, "clocksource", clocksource);
            record_str(&r, "now", now);
            record_str(&r, "language", d->key);
            emit(&r);
        }
    }
    printf("\n  The ladder on clocksource %s (cost per read, ns):\n", clocksource);
    char *text = malloc(16384);
    if (text) {
        lang_ladder_format(rows, n, bare_ns, text, 16384);
        fputs(text, stdout);
        free(text);
    }
    if (n_sent)
        printf("  The paths (system calls of 1000 calls, counted under ptrace; clock ids traced, with the vDSO hidden, or bracketed):\n");
    for (int i = 0; i < n_sent; i++)
        printf("    %s\n", sentences[i]);
}

void lang_judge(lang_check_fn check)
{
    if (lang_opt.off) {
        check("SKIP", "languages", "--no-lang");
        return;
    }
    if (n_failed)
        check("FAIL", "language probes", "%u probe run(s) failed: %s", n_failed, failed_what);
    else
        check("PASS", "language probes", "every probe run picked gave well-formed answers");
    if (n_missing)
        check("SKIP", "languages not measured", "%s (no runtime or no probe: see above)", missing_what);
    if (n_changed)
        check("FAIL", "clocksource held during the languages", "the kernel changed clocksource: %s", changed_what);
}
