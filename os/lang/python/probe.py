"""probe-python: what Python's clocks cost, how fine they step, and whether they hold across CPUs
(issue 36; the command line, info/cost/steps/path/stamp/cross/threads, is shared by every
language's probe and run by clockbench-os).

Python cannot read the TSC, so a call's cost is measured the batch way: about 1000 back-to-back
calls (unrolled ten to a loop turn, so the loop's own overhead is a tenth of a turn a call) timed
by perf_counter_ns, the median batch's ns per call reported. Steps are the differences between n
back-to-back reads. The claim beside them is what time.get_clock_info() says of the clock.

`threads` runs its k loops in forked processes, not threads: CPython's GIL lets one thread run at a
time, so k threads would measure the GIL's hand-offs instead of the clock's own scaling (the line
says workers=processes). Each pins itself to a CPU of the list given (os.sched_setaffinity), times
its calls in chunks by perf_counter_ns, and reads its CPU time (thread_time_ns) and involuntary
context switches (/proc/thread-self/status) around its loop. `cross` uses two threads, each pinned with os.sched_setaffinity(0, ...);
the GIL serialises them, and each hand-off is a full barrier, so a reader that sees the new
sequence number has seen the writer's t1.

`serve` runs many commands in one interpreter (docs/output.md, "Language probes: the contract"):
each line of stdin goes through the same run() as the command line. stdin has one reader,
sys.stdin.buffer.readline, for serve's commands and stamp's lines alike: a second reader (or a
select() on the descriptor) would miss what the buffered one has already read ahead."""

import math
import os
import platform
import re
import select
import sys
import threading
import time

LANG = "python"
# API name -> (function, get_clock_info name, ns per unit of its value)
APIS = {
    "perf_counter_ns": (time.perf_counter_ns, "perf_counter", 1),
    "monotonic_ns": (time.monotonic_ns, "monotonic", 1),
    "time_ns": (time.time_ns, "time", 1),
    "process_time_ns": (time.process_time_ns, "process_time", 1),
    "perf_counter": (time.perf_counter, "perf_counter", 1e9),
}
BATCH_CALLS = 1000
MAX_N = 10_000_000
MAX_THREADS = 1024
MAX_CPU = 4095
ROUND_TIMEOUT_NS = 1_000_000_000
WORKER_TIMEOUT_S = 60
USAGE = ("usage: probe.py info | cost API N | steps API N | path API N | stamp API"
         " | cross API CPU_A CPU_B ROUNDS | threads API K N [CPUS] | serve")
SHAPES = {"info": 0, "cost": 2, "steps": 2, "path": 2, "stamp": 1, "cross": 4, "threads": 3, "serve": 0}
OPTIONAL = {"threads": 1}  # threads' CPU list may be left out: then its workers are not pinned


def fail(message, status=64):
    sys.stderr.write(f"probe-{LANG}: {message}\n")
    sys.stderr.flush()
    os._exit(status)


def number(text, what, lo, hi):
    if not re.fullmatch(r"[0-9]{1,12}", text) or not lo <= int(text) <= hi:
        fail(f"bad {what} '{text}': want an integer from {lo} to {hi}")
    return int(text)


def api_of(name):
    if name not in APIS:
        fail(f"unknown API '{name}': want one of {' '.join(APIS)}")
    return APIS[name]


def fmt(x):
    """A number in C-locale decimal: integers as such, others to 1/1000 ns."""
    x = round(x, 3)
    if x == int(x):
        return str(int(x))
    return f"{x:.3f}".rstrip("0")


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def read_line():
    """The next line of stdin without its newline, or None at end of input."""
    line = sys.stdin.buffer.readline()
    if not line:
        return None
    return line.rstrip(b"\n").decode("latin-1")


def cmd_info():
    say(f"runtime {platform.python_implementation()} {platform.python_version()}")
    for name, (_, clock, _) in APIS.items():
        res_s = time.get_clock_info(clock).resolution
        say(f"api {name} claim_ns={fmt(res_s * 1e9)} origin=clock "
            f"claim_source=time.get_clock_info('{clock}').resolution = {res_s!r} s")


def run_batch(f, count):
    # ten calls a turn: the for loop's own cost is spread over ten calls
    for _ in range(count // 10):
        f(); f(); f(); f(); f(); f(); f(); f(); f(); f()
    for _ in range(count % 10):
        f()


def cmd_cost(name, n):
    f = api_of(name)[0]
    batch = min(n, BATCH_CALLS)
    batches = n // batch
    clock = time.perf_counter_ns
    for _ in range(batches):  # warm-up: n calls, as the JITs get
        run_batch(f, batch)
    per_call = []
    for _ in range(batches):
        t0 = clock()
        run_batch(f, batch)
        t1 = clock()
        per_call.append((t1 - t0) / batch)
    per_call.sort()
    mid = len(per_call) // 2
    p50 = per_call[mid] if len(per_call) % 2 else (per_call[mid - 1] + per_call[mid]) / 2
    mean = sum(per_call) / len(per_call)
    # the median's 95% interval by order statistics: ranks n/2 -+ 0.98 sqrt(n), 0-based, clamped
    w = 0.98 * math.sqrt(batches)
    lo, hi = max(0, math.floor(batches / 2 - w)), min(batches - 1, math.ceil(batches / 2 + w))
    say(f"cost {name} method=batch unit=ns n={batches * batch} batch={batch} min={fmt(per_call[0])} "
        f"p50={fmt(p50)} mean={fmt(mean)} max={fmt(per_call[-1])} timer=perf_counter_ns "
        f"p50_lo={fmt(per_call[lo])} p50_hi={fmt(per_call[hi])}")


def hist_line(steps_ns):
    """least_ns, zero, backward, max_backward_ns and hist= of the contract."""
    zero = backward = 0
    max_back = 0
    least = None
    bins = {}
    for s in steps_ns:
        if s < 0:
            backward += 1
            max_back = max(max_back, -s)
            continue
        if s == 0:
            zero += 1
            upper = 0
        else:
            least = s if least is None else min(least, s)
            upper = 1
            while upper < s:
                upper *= 2
        bins[upper] = bins.get(upper, 0) + 1
    hist = ",".join(f"{u}:{c}" for u, c in sorted(bins.items()))
    return (f"least_ns={'none' if least is None else fmt(least)} zero={zero} backward={backward} "
            f"max_backward_ns={fmt(max_back)} hist={hist}")


def cmd_steps(name, n):
    f, _, unit_ns = api_of(name)
    if n < 2:
        fail(f"bad n '{n}': steps needs at least 2 reads")
    values = [f() for _ in range(n)]
    steps = [(b - a) * unit_ns for a, b in zip(values, values[1:])]
    say(f"steps {name} n={n} {hist_line(steps)}")


def cmd_path(name, n):
    f = api_of(name)[0]
    run_batch(f, n)  # as the JIT probes do: the window holds the steady state
    os.write(2, b"cb-path-begin\n")
    for _ in range(n):
        v = f()
    os.write(2, b"cb-path-end\n")
    return v


def cmd_stamp(name, serving):
    """A value per line read; alone until end of input, within serve until a line cb-end."""
    f, _, unit_ns = api_of(name)
    while True:
        line = read_line()
        if line is None or (serving and line == "cb-end"):
            return
        v = f()
        say(str(v if unit_ns == 1 else round(v * unit_ns)))


def cmd_cross(name, cpu_a, cpu_b, rounds):
    f, _, unit_ns = api_of(name)
    # seq, t1: under the GIL each store is whole and in order (the release the contract asks)
    box = [0, 0]
    lost = [0]
    violations = []
    pinned = [True, True]
    start = threading.Barrier(2, timeout=10)

    def side(me, cpu):
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:
            pinned[me] = False
        start.wait()
        for r in range(rounds):
            if r % 2 == me:  # writer: a->b on even rounds, b->a on odd
                box[1] = f()
                box[0] = r + 1
                continue
            deadline = time.monotonic_ns() + ROUND_TIMEOUT_NS
            while box[0] < r + 1:
                time.sleep(0)  # lets the writer take the GIL now, not at the next switch interval
                if time.monotonic_ns() > deadline:
                    break
            else:
                t1 = box[1]
                t2 = f()
                if t2 < t1:
                    violations.append((t1 - t2) * unit_ns)
                continue
            lost[0] += 1

    threads = [threading.Thread(target=side, args=(0, cpu_a)), threading.Thread(target=side, args=(1, cpu_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(rounds * 1.0 + 30)
        if t.is_alive():
            fail("cross: a thread did not finish in time", 1)
    say(f"cross {name} a={cpu_a} b={cpu_b} rounds={rounds} violations={len(violations)} "
        f"max_violation_ns={fmt(max(violations, default=0))} lost={lost[0]} "
        f"pinned={'self' if all(pinned) else 'no'}")


def parse_cpus(text):
    """Linux's CPU list format ("0-3,8"), or exit 64."""
    cpus = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        a = number(lo, "cpus", 0, MAX_CPU)
        b = number(hi, "cpus", a, MAX_CPU) if hi or "-" in part else a
        cpus.extend(range(a, b + 1))
    return cpus[:MAX_THREADS]


def involuntary_switches():
    """This thread's involuntary context switches, or None where /proc cannot say."""
    try:
        with open("/proc/thread-self/status", "rb") as f:
            for line in f:
                if line.startswith(b"nonvoluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def known(v):
    return "-" if v is None else str(v)


def cmd_threads(name, k, n, cpus):
    f = api_of(name)[0]
    clock = time.perf_counter_ns
    chunk = max(1, min(1000, n // 20))  # chunks of about 1000 calls, at least 20: the least is an idle CPU's
    chunks, rest = divmod(n, chunk)
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    out_r, out_w = os.pipe()
    sys.stdout.flush()
    pids = []
    for me in range(k):
        pid = os.fork()
        if pid == 0:
            # whatever happens, the child ends here: it must never return into serve's loop,
            # read the stdin the parent shares with it, or answer cb-served
            status = 1
            try:
                os.close(go_w)
                cpu = None
                if cpus:
                    try:
                        os.sched_setaffinity(0, {cpus[me % len(cpus)]})
                        cpu = cpus[me % len(cpus)]
                    except OSError:
                        pass
                run_batch(f, n)  # warm-up, as in cost
                d = [0] * chunks
                os.write(ready_w, b"r")
                os.read(go_r, 1)  # the common start: EOF when the parent closes go_w
                sw0, cpu0 = involuntary_switches(), time.thread_time_ns()
                t0 = prev = clock()
                for c in range(chunks):
                    run_batch(f, chunk)
                    now = clock()
                    d[c] = now - prev
                    prev = now
                run_batch(f, rest)
                t1 = clock()
                cpu1, sw1 = time.thread_time_ns(), involuntary_switches()
                d.sort()
                sw = None if sw0 is None or sw1 is None else sw1 - sw0
                os.write(out_w, f"{me} {known(cpu)} {fmt(d[0] / chunk)} {fmt(d[chunks // 2] / chunk)} {t1 - t0} "
                                f"{cpu1 - cpu0} {known(sw)}\n".encode())
                status = 0
            finally:
                os._exit(status)
        pids.append(pid)
    os.close(ready_w)
    os.close(out_w)
    os.close(go_r)

    def read_all(fd, count, what):
        data = b""
        deadline = time.monotonic() + WORKER_TIMEOUT_S
        while data.count(b"r" if what == "ready" else b"\n") < count:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                fail(f"threads: the workers were not {what} within {WORKER_TIMEOUT_S} s", 1)
            chunk_read = os.read(fd, 4096)
            if not chunk_read:
                fail(f"threads: a worker ended before it was {what}", 1)
            data += chunk_read
        return data

    read_all(ready_r, k, "ready")
    os.close(go_w)
    rows = sorted((line.split() for line in read_all(out_r, k, "done").decode().splitlines()), key=lambda r: int(r[0]))
    for pid in pids:
        os.waitpid(pid, 0)
    per_call = [int(r[4]) / n for r in rows]
    pinned = "self" if cpus and all(r[1] != "-" for r in rows) else "no"
    cols = [",".join(r[i] for r in rows) for i in range(1, 7)]
    say(f"threads {name} k={k} n={n} per_call_ns={fmt(sum(per_call) / k)} "
        f"max_per_call_ns={fmt(max(per_call))} chunk={chunk} pinned={pinned} cpu={cols[0]} least_ns={cols[1]} "
        f"median_ns={cols[2]} wall_ns={cols[3]} run_ns={cols[4]} nivcsw={cols[5]} workers=processes")


def serve():
    """Each line of stdin one command, run as alone, its answer followed by cb-served."""
    while True:
        line = read_line()
        if line is None:
            return
        if line:
            run(line.split(" "), serving=True)
            say("cb-served")


def run(words, serving=False):
    """One command, from the command line or a line of serve: the one dispatcher of both."""
    if not words:
        fail(USAGE)
    cmd, args = words[0], words[1:]
    if cmd not in SHAPES:
        fail(f"unknown command '{cmd}'; {USAGE}")
    if not SHAPES[cmd] <= len(args) <= SHAPES[cmd] + OPTIONAL.get(cmd, 0):
        fail(f"{cmd} takes {SHAPES[cmd]} arguments; {USAGE}")
    if cmd == "serve":
        if serving:
            fail("serve: already serving")
        return serve()
    if cmd == "info":
        return cmd_info()
    api_of(args[0])
    if cmd in ("cost", "steps", "path"):
        n = number(args[1], "n", 1, MAX_N)
        return {"cost": cmd_cost, "steps": cmd_steps, "path": cmd_path}[cmd](args[0], n)
    if cmd == "stamp":
        return cmd_stamp(args[0], serving)
    if cmd == "cross":
        return cmd_cross(args[0], number(args[1], "cpu_a", 0, MAX_CPU), number(args[2], "cpu_b", 0, MAX_CPU),
                         number(args[3], "rounds", 1, MAX_N))
    return cmd_threads(args[0], number(args[1], "k", 1, MAX_THREADS), number(args[2], "n", 1, MAX_N),
                       parse_cpus(args[3]) if len(args) == 4 else [])


if __name__ == "__main__":
    try:
        run(sys.argv[1:])
    except BrokenPipeError:
        os._exit(1)
