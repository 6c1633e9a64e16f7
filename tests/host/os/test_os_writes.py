"""What clockbench-os writes on the host it measures (docs/os-side.md, "What
a run reads and writes"): its log folder and nothing else, with the managed
runtimes (Java, Python, Node.js, Mono) that would otherwise leave files of
their own: HotSpot's /tmp/hsperfdata_USER/PID, Mono's /dev/shm/mono.PID.

The run is watched by strace(1) (`make deps` installs it), every system call
that can make, change or remove a file, for every process it starts. Under
strace the probes' own tracer (the system-call counts) cannot attach, so
those lines of the report fail: what is asserted is only what was written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.paths import ROOT

BUILD = Path(os.environ.get("CLOCKBENCH_BUILD", ROOT / "build"))
PROGRAM = BUILD / "os" / "clockbench-os"
LANG_DIR = BUILD / "lang"
LANGUAGES = "java,python,node,dotnet,go"
CHANGES = "open,openat,creat,mkdir,mkdirat,unlink,unlinkat,rename,renameat,renameat2,symlink,symlinkat,link,linkat,truncate"
# a path opened to write, made, removed or renamed; strace quotes each path
WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC")
PATH = re.compile(r'"([^"]*)"')


def _written(trace: str) -> set[str]:
    """Every path a successful call of the trace wrote, made or removed;
    a relative path (after a chdir, as HotSpot does into hsperfdata) as given."""
    out = set()
    for line in trace.splitlines():
        call = re.match(r"\d+\s+(\w+)\((.*)\)\s+=\s+(-?\d+)", line)
        if not call or int(call.group(3)) < 0:
            continue
        name, args = call.group(1), call.group(2)
        if name in ("open", "openat") and not WRITE_FLAGS.search(args):
            continue
        out.update(PATH.findall(args))
    return out


def test_a_run_with_the_managed_runtimes_writes_only_its_log_folder(tmp_path):
    assert PROGRAM.is_file(), f"{PROGRAM} is missing: `make os` builds it"
    strace = shutil.which("strace")
    assert strace, "strace is not installed (Debian: strace; `make deps` installs it)"
    for probe in ("java/Probe.class", "probe.py", "Probe.exe", "probe-go"):
        assert (LANG_DIR / probe).is_file(), f"{LANG_DIR / probe} is missing: `make lang` builds it"
    out = tmp_path / "run"
    trace = tmp_path / "trace"
    p = subprocess.run([strace, "-f", "-qq", "-o", str(trace), "-e", f"trace={CHANGES}", str(PROGRAM), "--quick", "--lang",
                        LANGUAGES, "--lang-dir", str(LANG_DIR), "--lang-calls", "500", "--reads", "200", "--rate-ms", "50",
                        # a JVM traced by strace, at the busy lane's lowest priority, can wait past 30 s for a
                        # CPU and be "NOT MEASURED (host busy)" (make test here): time for it to start
                        "--lang-timeout", "120",
                        "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    said = p.stdout
    assert "@cb {\"type\":\"summary\"" in said, said[-3000:] + p.stderr[-2000:]
    measured = {m for m in re.findall(r'"type":"lang_clock","language":"(\w+)"', said)}
    assert {"java", "python", "dotnet"} <= measured, measured  # the runtimes that would write were started
    written = _written(trace.read_text())
    own = {str(out), str(out / "os.log")}
    # /dev/null, and /proc/self/*: a runtime's own process settings (Mono's coredump_filter)
    others = {w for w in written - own if w != "/dev/null" and not w.startswith("/proc/self/")}
    assert not others, sorted(others)
    assert own <= written
