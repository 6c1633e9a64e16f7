#!/usr/bin/env python3
"""A small probe that keeps the language probes' contract (docs/output.md,
"Language probes"), for the tests of clockbench-os's runner only: in a
folder of the test's own (--lang-dir) it stands in for the Python probe
(as probe.py) or for Go's (as probe-go, with Go's two API names, fewer runs),
so that the runner is tested before, and apart from, the real probes; and
it serves its commands on stdin (`serve`) as the real ones do; and
it can be told to fail (CB_TEST_FAULT=how:command[:api],... with how one of
crash, hang, garbage, nomarker, closein, demote, backward, disturbed, cut) to test that one failure
is one line and the rest go on. cost, steps, cross and threads take the contract's optional
budget_ms (issue 48) and end their line `budget_ms=B cut=0` (threads: `done=... budget_ms=B
cut=0`); the fault `cut` answers as a budget that ran out would: half the count done, `cut=1`.
Not part of the product."""

import os
import sys
import threading
import time

APIS = {
    "perf_counter_ns": time.perf_counter_ns,
    "monotonic_ns": time.monotonic_ns,
    "time_ns": time.time_ns,
    "process_time_ns": time.process_time_ns,
    "perf_counter": lambda: round(time.perf_counter() * 1e9),
}
INFO = {"perf_counter_ns": "perf_counter", "monotonic_ns": "monotonic", "time_ns": "time",
        "process_time_ns": "process_time", "perf_counter": "perf_counter"}
if os.path.basename(sys.argv[0]) == "probe-go":
    APIS = {"time.Now": time.time_ns, "time.Since": time.monotonic_ns}
    INFO = {"time.Now": "time", "time.Since": "monotonic"}


def bad(msg):
    sys.stderr.write("probe-%s: %s\n" % ("go" if "time.Now" in APIS else "python", msg))
    sys.exit(64)


def fault(cmd, api):
    for spec in os.environ.get("CB_TEST_FAULT", "").split(","):
        how, _, where = spec.partition(":")
        command, _, only = where.partition(":")
        if command == cmd and only in ("", api):
            break
    else:
        return ""
    if how == "crash":
        os.kill(os.getpid(), 11)
    if how == "hang":
        time.sleep(3600)
    if how == "closein":  # a runtime gone before it read its input: the runner's write meets a closed pipe
        os.close(0)
        time.sleep(0.5)
        sys.exit(3)
    if how == "demote":  # the kernel's watchdog, played in a folder standing in for sysfs
        with open(os.environ["CB_TEST_CURRENT"], "w") as f:
            f.write("jiffies\n")
    return how


def main(argv):
    if os.environ.get("CB_TEST_STARTS"):  # each start, for the tests that count them
        with open(os.environ["CB_TEST_STARTS"], "a") as f:
            f.write(" ".join(argv) + "\n")
    if argv == ["serve"]:  # the commands on stdin, one a line, each answered then "cb-served"
        for line in iter(sys.stdin.readline, ""):
            if line.strip():
                command(line.split(), serving=True)
                print("cb-served", flush=True)
        return
    command(argv, serving=False)


def command(argv, serving):
    if not argv:
        bad("no command")
    cmd, args = argv[0], argv[1:]
    if os.environ.get("CB_TEST_STARTS") and cmd in ("cost", "threads"):  # where the command ran
        with open(os.environ["CB_TEST_STARTS"], "a") as f:
            f.write("%s on %d CPUs\n" % (cmd, len(os.sched_getaffinity(0))))
    how = fault(cmd, args[0] if args else "")
    if how == "garbage":
        print("cost %s method=tsc unit=ticks n=zebra" % (args[0] if args else ""), flush=True)
        return
    if cmd == "info":
        print("runtime test probe (CPython %d.%d)" % sys.version_info[:2])
        for api, name in INFO.items():
            res = time.get_clock_info(name).resolution
            print("api %s claim_ns=%g origin=clock claim_source=time.get_clock_info('%s').resolution" % (api, res * 1e9, name))
        return
    if not args or args[0] not in APIS:
        bad("unknown API")
    f = APIS[args[0]]
    nums = [int(a) for a in args[1:] if a.isdigit()]  # threads' CPU list ("0-3") is read apart
    # budget_ms: the word after the command's own (cost, steps: 2; cross, threads: 4)
    at = {"cost": 2, "steps": 2, "cross": 4, "threads": 4}.get(cmd)
    budget = int(args[at]) if at is not None and len(args) > at else 0
    cut = budget > 0 and how == "cut"

    def tail(extra=""):
        return "%s budget_ms=%d cut=%d" % (extra, budget, cut) if budget else ""
    if cmd == "cost":
        n = nums[0] // 2 if cut else nums[0]
        per = []
        for _ in range(max(1, n // 1000)):
            t0 = time.perf_counter_ns()
            for _ in range(1000):
                f()
            per.append((time.perf_counter_ns() - t0) / 1000)
        per.sort()
        print("cost %s method=batch unit=ns n=%d batch=1000 min=%.1f p50=%.1f mean=%.1f max=%.1f timer=perf_counter_ns%s"
              % (args[0], len(per) * 1000, per[0], per[len(per) // 2], sum(per) / len(per), per[-1], tail()))
    elif cmd == "steps":
        v = [f() for _ in range(nums[0] // 2 if cut else nums[0])]
        d = [b - a for a, b in zip(v, v[1:])]
        pos = [x for x in d if x > 0]
        back = [a - b for a, b in zip(v, v[1:]) if b < a]
        hist = {}
        for x in d:
            if x < 0:
                continue
            up = 0 if x == 0 else 1 << (x - 1).bit_length()
            hist[up] = hist.get(up, 0) + 1
        print("steps %s n=%d least_ns=%s zero=%d backward=%d max_backward_ns=%d hist=%s%s"
              % (args[0], len(v), min(pos) if pos else "none", d.count(0), len(back), max(back, default=0),
                 ",".join("%d:%d" % kv for kv in sorted(hist.items())), tail()))
    elif cmd == "path":
        os.write(2, b"cb-path-begin\n")
        keep = [f() for _ in range(nums[0])]
        if how != "nomarker":
            os.write(2, b"cb-path-end\n")
        del keep
    elif cmd == "stamp":
        for line in iter(sys.stdin.readline, ""):
            if serving and line == "cb-end\n":
                break
            sys.stdout.write("%d\n" % f())
            sys.stdout.flush()
    elif cmd == "cross":
        a, b, rounds = (int(w) for w in args[1:4])
        if cut:
            rounds //= 2
        shared = {"seq": 0, "t1": 0}
        lock = threading.Lock()
        result = {"v": 0, "worst": 0, "lost": 0}

        def run(cpu, me):
            os.sched_setaffinity(0, {cpu})
            for r in range(rounds):
                writer = (r % 2 == 0) == (me == 0)
                if writer:
                    with lock:
                        shared["t1"], shared["seq"] = f(), r + 1
                else:
                    end = time.monotonic() + 1
                    while True:
                        with lock:
                            if shared["seq"] == r + 1:
                                t1 = shared["t1"]
                                break
                        if time.monotonic() > end:
                            result["lost"] += 1
                            t1 = None
                            break
                    if t1 is not None:
                        t2 = f()
                        if t2 < t1:
                            result["v"] += 1
                            result["worst"] = max(result["worst"], t1 - t2)
                    barrier.wait()
                    continue
                barrier.wait()

        barrier = threading.Barrier(2)
        ts = [threading.Thread(target=run, args=(c, i)) for i, c in enumerate((a, b))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if how == "backward":  # a clock that went back across CPUs, as a faulty one would
            result["v"], result["worst"] = 3, 500
        print("cross %s a=%d b=%d rounds=%d violations=%d max_violation_ns=%d lost=%d pinned=self%s"
              % (args[0], a, b, rounds, result["v"], result["worst"], result["lost"], tail()))
    elif cmd == "threads":  # threads <api> <k> <n> [<cpus>]: each pinned to a CPU of the list, timed in chunks
        k, n = nums[:2]
        cpus = []
        for part in (args[3].split(",") if len(args) > 3 else []):
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
        chunk = max(1, min(1000, n // 20))
        # cut: each thread stops after half its chunks (one at least), as at a budget's end
        chunks = max(1, n // chunk // 2) if cut else n // chunk
        made = chunks * chunk if cut else n
        go = threading.Barrier(k)
        runs = [None] * k

        def loop(i):
            cpu = "-"
            if cpus:
                os.sched_setaffinity(0, {cpus[i % len(cpus)]})
                cpu = str(cpus[i % len(cpus)])
            go.wait()
            d = []
            t0 = prev = time.perf_counter_ns()
            for _ in range(chunks):
                for _ in range(chunk):
                    f()
                now = time.perf_counter_ns()
                d.append(now - prev)
                prev = now
            for _ in range(made - chunks * chunk):
                f()
            d.sort()
            runs[i] = (cpu, d[0] / chunk, d[len(d) // 2] / chunk, time.perf_counter_ns() - t0)

        ts = [threading.Thread(target=loop, args=(i,)) for i in range(k)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        per = [r[3] / made for r in runs]
        # CB_TEST_FAULT=disturbed:threads: every thread says it was preempted twice
        sw = "2" if how == "disturbed" else "0"
        print("threads %s k=%d n=%d per_call_ns=%.1f max_per_call_ns=%.1f chunk=%d pinned=%s cpu=%s least_ns=%s median_ns=%s "
              "wall_ns=%s run_ns=%s nivcsw=%s%s" % (args[0], k, n, sum(per) / k, max(per), chunk, "self" if cpus else "no",
                                                     ",".join(r[0] for r in runs), ",".join("%.1f" % r[1] for r in runs),
                                                     ",".join("%.1f" % r[2] for r in runs), ",".join(str(r[3]) for r in runs),
                                                     ",".join("-" for _ in runs), ",".join(sw for _ in runs),
                                                     tail(" done=" + ",".join(str(made) for _ in runs))), flush=True)
    else:
        bad("unknown command %s" % cmd)


main(sys.argv[1:])
