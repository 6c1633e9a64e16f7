"""The native language probes' `serve` (docs/output.md, "Language probes: the
contract"): C++ with libstdc++ and with libc++, Rust and Go, each started
once and fed a script of commands through a real pipe. Each answer is read
by clockbench-os's own parser (os/os_lang_parse.c, through the host
library) and has the shape the same command gives alone, followed by
`cb-served`; a command split across two writes is still one command; stamp
answers until `cb-end`, its values increasing; each `path` writes its own
pair of markers on stderr and nothing else is written there; after `cross`
every thread of the process has the CPUs it had before (the pinned ones
ended or were given theirs back); EOF exits 0, and a bad command after good
ones exits 64 with the same one line the command gives alone, after the
earlier answers. Under strace, each of two `path` commands in one process
has its markers written by one thread, which on the TSC clocksource with a
vDSO makes no system call between them. How the probes are built, and a
missing toolchain (a failure under CI=true), as in test_lang_native.py."""

from __future__ import annotations

import os
import re
import select
import subprocess
import time

import pytest

from helpers.hostlib import as_json
from test_lang_native import PROBES, _build, _current_clocksource, _has_vdso, strace  # noqa: F401 (strace: a fixture)

# An API on a clock that never steps back, per probe: stamp's values must increase
API = {"cpp-libstdc++": "steady_clock", "cpp-libc++": "steady_clock", "rust": "Instant::now", "go": "time.Since"}
# the CPUs cross runs on: the first and last this test may use (one CPU: both ends on it)
CPUS = (sorted(os.sched_getaffinity(0))[0], sorted(os.sched_getaffinity(0))[-1])
TIMEOUT_S = 60
MARKERS = "cb-path-begin\ncb-path-end\n"


@pytest.fixture(scope="module")
def built():
    done = {}

    def get(lang: str):
        if lang not in done:
            done[lang] = _build(lang)
        return done[lang]
    return get


class Served:
    """A probe running `serve`, its stdin, stdout and stderr real pipes,
    every read bounded in time."""

    def __init__(self, path):
        self.proc = subprocess.Popen([str(path), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.out = b""
        self.err = b""
        self.closed = {"out": False, "err": False}

    def send(self, text: str):
        os.write(self.proc.stdin.fileno(), text.encode())

    def _pump(self, wait_s: float) -> bool:
        """Reads what the probe wrote within wait_s; False once both pipes are closed."""
        pipes = {"out": self.proc.stdout, "err": self.proc.stderr}
        open_pipes = [p for k, p in pipes.items() if not self.closed[k]]
        if not open_pipes:
            return False
        for pipe in select.select(open_pipes, [], [], max(wait_s, 0))[0]:
            chunk = os.read(pipe.fileno(), 65536)
            key = "out" if pipe is self.proc.stdout else "err"
            if not chunk:
                self.closed[key] = True
            elif key == "out":
                self.out += chunk
            else:
                self.err += chunk
        return True

    def answer(self, timeout_s: float = TIMEOUT_S) -> list[str]:
        """The lines before the next `cb-served`."""
        deadline = time.monotonic() + timeout_s
        while b"cb-served\n" not in self.out:
            left = deadline - time.monotonic()
            assert left > 0, f"no cb-served in {timeout_s} s; stdout {self.out[-500:]!r}, stderr {self.err[-500:]!r}"
            if not self._pump(left):
                pytest.fail(f"the probe ended (exit {self.proc.wait(5)}) before cb-served; stdout {self.out[-500:]!r}, "
                            f"stderr {self.err[-500:]!r}")
        text, self.out = self.out.split(b"cb-served\n", 1)
        return text.decode().splitlines()

    def stamp_value(self, timeout_s: float = 10) -> str:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.out:
            left = deadline - time.monotonic()
            assert left > 0 and self._pump(left), f"no stamp in {timeout_s} s: {self.out!r} {self.err!r}"
        line, self.out = self.out.split(b"\n", 1)
        return line.decode()

    def new_stderr(self) -> str:
        """What stderr holds now: written before the cb-served just read, so already in the pipe."""
        while True:
            open_pipes = [p for k, p in (("out", self.proc.stdout), ("err", self.proc.stderr)) if not self.closed[k]]
            if not open_pipes or not select.select(open_pipes, [], [], 0)[0]:
                break
            self._pump(0)
        text, self.err = self.err.decode(), b""
        return text

    def finish(self, timeout_s: float = TIMEOUT_S) -> int:
        """Closes stdin (EOF), reads to the end of both pipes, and returns the exit status."""
        self.proc.stdin.close()
        deadline = time.monotonic() + timeout_s
        while self._pump(deadline - time.monotonic()):
            assert time.monotonic() < deadline, f"the probe did not end in {timeout_s} s after EOF"
        return self.proc.wait(timeout=max(deadline - time.monotonic(), 1))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if not f.closed:
                f.close()


def alone(path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(path), *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT_S)


def shape(line: str) -> list[str]:
    """The words before the first '=' and each field's name: what a line
    says, without what it measured."""
    return [w.split("=", 1)[0] + "=" if "=" in w else w for w in line.split()]


def fixed(line: str, *names) -> dict:
    """The fields that echo the command, not a measurement."""
    f = dict(w.split("=", 1) for w in line.split() if "=" in w)
    return {n: f.get(n) for n in names}


def parsed(lib, kind: str, line: str, api: str) -> dict:
    r = as_json(lib.shim_lang_parse(kind.encode(), line.encode(), api.encode()))
    assert r["ok"], (line, r["why"])
    return r


def cpus_allowed(pid: int, tid: int) -> str | None:
    """A thread's Cpus_allowed_list, or None when it has gone."""
    try:
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            return next(l.split(":", 1)[1].strip() for l in f if l.startswith("Cpus_allowed_list:"))
    except (FileNotFoundError, ProcessLookupError):
        return None


def threads_not_on(pid: int, cpus: str, wait_s: float = 2.0) -> dict[int, str]:
    """The threads whose CPUs still differ from cpus after up to wait_s (a
    pinned thread that ends may be listed for a moment after its join)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except FileNotFoundError:
            return {}
        odd = {t: c for t in tids if (c := cpus_allowed(pid, t)) is not None and c != cpus}
        if not odd or time.monotonic() > deadline:
            return odd
        time.sleep(0.02)


# ---- a script of every command through one process ----

@pytest.mark.parametrize("lang", PROBES)
def test_serve_answers_each_command_as_alone_then_cb_served(lib, built, lang):
    path, api, l = built(lang), API[lang], list(PROBES).index(lang)
    s = Served(path)
    try:
        pid = s.proc.pid
        cpus_before = cpus_allowed(pid, pid)
        assert cpus_before, "no Cpus_allowed_list for the probe's main thread"

        # info, written in two pieces: a pipe may hand a line over in parts
        s.send("in")
        time.sleep(0.05)
        s.send("fo\n")
        info = s.answer()
        assert info == alone(path, "info").stdout.splitlines(), info
        r = as_json(lib.shim_lang_info(l, ("\n".join(info) + "\n").encode()))
        assert r["ok"] and r["n"] == len(PROBES[lang][1]), r

        for kind, args, names in [("cost", (2000,), ("method", "unit", "n")), ("steps", (2000,), ("n",))]:
            s.send(f"{kind} {api} {' '.join(map(str, args))}\n")
            lines = s.answer()
            assert len(lines) == 1, lines
            parsed(lib, kind, lines[0], api)
            by_itself = alone(path, kind, api, *args)
            assert by_itself.returncode == 0, by_itself.stderr
            assert shape(lines[0]) == shape(by_itself.stdout), (lines[0], by_itself.stdout)
            assert fixed(lines[0], *names) == fixed(by_itself.stdout, *names), (lines[0], by_itself.stdout)

        # stamp: a value per line, an empty line a question too, until cb-end
        s.send(f"stamp {api}\n")
        values = []
        for question in ("x\n", "\n", "cb-en\n", "y\n"):
            s.send(question)
            values.append(s.stamp_value())
        s.send("cb-end\n")
        assert s.answer() == [], "stamp wrote more than one value per line"
        for v in values:
            assert re.fullmatch(r"\d+", v) and parsed(lib, "stamp", v, "")["ns"] == int(v), v
        assert all(int(a) < int(b) for a, b in zip(values, values[1:])), values

        a, b = CPUS
        s.send(f"cross {api} {a} {b} 200\n")
        lines = s.answer()
        assert len(lines) == 1, lines
        x = parsed(lib, "cross", lines[0], api)
        assert (x["a"], x["b"], x["rounds"], x["pinned"]) == (a, b, 200, "self"), x
        by_itself = alone(path, "cross", api, a, b, 200)
        assert shape(lines[0]) == shape(by_itself.stdout), (lines[0], by_itself.stdout)
        # the serving thread keeps its CPUs; the threads cross pinned ended or have theirs back
        assert cpus_allowed(pid, pid) == cpus_before
        assert threads_not_on(pid, cpus_before) == {}, f"threads still pinned after cross (all had {cpus_before})"

        for k in (1, 2):
            s.send(f"threads {api} {k} 2000 {a},{b}\n")
            lines = s.answer()
            assert len(lines) == 1, lines
            t = parsed(lib, "threads", lines[0], api)
            assert (t["k"], t["n"], t["chunked"], t["pinned"]) == (k, 2000, True, "self"), t
            assert shape(lines[0]) == shape(alone(path, "threads", api, k, 2000, f"{a},{b}").stdout), lines[0]
        # each thread pinned to a CPU of its own: they ended, or have their CPUs back (Go's locked OS threads)
        assert cpus_allowed(pid, pid) == cpus_before
        assert threads_not_on(pid, cpus_before) == {}, f"threads still pinned after threads (all had {cpus_before})"
        assert s.new_stderr() == "", "a command other than path wrote to stderr"

        # path twice: a pair of markers each, around that command only
        for _ in range(2):
            s.send(f"path {api} 1000\n")
            lines = s.answer()
            assert lines == alone(path, "path", api, 1000).stdout.splitlines(), lines
            assert s.new_stderr() == MARKERS

        s.send("\n")  # an empty line: skipped, no cb-served
        s.send(f"steps {api} 2000\n")
        assert len(s.answer()) == 1
        assert s.finish() == 0, s.err
        assert s.out == b"" and s.err == b"", (s.out, s.err)
    finally:
        s.kill()


# ---- a bad command ends serve as it ends the command alone ----

BAD = [
    ("bogus", ("bogus",)),
    ("cost {api} 0", ("cost", "{api}", "0")),
    ("cost  {api} 10", ("cost", "", "{api}", "10")),  # two spaces: an empty word, as an empty argument
    ("cost {api} 10 ", ("cost", "{api}", "10", "")),
    ("stamp {api} extra", ("stamp", "{api}", "extra")),
    ("cross {api} 0 1", ("cross", "{api}", "0", "1")),
    ("info extra", ("info", "extra")),
]


@pytest.mark.parametrize("lang", PROBES)
@pytest.mark.parametrize("bad, argv", BAD, ids=[b for b, _ in BAD])
def test_a_bad_command_after_good_ones_exits_64_with_the_line_it_gives_alone(built, lang, bad, argv):
    path, api = built(lang), API[lang]
    by_itself = alone(path, *(a.format(api=api) for a in argv))
    assert by_itself.returncode == 64 and len(by_itself.stderr.splitlines()) == 1, by_itself
    s = Served(path)
    try:
        # all at once: several commands in one read, the one after the bad one never run
        s.send(f"info\nsteps {api} 100\n{bad.format(api=api)}\ninfo\n")
        assert s.answer()[0].startswith("runtime ")
        assert s.answer()[0].startswith(f"steps {api} ")
        assert s.finish() == 64
        assert s.out == b"", f"more was answered after the bad command: {s.out!r}"
        assert s.err.decode() == by_itself.stderr
    finally:
        s.kill()


@pytest.mark.parametrize("lang", PROBES)
@pytest.mark.parametrize("bad", ["serve", "x" * 1025])
def test_serve_in_serve_and_an_overlong_line_are_bad_commands(built, lang, bad):
    s = Served(built(lang))
    try:
        s.send(f"info\n{bad}\ninfo\n")
        assert s.answer()[0].startswith("runtime ")
        assert s.finish() == 64
        assert s.out == b"" and len(s.err.decode().splitlines()) == 1, (s.out, s.err)
        assert s.err.decode().startswith(f"{PROBES[lang][0]}: "), s.err
    finally:
        s.kill()


# ---- the path markers of two commands in one process, under strace ----

@pytest.mark.parametrize("lang", PROBES)
def test_each_path_in_serve_has_its_own_markers_around_its_own_calls(built, strace, lang, tmp_path):
    """strace -f over one serve with two path commands and others around
    them: two marker pairs, in order, each written by one thread in one
    write(2); no other write to fd 2; on the TSC clocksource with a vDSO
    that thread makes no system call between its markers."""
    path, api = built(lang), API[lang]
    log = tmp_path / "strace.txt"
    script = f"cost {api} 2000\npath {api} 1000\nthreads {api} 2 2000\nsteps {api} 2000\npath {api} 1000\ninfo\n"
    r = subprocess.run([strace, "-f", "-qq", "-o", str(log), str(path), "serve"], input=script, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stderr == MARKERS * 2, (r.returncode, r.stderr)
    assert r.stdout.count("cb-served\n") == 6, r.stdout
    lines = log.read_text().splitlines()
    marks = [(i, "begin" if "cb-path-begin" in l else "end") for i, l in enumerate(lines)
             if re.search(r'write\(2, "cb-path-(begin|end)\\n", \d+', l)]
    assert [m for _, m in marks] == ["begin", "end"] * 2, "\n".join(lines[-60:])
    assert len([l for l in lines if re.search(r"\bwrite\(2,", l)]) == 4, "another write to fd 2"
    vdso_tsc = _current_clocksource() == "tsc" and _has_vdso()
    for (b, _), (e, _) in zip(marks[::2], marks[1::2]):
        tid = lines[b].split()[0]
        assert lines[e].split()[0] == tid, "a pair of markers written by two threads"
        between = [l for l in lines[b + 1:e] if l.split()[0] == tid and "<... write resumed>" not in l]
        if vdso_tsc:
            assert between == [], between[:10]
