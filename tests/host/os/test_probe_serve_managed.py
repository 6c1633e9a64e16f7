"""The managed probes' `serve` (Java, Python, Node.js, .NET under Mono; docs/output.md, "Language
probes: the contract"), run with the real runtimes through a real pipe, as clockbench-os runs it:
one script of commands in one process gives, command by command, the answer the same command gives
alone (the same lines for info, the same shape otherwise), each followed by cb-served; stamp ends
at cb-end with values that increase; cross's pin lines are answered on the same pipe and leave no
thread of the probe pinned; each path gives its own marker pair on stderr and nothing else; EOF
exits 0; a bad line exits 64 with the line alone would give, after the answers before it. The
script also runs one process a command, and both times are recorded: the start-up serve saves.
Under CI=true a missing runtime fails (test_lang_managed.probe)."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import threading
import time

import pytest
from test_lang_managed import (CLOCK_CALLS, CPUS, LOST_MOST, PROBES, build_output,  # noqa: F401 (a fixture)
                               clocksource, fields, probe, strace_tool)

WAIT_S = 60  # one answer: a JVM or Mono under a loaded host's nice 19 is slow, never this slow
STAMPS = 3
PAIR = "cb-path-begin\ncb-path-end\n"


def script(api: str) -> list[list[str]]:
    """The commands, small enough to be quick: every command of the contract, path twice."""
    return [["info"], [], ["cost", api, "2000"], ["steps", api, "2000"], ["stamp", api],
            ["cross", api, str(CPUS[0]), str(CPUS[1]), "200"], ["threads", api, "1", "2000"],
            ["threads", api, "2", "2000", f"{CPUS[0]},{CPUS[1]}"], ["path", api, "1000"], ["path", api, "1000"]]


class Pipe:
    """A probe on pipes: stdout read line by line with a bounded wait, stderr gathered."""

    def __init__(self, argv: list[str]):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.out: queue.Queue[str | None] = queue.Queue()
        self.err: list[str] = []
        self.ended = False
        self.readers = [threading.Thread(target=self._lines, daemon=True),
                        threading.Thread(target=self._err, daemon=True)]
        for t in self.readers:
            t.start()

    def _lines(self):
        for line in self.p.stdout:
            self.out.put(line.rstrip("\n"))
        self.out.put(None)

    def _err(self):
        for line in self.p.stderr:
            self.err.append(line)

    def send(self, line: str):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def line(self) -> str | None:
        """The next line of stdout, None at its end (and after)."""
        if self.ended:
            return None
        try:
            line = self.out.get(timeout=WAIT_S)
        except queue.Empty:
            pytest.fail(f"no answer within {WAIT_S} s; stderr: {''.join(self.err)!r}")
        self.ended = line is None
        return line

    def stderr_now(self, want: str) -> str:
        """stderr once it holds want (written before the line just read, but read by another thread)."""
        deadline = time.monotonic() + 10
        while "".join(self.err) != want and time.monotonic() < deadline:
            time.sleep(0.01)
        return "".join(self.err)

    def end(self) -> int:
        """Closes stdin and returns the exit status, stdout having ended with nothing more."""
        self.p.stdin.close()
        rest = []
        while (line := self.line()) is not None:
            rest.append(line)
        status = self.p.wait(timeout=WAIT_S)
        for t in self.readers:
            t.join(WAIT_S)
        assert rest == [], rest
        return status

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def unpinned_tasks(pid: int) -> dict[str, str]:
    """Each thread of the process whose allowed CPUs are not this test's own (which it inherited)."""
    mine = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            cpus = sorted(os.sched_getaffinity(int(tid)))
        except OSError:  # ended meanwhile
            continue
        if ",".join(map(str, cpus)) != mine:
            out[tid] = ",".join(map(str, cpus))
    return out


def converse(c: Pipe, words: list[str], serving: bool) -> tuple[list[str], list[tuple[int, int]]]:
    """One command of the script, as clockbench-os's runner would run it: stamp's lines sent one
    at a time, cross's and threads' pins done with sched_setaffinity and answered ok. Returns the answer's lines
    and the pins; within serve the answer must end with cb-served, alone with the end of stdout."""
    if serving:
        c.send(" ".join(words))
    answer, pins = [], []
    if words[0] == "stamp":
        for i in range(STAMPS):
            c.send(str(i))
            answer.append(c.line())
        if serving:
            c.send("cb-end")
        else:
            c.p.stdin.close()
    while (line := c.line()) not in (None, "cb-served"):
        m = re.fullmatch(r"pin (\d+) (\d+)", line)
        if words[0] in ("cross", "threads") and m:
            tid, cpu = int(m[1]), int(m[2])
            os.sched_setaffinity(tid, {cpu})
            pins.append((tid, cpu))
            c.send("ok")
            continue
        answer.append(line)
    assert line == ("cb-served" if serving else None), (words, answer, line)
    return answer, pins


def shape(lines: list[str]) -> list[tuple]:
    """What an answer's lines must share with the same command's answer alone: the leading
    words, the names of the fields, and for a stamp that each line is an integer."""
    out = []
    for line in lines:
        if re.fullmatch(r"-?\d+", line):
            out.append(("integer",))
            continue
        words = line.split()
        out.append((tuple(w for w in words[:2] if "=" not in w), tuple(sorted(fields(line)))))
    return out


def alone(argv: list[str], words: list[str]) -> tuple[list[str], str]:
    c = Pipe([*argv, *words])
    try:
        answer, _ = converse(c, words, serving=False)
        assert c.end() == 0, (words, c.err)
        return answer, "".join(c.err)
    finally:
        c.kill()


@pytest.mark.parametrize("lang", PROBES)
def test_serve_answers_a_script_as_alone(lang, build_output, record_property):
    argv = probe(lang, build_output)
    api = PROBES[lang]["apis"][0]  # a monotonic clock in each: stamps must increase
    commands = script(api)

    t0 = time.monotonic()
    c = Pipe([*argv, "serve"])
    served = []
    try:
        for words in commands:
            if not words:  # an empty line: skipped, answered by nothing (the next answer would show it)
                c.send("")
                continue
            answer, pins = converse(c, words, serving=True)
            served.append((words, answer))
            if words[0] == "stamp":
                values = [int(v) for v in answer]
                assert values == sorted(set(values)), values
            if words[0] == "threads" and len(words) == 5:  # pinned: by itself (Python's workers) or at its request
                f = fields(answer[0])
                assert f["cpu"] == words[4] and f["pinned"] == ("self" if lang == "python" else "requested"), (pins, f)
                assert sorted(cpu for _, cpu in pins) == ([] if lang == "python" else sorted(CPUS)), pins
            if words[0] in ("cross", "threads") and len(words) == 5:
                f = fields(answer[0])
                assert words[0] == "threads" or (int(f["lost"]) <= LOST_MOST and (f["violations"], f["max_violation_ns"]) == ("0", "0")), f
                if words[0] == "cross" and lang == "python":  # pins its threads itself, each with sched_setaffinity(0, ...)
                    assert pins == [] and f["pinned"] == "self", (pins, f)
                elif words[0] == "cross":
                    assert [cpu for _, cpu in pins] == list(CPUS) and f["pinned"] == "requested", (pins, f)
                # the pinned threads ended with the command; the serving thread kept its CPUs.
                # A thread joined may still be leaving the kernel's task list a moment after
                # (Python's join returns once the thread's Python part is done: seen once in
                # the busy lane), so it is given 2 s to go; one that stays pinned fails.
                left = unpinned_tasks(c.p.pid)
                deadline = time.monotonic() + 2
                while left and time.monotonic() < deadline:
                    time.sleep(0.01)
                    left = unpinned_tasks(c.p.pid)
                assert left == {}, left
            if words[0] == "path":
                pairs = sum(1 for w, _ in served if w[0] == "path")
                assert c.stderr_now(PAIR * pairs) == PAIR * pairs, c.err
            else:
                assert c.err == [], (words, c.err)
        assert c.end() == 0
        serve_s = time.monotonic() - t0
    finally:
        c.kill()
    assert "".join(c.err) == PAIR * 2

    t0 = time.monotonic()
    each = [alone(argv, words) for words, _ in served]
    alone_s = time.monotonic() - t0
    for (words, answer), (answer1, err1) in zip(served, each):
        if words[0] == "info":
            assert answer == answer1
        else:
            lines = {"stamp": STAMPS, "path": 0}.get(words[0], 1)
            assert shape(answer) == shape(answer1) and len(answer) == lines, (words, answer, answer1)
        assert err1 == (PAIR if words[0] == "path" else ""), (words, err1)
    record_property("serve_s", round(serve_s, 3))
    record_property("one_process_each_s", round(alone_s, 3))
    print(f"{lang}: {len(served)} commands: one serve {serve_s:.2f} s, one process each {alone_s:.2f} s")


@pytest.mark.parametrize("lang", PROBES)
def test_serve_path_windows_hold_only_their_own_calls(lang, build_output, tmp_path):
    """strace -f over one serve with two path commands and other commands around them: two marker
    pairs, each written whole by one thread, and between them that thread reads no clock through a
    system call (on the TSC the vDSO serves each call) and makes next to no other system call;
    serve's reading of stdin and its cb-served lie outside both windows."""
    argv = probe(lang, build_output)
    api = PROBES[lang]["apis"][0]
    log = tmp_path / "strace.txt"
    lines_in = f"cost {api} 2000\npath {api} 1000\ninfo\npath {api} 1000\nsteps {api} 2000\n"
    r = subprocess.run([strace_tool(), "-f", "-qq", "-o", str(log), *argv, "serve"], input=lines_in,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stderr == PAIR * 2 and r.stdout.count("cb-served\n") == 5, (r.stderr, r.stdout)
    lines = log.read_text(errors="replace").splitlines()
    begin = [i for i, l in enumerate(lines) if 'write(2, "cb-path-begin\\n", 14' in l]
    end = [i for i, l in enumerate(lines) if 'write(2, "cb-path-end\\n", 12' in l]
    assert len(begin) == 2 and len(end) == 2 and begin[0] < end[0] < begin[1] < end[1], "\n".join(lines[-30:])
    if clocksource() != "tsc":
        pytest.skip(f"clocksource {clocksource()}: its system calls are the runner's to judge")
    for b, e in zip(begin, end):
        tid = lines[b].split()[0]
        assert lines[e].split()[0] == tid, "the markers were written by two threads"
        between = [l.split(None, 1)[1] for l in lines[b + 1:e] if l.split()[0] == tid and "resumed>" not in l]
        assert [l for l in between if l.startswith(CLOCK_CALLS)] == [], between[:10]
        assert not any(l.startswith(("read(0", "write(1")) for l in between), between[:10]
        assert len(between) < 10, between[:10]


BAD_LINES = [["bogus", "x"], ["steps", "API", "1"], ["cost", "no.such.api", "10"], ["info", "extra"]]


@pytest.mark.parametrize("lang", PROBES)
def test_serve_bad_line_exits_64_after_the_answers_before_it(lang, build_output):
    argv = probe(lang, build_output)
    api = PROBES[lang]["apis"][0]
    for bad in BAD_LINES + [["serve"]]:
        bad = [api if w == "API" else w for w in bad]
        c = Pipe([*argv, "serve"])
        try:
            info, _ = converse(c, ["info"], serving=True)
            cost, _ = converse(c, ["cost", api, "2000"], serving=True)
            assert info[0].startswith("runtime ") and cost[0].startswith(f"cost {api} "), (info, cost)
            c.send(" ".join(bad))
            try:
                c.send("info")  # never answered: the probe has ended
            except BrokenPipeError:  # and may be gone already
                pass
            assert c.line() is None
            assert c.p.wait(timeout=WAIT_S) == 64
            for t in c.readers:
                t.join(WAIT_S)
        finally:
            c.kill()
        assert len(c.err) == 1 and re.fullmatch(rf"probe-{lang}: [^\n]+\n", c.err[0]), (bad, c.err)
        if bad != ["serve"]:  # alone, serve is a command; within serve it is the one bad line of its own
            r = subprocess.run([*argv, *bad], capture_output=True, text=True, timeout=WAIT_S,
                               stdin=subprocess.DEVNULL)
            assert (r.returncode, r.stdout, r.stderr) == (64, "", c.err[0]), (bad, r)
