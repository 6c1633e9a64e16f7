/* Running a language's probe (os_lang.c): to its end with its output in
   memory, talking to it line by line (its `serve`), or traced (path):
   every wait bounded, a probe that outlives its bound killed with what it
   started. The trace: ptrace(2) with PTRACE_O_TRACECLONE, TRACEFORK,
   TRACEEXEC, TRACESECCOMP and PTRACE_GET_SYSCALL_INFO (Linux 5.3). */
#ifndef CLOCKBENCH_OS_PROBE_RUN_H
#define CLOCKBENCH_OS_PROBE_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "os_lang_parse.h"

/* Where the probe may run: clockbench-os's own CPU (inherited), or every
   CPU, at the default scheduling (cross, threads). */
enum probe_cpus { PROBE_CPUS_OURS, PROBE_CPUS_ALL };

struct probe_outcome {
    bool ok;           /* exited 0 */
    bool timed_out;
    bool starved;      /* timed out while waiting for a CPU, not hung (probe_talk's starved) */
    int status;
    char *out, *err;   /* what it wrote (NUL-terminated, malloc'd) */
    char why[200];     /* one line when not ok */
};

void probe_outcome_free(struct probe_outcome *o);

/* A probe we talk to (its `serve`): lines to its stdin, lines from its
   stdout, before a deadline timeout_s from the start or the last rearm. */
/* the longest answer line: `threads` on N CPUs gives six numbers a thread */
#define PROBE_TALK_BUF 32768
struct probe_talk {
    pid_t pid;
    int to, from, err;
    char buf[PROBE_TALK_BUF];
    size_t have;
    uint64_t deadline;
    unsigned timeout_s;
    /* since the last rearm, from /proc/<pid>/task/<tid>/schedstat (Linux's
       sched_info: time on a CPU, time runnable waiting for one): a probe
       that timed out having waited for a CPU longer than it ran, and for a
       quarter of the time at least, was starved by a busy host, not hung */
    uint64_t armed_ns, run0_ns, wait0_ns;
    bool starved;
    double waited_s, ran_s; /* at the timeout */
};

bool probe_talk_start(const char **argv, enum probe_cpus cpus, unsigned timeout_s, struct probe_talk *t, char *why, size_t why_size);
/* A new deadline, timeout_s from now: one for each command served. */
void probe_talk_rearm(struct probe_talk *t);
/* Its threads' CPU time and run-queue wait, summed (ns); false when Linux
   keeps no schedstat (CONFIG_SCHED_INFO off) or the probe is gone. */
bool probe_sched_times(pid_t pid, uint64_t *run_ns, uint64_t *wait_ns);
/* Its every thread to every CPU at the default scheduling (PROBE_CPUS_ALL). */
void probe_talk_widen(struct probe_talk *t);
bool probe_talk_send(struct probe_talk *t, const char *text);
/* One line without its newline, or NULL at its end or the deadline (*timed_out). */
const char *probe_talk_line(struct probe_talk *t, char *line, size_t size, bool *timed_out);
/* Closes its stdin and waits (bounded) for its end. */
void probe_talk_end(struct probe_talk *t, struct probe_outcome *o, bool timed_out);

/* Runs the probe's `serve` (argv) traced, its stdin the text given (its
   `path <api> n` commands), the vDSO hidden from it when hide: the system
   calls of the thread that wrote "cb-path-begin\n" to fd 2, up to its
   "cb-path-end\n", folded into the next of the n traces. */
void probe_run_traced(const char **argv, const char *input, bool hide, unsigned timeout_s, struct lang_trace *traces, int n,
                      struct probe_outcome *o);

#endif
