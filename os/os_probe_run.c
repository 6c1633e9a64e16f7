/* See os_probe_run.h. */
#define _GNU_SOURCE
#include "os_probe_run.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUT_MAX (1 << 20)

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}


void probe_outcome_free(struct probe_outcome *o)
{
    free(o->out), free(o->err);
    o->out = o->err = 0;
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
static void child_setup(enum probe_cpus cpus, int in, int out, int err)
{
    setpgid(0, 0);
    if (cpus == PROBE_CPUS_ALL) {
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

static void describe_end(struct probe_outcome *o, const char *err_text, unsigned timeout_s)
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

/* Forks and execs argv with the files given as its stdin, stdout and
   stderr, at the CPUs asked for; traced: it stops itself for us first
   (PTRACE_TRACEME, SIGSTOP) and runs under the marker filter. The child's
   pid, or -1 with *why said. */
static bool install_marker_filter(void);
static pid_t spawn(const char **argv, enum probe_cpus cpus, int in, int out, int err, bool traced, char *why, size_t why_size)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_size, "fork failed: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        child_setup(cpus, in, out, err);
        if (traced) {
            if (ptrace(PTRACE_TRACEME, 0, 0, 0)) {
                dprintf(2, "ptrace refused: %s\n", strerror(errno));
                _exit(126);
            }
            raise(SIGSTOP);
            install_marker_filter(); /* after the stop: the tracer's options (TRACESECCOMP) are set by then */
        }
        execv(argv[0], (char *const *)argv);
        dprintf(2, "%s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

/* ---- a probe we talk to (stamp, cross) ---- */

bool probe_talk_start(const char **argv, enum probe_cpus cpus, unsigned timeout_s, struct probe_talk *t, char *why, size_t why_size)
{
    int in[2], out[2];
    *t = (struct probe_talk){.pid = -1, .to = -1, .from = -1, .err = -1, .timeout_s = timeout_s};
    t->err = memfd_create("probe-err", MFD_CLOEXEC);
    if (t->err < 0 || pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
        snprintf(why, why_size, "no pipe: %s", strerror(errno));
        return false;
    }
    t->pid = spawn(argv, cpus, in[0], out[1], t->err, false, why, why_size);
    close(in[0]), close(out[1]);
    t->to = in[1], t->from = out[0];
    if (t->pid < 0)
        return false;
    probe_talk_rearm(t);
    return true;
}

bool probe_sched_times(pid_t pid, uint64_t *run_ns, uint64_t *wait_ns)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    bool any = false;
    *run_ns = *wait_ns = 0;
    if (!d)
        return false;
    for (struct dirent *e; (e = readdir(d));) {
        char file[96];
        unsigned long long run, wait;
        if (e->d_name[0] == '.')
            continue;
        snprintf(file, sizeof file, "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
        FILE *f = fopen(file, "r");
        if (!f)
            continue;
        if (fscanf(f, "%llu %llu", &run, &wait) == 2) {
            *run_ns += run, *wait_ns += wait;
            any = true;
        }
        fclose(f);
    }
    closedir(d);
    return any;
}

void probe_talk_rearm(struct probe_talk *t)
{
    t->armed_ns = now_ns();
    t->deadline = t->armed_ns + (uint64_t)t->timeout_s * 1000000000u;
    if (!probe_sched_times(t->pid, &t->run0_ns, &t->wait0_ns))
        t->run0_ns = t->wait0_ns = UINT64_MAX;
}

/* At its deadline: whether it waited for a CPU rather than hung. */
static void judge_starved(struct probe_talk *t)
{
    uint64_t run, wait;
    t->starved = false;
    if (t->run0_ns == UINT64_MAX || !probe_sched_times(t->pid, &run, &wait) || run < t->run0_ns || wait < t->wait0_ns)
        return;
    double wall = (double)(now_ns() - t->armed_ns);
    t->ran_s = (double)(run - t->run0_ns) / 1e9;
    t->waited_s = (double)(wait - t->wait0_ns) / 1e9;
    t->starved = t->waited_s >= t->ran_s && t->waited_s * 1e9 >= 0.25 * wall;
}

/* Every thread of the probe to every CPU at the default scheduling, as
   PROBE_CPUS_ALL starts one: the threads it makes from now on inherit it
   from their maker. Threads of another user's probe may refuse; a thread
   that ends meanwhile is no matter. */
void probe_talk_widen(struct probe_talk *t)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)t->pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < CPU_SETSIZE; i++)
        CPU_SET(i, &set);
    struct sched_param sp = {0};
    for (struct dirent *e; (e = readdir(d));) {
        pid_t tid = (pid_t)strtol(e->d_name, 0, 10);
        if (tid <= 0)
            continue;
        sched_setscheduler(tid, SCHED_OTHER, &sp);
        sched_setaffinity(tid, sizeof set, &set);
    }
    closedir(d);
}

/* A probe that has died makes the write raise SIGPIPE, which would end
   clockbench-os (its handler puts the clocksource back and dies): ignored
   for the write, EPIPE says it instead. */
bool probe_talk_send(struct probe_talk *t, const char *text)
{
    size_t n = strlen(text);
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old);
    bool ok = write(t->to, text, n) == (ssize_t)n;
    sigaction(SIGPIPE, &old, 0);
    return ok;
}

/* One line (without its newline) before the deadline; 0 at EOF or timeout. */
const char *probe_talk_line(struct probe_talk *t, char *line, size_t size, bool *timed_out)
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
            judge_starved(t);
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
void probe_talk_end(struct probe_talk *t, struct probe_outcome *o, bool timed_out)
{
    *o = (struct probe_outcome){.timed_out = timed_out};
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
    o->starved = o->timed_out && t->starved;
    describe_end(o, o->err, t->timeout_s);
    if (o->starved)
        snprintf(o->why, sizeof o->why, "starved, not hung: in its %u s it waited %.1f s for a CPU and ran %.1f s (the host is busy); stopped",
                 t->timeout_s, t->waited_s, t->ran_s);
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

/* Runs the probe's `serve` traced, its stdin the text given (its `path`
   commands): every thread and child followed; the system calls of the
   thread that wrote a begin marker, from it to its end marker, folded into
   the next of the n traces. A watchdog process kills it after timeout_s.
   Without the seccomp filter (a kernel without it) every system call of
   every thread stops: slower, the same count. */
void probe_run_traced(const char **argv, const char *input, bool hide, unsigned timeout_s, struct lang_trace *traces, int n,
                      struct probe_outcome *o)
{
    *o = (struct probe_outcome){0};
    for (int i = 0; i < n; i++)
        traces[i] = (struct lang_trace){0};
    int out = open("/dev/null", O_WRONLY | O_CLOEXEC), err = memfd_create("probe-err", MFD_CLOEXEC), in = memfd_create("probe-in", MFD_CLOEXEC);
    size_t input_len = strlen(input);
    if (out < 0 || err < 0 || in < 0 || write(in, input, input_len) != (ssize_t)input_len || lseek(in, 0, SEEK_SET) != 0) {
        snprintf(o->why, sizeof o->why, "no file for its input or output: %s", strerror(errno));
        goto done;
    }
    pid_t pid = spawn(argv, PROBE_CPUS_OURS, in, out, err, true, o->why, sizeof o->why);
    if (pid < 0)
        goto done;
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
    int k = 0; /* the trace the next marker pair fills */
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
            if (k < n && ptrace(PTRACE_GET_SYSCALL_INFO, w, (void *)sizeof si, &si) > 0 &&
                (si.op == PTRACE_SYSCALL_INFO_ENTRY || si.op == PTRACE_SYSCALL_INFO_SECCOMP)) {
                /* entry and seccomp share the layout of nr and args */
                long nr = (long)si.entry.nr;
                bool to_stderr = nr == 1 && si.entry.args[0] == 2;
                if (to_stderr && marked < 0 && writes_marker(w, si.entry.args[1], si.entry.args[2], BEGIN_MARK))
                    marked = w, counting = true, traces[k].begin_seen = true;
                else if (to_stderr && w == marked && counting && writes_marker(w, si.entry.args[1], si.entry.args[2], END_MARK))
                    counting = false, traces[k++].end_seen = true, marked = -1;
                else if (w == marked && counting && si.op == PTRACE_SYSCALL_INFO_ENTRY &&
                         !(to_stderr && writes_marker(w, si.entry.args[1], si.entry.args[2], BEGIN_MARK)))
                    lang_trace_add(&traces[k], nr, si.entry.args[0]); /* the begin write's own entry, after its seccomp stop, is not counted */
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
    if (o->ok && hide && !hidden && n) {
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
