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
select() on the descriptor) would miss what the buffered one has already read ahead.

Python 3.6 and later (issue 48): where the runtime lacks an API (3.6 has no time.*_ns), `info` says
`api <name> absent=<why>` in its place and a command on it is refused; the batch timer is then
perf_counter in ns. The file parses on Python 2.7 and 3.x alike (no f-strings, no newer syntax), so
that an older Python is told so in one line, not by a SyntaxError."""

import math
import os
import platform
import re
import select
import sys
import threading
import time

LANG = "python"
NEED = (3, 6)


def too_old():
    """One line and exit 69 (EX_UNAVAILABLE) where this Python cannot run the probe at all."""
    sys.stderr.write("probe-%s: needs Python %d.%d or later; this is %s %d.%d.%d\n" % (
        LANG, NEED[0], NEED[1], platform.python_implementation(), sys.version_info[0], sys.version_info[1],
        sys.version_info[2]))
    sys.stderr.flush()
    os._exit(69)


if sys.version_info < NEED:
    too_old()

# API name -> (time's function name, get_clock_info name, ns per unit of its value), in the contract's order
API_LIST = [
    ("perf_counter_ns", "perf_counter", 1),
    ("monotonic_ns", "monotonic", 1),
    ("time_ns", "time", 1),
    ("process_time_ns", "process_time", 1),
    ("perf_counter", "perf_counter", 1e9),
]
# name -> (function, get_clock_info name, ns per unit) for the APIs this Python has; ABSENT: the others, and why
APIS = {}
ABSENT = {}
for _name, _clock, _unit in API_LIST:
    if hasattr(time, _name):
        APIS[_name] = (getattr(time, _name), _clock, _unit)
    else:
        ABSENT[_name] = "time.%s is absent (it came in Python 3.7); this is %s %s" % (
            _name, platform.python_implementation(), platform.python_version())


def _perf_counter_as_ns():
    return int(time.perf_counter() * 1e9)


def _thread_cpu_ns():
    return int(time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID) * 1e9)


# the batch timer (cost, threads) and the thread's CPU time, each in ns: the *_ns functions where
# the runtime has them, else the float ones (Python 3.6), to a float's precision
if "perf_counter_ns" in APIS:
    TIMER, TIMER_NAME = time.perf_counter_ns, "perf_counter_ns"
else:
    TIMER, TIMER_NAME = _perf_counter_as_ns, "perf_counter"
THREAD_CPU_NS = getattr(time, "thread_time_ns", _thread_cpu_ns)

BATCH_CALLS = 1000
CHECK_EVERY = 1024  # a steps read is one call: the budget is looked at once every CHECK_EVERY
MAX_N = 10000000
MAX_THREADS = 1024
MAX_CPU = 4095
MAX_BUDGET_MS = 3600000
ROUND_TIMEOUT_S = 1.0
WORKER_TIMEOUT_S = 60
USAGE = ("usage: probe.py info | cost API N [BUDGET_MS] | steps API N [BUDGET_MS] | path API N | stamp API"
         " | cross API CPU_A CPU_B ROUNDS [BUDGET_MS] | threads API K N [CPUS [BUDGET_MS]] | serve")
SHAPES = {"info": 0, "cost": 2, "steps": 2, "path": 2, "stamp": 1, "cross": 4, "threads": 3, "serve": 0}
# words a command may have beyond its shape: threads' CPU list (then its workers are pinned), and
# budget_ms after it; budget_ms on cost, steps and cross
OPTIONAL = {"threads": 2, "cost": 1, "steps": 1, "cross": 1}


def fail(message, status=64):
    sys.stderr.write("probe-%s: %s\n" % (LANG, message))
    sys.stderr.flush()
    os._exit(status)


def number(text, what, lo, hi):
    if not re.match(r"[0-9]{1,12}\Z", text) or not lo <= int(text) <= hi:
        fail("bad %s '%s': want an integer from %d to %d" % (what, text, lo, hi))
    return int(text)


def api_of(name):
    if name in ABSENT:
        fail("API '%s' is absent here: %s" % (name, ABSENT[name]))
    if name not in APIS:
        fail("unknown API '%s': want one of %s" % (name, " ".join(n for n, _, _ in API_LIST)))
    return APIS[name]


class Budget(object):
    """The optional bound on the whole of a command (cost, steps, cross, threads: docs/output.md,
    "Language probes: the contract"): its deadline is ms after the command starts, on
    time.monotonic. Without one (ms 0) the command runs as it always did and its line has no
    budget fields."""

    def __init__(self, ms):
        self.ms = ms
        self.start = time.monotonic()
        self.end = self.start + ms / 1000.0

    def over(self):
        return bool(self.ms) and time.monotonic() >= self.end

    def left(self):
        return self.end - time.monotonic()

    def suffix(self, cut):
        """What the line ends with: nothing, or " budget_ms=B cut=0|1"."""
        return " budget_ms=%d cut=%d" % (self.ms, 1 if cut else 0) if self.ms else ""


NO_BUDGET = Budget(0)


def fmt(x):
    """A number in C-locale decimal: integers as such, others to 1/1000 ns."""
    x = round(x, 3)
    if x == int(x):
        return str(int(x))
    return ("%.3f" % x).rstrip("0")


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
    say("runtime %s %s" % (platform.python_implementation(), platform.python_version()))
    for name, clock, _ in API_LIST:
        if name in ABSENT:
            say("api %s absent=%s" % (name, ABSENT[name]))
            continue
        res_s = time.get_clock_info(clock).resolution
        say("api %s claim_ns=%s origin=clock claim_source=time.get_clock_info('%s').resolution = %r s"
            % (name, fmt(res_s * 1e9), clock, res_s))


def run_batch(f, count):
    # ten calls a turn: the for loop's own cost is spread over ten calls
    for _ in range(count // 10):
        f(); f(); f(); f(); f(); f(); f(); f(); f(); f()
    for _ in range(count % 10):
        f()


def warm_up(f, batch, batches, budget):
    """batches batches of calls, as the JITs get; with a budget, stopped once half of it has gone
    (at least one batch), so that the calls that count have the other half."""
    half = budget.start + (budget.end - budget.start) / 2
    for _ in range(batches):
        run_batch(f, batch)
        if budget.ms and time.monotonic() >= half:
            return


def cmd_cost(name, n, budget):
    f = api_of(name)[0]
    batch = min(n, BATCH_CALLS)
    batches = n // batch
    clock = TIMER
    warm_up(f, batch, batches, budget)  # warm-up: n calls
    per_call = []
    for b in range(batches):
        t0 = clock()
        run_batch(f, batch)
        t1 = clock()
        per_call.append((t1 - t0) / batch)
        if budget.ms and b + 1 < batches and budget.over():
            break
    done = len(per_call)
    per_call.sort()
    mid = done // 2
    p50 = per_call[mid] if done % 2 else (per_call[mid - 1] + per_call[mid]) / 2
    mean = sum(per_call) / done
    # the median's 95% interval by order statistics: ranks n/2 -+ 0.98 sqrt(n), 0-based, clamped
    w = 0.98 * math.sqrt(done)
    lo, hi = max(0, int(math.floor(done / 2 - w))), min(done - 1, int(math.ceil(done / 2 + w)))
    say("cost %s method=batch unit=ns n=%d batch=%d min=%s p50=%s mean=%s max=%s timer=%s p50_lo=%s p50_hi=%s%s"
        % (name, done * batch, batch, fmt(per_call[0]), fmt(p50), fmt(mean), fmt(per_call[-1]), TIMER_NAME,
           fmt(per_call[lo]), fmt(per_call[hi]), budget.suffix(done < batches)))


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
            if least is None or s < least:
                least = s
            # the least power of two at or above s: that of its ceiling, a whole number
            upper = 1 << (int(math.ceil(s)) - 1).bit_length()
        bins[upper] = bins.get(upper, 0) + 1
    hist = ",".join("%d:%d" % (u, c) for u, c in sorted(bins.items()))
    return ("least_ns=%s zero=%d backward=%d max_backward_ns=%s hist=%s"
            % ("none" if least is None else fmt(least), zero, backward, fmt(max_back), hist))


def cmd_steps(name, n, budget):
    """With a budget, the reads are made CHECK_EVERY at a time and the deadline looked at between
    them; the step across a look is not counted."""
    f, _, unit_ns = api_of(name)
    if n < 2:
        fail("bad n '%d': steps needs at least 2 reads" % n)
    if not budget.ms:
        values = [f() for _ in range(n)]
        steps = [(b - a) * unit_ns for a, b in zip(values, values[1:])]
        say("steps %s n=%d %s" % (name, n, hist_line(steps)))
        return
    blocks = []
    done = 0
    while done < n:
        block = [f() for _ in range(min(CHECK_EVERY, n - done))]
        blocks.append(block)
        done += len(block)
        if done < n and budget.over():
            break
    steps = [(b - a) * unit_ns for block in blocks for a, b in zip(block, block[1:])]
    say("steps %s n=%d %s%s" % (name, done, hist_line(steps), budget.suffix(done < n)))


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
        say(str(v if unit_ns == 1 else int(round(v * unit_ns))))


def cmd_cross(name, cpu_a, cpu_b, rounds, budget):
    """With a budget, a round's wait is bounded by the time left as well as by 1 s, and no round
    starts past the deadline: the rounds done are those whose reader saw the value or gave it up
    after 1 s (lost); the rest are not done, and not lost."""
    f, _, unit_ns = api_of(name)
    # seq, t1: under the GIL each store is whole and in order (the release the contract asks)
    box = [0, 0]
    lost = [0]
    done = [0]
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
            now = time.monotonic()
            if budget.ms and now >= budget.end:
                return
            deadline = min(now + ROUND_TIMEOUT_S, budget.end) if budget.ms else now + ROUND_TIMEOUT_S
            while box[0] < r + 1:
                time.sleep(0)  # lets the writer take the GIL now, not at the next switch interval
                if time.monotonic() > deadline:
                    break
            else:
                t1 = box[1]
                t2 = f()
                if t2 < t1:
                    violations.append((t1 - t2) * unit_ns)
                done[0] += 1
                continue
            if budget.over():
                return  # the budget's end, not the round's second
            done[0] += 1
            lost[0] += 1

    threads = [threading.Thread(target=side, args=(0, cpu_a)), threading.Thread(target=side, args=(1, cpu_b))]
    for t in threads:
        t.start()
    bound = min(rounds * ROUND_TIMEOUT_S, budget.ms / 1000.0) if budget.ms else rounds * ROUND_TIMEOUT_S
    for t in threads:
        t.join(bound + 30)
        if t.is_alive():
            fail("cross: a thread did not finish in time", 1)
    rounds_done = done[0] if budget.ms else rounds
    say("cross %s a=%d b=%d rounds=%d violations=%d max_violation_ns=%s lost=%d pinned=%s%s"
        % (name, cpu_a, cpu_b, rounds_done, len(violations), fmt(max(violations) if violations else 0), lost[0],
           "self" if all(pinned) else "no", budget.suffix(rounds_done < rounds)))


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


def cmd_threads(name, k, n, cpus, budget):
    """With a budget, each worker looks at the deadline after each chunk (the chunk's own end,
    read anyway) and stops there when it has passed: at least one chunk each."""
    f = api_of(name)[0]
    clock = TIMER
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
                if budget.ms:
                    warm_up(f, chunk, chunks, budget)  # warm-up, as in cost
                else:
                    run_batch(f, n)
                d = []
                os.write(ready_w, b"r")
                os.read(go_r, 1)  # the common start: EOF when the parent closes go_w
                sw0, cpu0 = involuntary_switches(), THREAD_CPU_NS()
                t0 = prev = clock()
                for c in range(chunks):
                    run_batch(f, chunk)
                    now = clock()
                    d.append(now - prev)
                    prev = now
                    if budget.ms and c + 1 < chunks and budget.over():
                        break
                done = len(d) * chunk
                if len(d) == chunks:
                    run_batch(f, rest)
                    done = n
                t1 = clock()
                cpu1, sw1 = THREAD_CPU_NS(), involuntary_switches()
                d.sort()
                sw = None if sw0 is None or sw1 is None else sw1 - sw0
                os.write(out_w, ("%d %s %s %s %d %d %s %d\n" % (
                    me, known(cpu), fmt(d[0] / chunk), fmt(d[len(d) // 2] / chunk), t1 - t0, cpu1 - cpu0, known(sw),
                    done)).encode())
                status = 0
            finally:
                os._exit(status)
        pids.append(pid)
    os.close(ready_w)
    os.close(out_w)
    os.close(go_r)
    timeout_s = WORKER_TIMEOUT_S + (budget.ms / 1000.0 if budget.ms else 0)

    def read_all(fd, count, what):
        data = b""
        deadline = time.monotonic() + timeout_s
        while data.count(b"r" if what == "ready" else b"\n") < count:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                fail("threads: the workers were not %s within %d s" % (what, timeout_s), 1)
            chunk_read = os.read(fd, 4096)
            if not chunk_read:
                fail("threads: a worker ended before it was %s" % what, 1)
            data += chunk_read
        return data

    read_all(ready_r, k, "ready")
    os.close(go_w)
    rows = sorted((line.split() for line in read_all(out_r, k, "done").decode().splitlines()), key=lambda r: int(r[0]))
    for pid in pids:
        os.waitpid(pid, 0)
    per_call = [int(r[4]) / int(r[7]) for r in rows]
    pinned = "self" if cpus and all(r[1] != "-" for r in rows) else "no"
    cols = [",".join(r[i] for r in rows) for i in range(1, 8)]
    tail = (" done=%s%s" % (cols[6], budget.suffix(any(int(r[7]) < n for r in rows)))) if budget.ms else ""
    say("threads %s k=%d n=%d per_call_ns=%s max_per_call_ns=%s chunk=%d pinned=%s cpu=%s least_ns=%s "
        "median_ns=%s wall_ns=%s run_ns=%s nivcsw=%s workers=processes%s"
        % (name, k, n, fmt(sum(per_call) / k), fmt(max(per_call)), chunk, pinned, cols[0], cols[1], cols[2], cols[3],
           cols[4], cols[5], tail))


def serve():
    """Each line of stdin one command, run as alone, its answer followed by cb-served."""
    while True:
        line = read_line()
        if line is None:
            return
        if line:
            run(line.split(" "), serving=True)
            say("cb-served")


def budget_at(args, i):
    """budget_ms where the command has it (args[i]), else none."""
    return Budget(number(args[i], "budget_ms", 1, MAX_BUDGET_MS)) if len(args) > i else NO_BUDGET


def run(words, serving=False):
    """One command, from the command line or a line of serve: the one dispatcher of both."""
    if not words:
        fail(USAGE)
    cmd, args = words[0], words[1:]
    if cmd not in SHAPES:
        fail("unknown command '%s'; %s" % (cmd, USAGE))
    if not SHAPES[cmd] <= len(args) <= SHAPES[cmd] + OPTIONAL.get(cmd, 0):
        fail("%s takes %d arguments; %s" % (cmd, SHAPES[cmd], USAGE))
    if cmd == "serve":
        if serving:
            fail("serve: already serving")
        return serve()
    if cmd == "info":
        return cmd_info()
    api_of(args[0])
    if cmd in ("cost", "steps"):
        n = number(args[1], "n", 1, MAX_N)
        return {"cost": cmd_cost, "steps": cmd_steps}[cmd](args[0], n, budget_at(args, 2))
    if cmd == "path":
        return cmd_path(args[0], number(args[1], "n", 1, MAX_N))
    if cmd == "stamp":
        return cmd_stamp(args[0], serving)
    if cmd == "cross":
        a, b = number(args[1], "cpu_a", 0, MAX_CPU), number(args[2], "cpu_b", 0, MAX_CPU)
        rounds = number(args[3], "rounds", 1, MAX_N)
        return cmd_cross(args[0], a, b, rounds, budget_at(args, 4))
    k, n = number(args[1], "k", 1, MAX_THREADS), number(args[2], "n", 1, MAX_N)
    cpus = parse_cpus(args[3]) if len(args) >= 4 else []
    return cmd_threads(args[0], k, n, cpus, budget_at(args, 4))


if __name__ == "__main__":
    try:
        run(sys.argv[1:])
    except BrokenPipeError:
        os._exit(1)
