"""The host's own C library (issue 48, section 5): clockbench-os's helper
build/os/clockbench-os-libc, dynamically linked and bound to an old glibc
symbol baseline, measures clock_gettime, gettimeofday, time and clock
through this host's libc.so.6; its figures are the os_latency records of
path libc, each naming the library; clockbench-os's own static rows are
path libc-static, the bundle's copy. A helper that is absent, fails or
hangs is one line, and the run goes on with its exit status unaffected;
with no glibc loader it runs under musl's, where that is."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.paths import ROOT

pytestmark = pytest.mark.timed  # clockbench-os measures this machine

PROGRAM = ROOT / "build" / "os" / "clockbench-os"
HELPER = ROOT / "build" / "os" / "clockbench-os-libc"
MUSL_LOADER = Path("/lib/ld-musl-x86_64.so.1")
LIBC_CALLS = {"clock_gettime(CLOCK_REALTIME)", "clock_gettime(CLOCK_MONOTONIC)", "clock_gettime(CLOCK_MONOTONIC_RAW)",
              "clock_gettime(CLOCK_REALTIME_COARSE)", "clock_gettime(CLOCK_MONOTONIC_COARSE)", "clock_gettime(CLOCK_BOOTTIME)",
              "clock_gettime(CLOCK_TAI)", "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)", "clock_gettime(CLOCK_THREAD_CPUTIME_ID)",
              "gettimeofday", "time", "clock"}


def records(text: str) -> list[dict]:
    return [json.loads(line[4:]) for line in text.splitlines() if line.startswith("@cb ")]


def of(recs, kind):
    return [r for r in recs if r["type"] == kind]


def built() -> None:
    # a test that needs the programs fails (does not skip) without them: `make test` builds them
    for f in (PROGRAM, HELPER):
        assert f.is_file(), f"{f} is missing: `make os` builds it"


def run(program: Path = PROGRAM, *args, timeout=120):
    built()
    return subprocess.run([str(program), "--no-lang", "--quick", "--current-only", *args], capture_output=True, text=True,
                          timeout=timeout)


def host_glibc() -> str:
    """This host's glibc version by ldd, the way a person would ask ("ldd (Debian GLIBC 2.36-9+deb12u14) 2.36")."""
    first = subprocess.run(["ldd", "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
    return first.split()[-1]


def lone_copy(tmp_path: Path, helper: str | None) -> Path:
    """clockbench-os copied alone into a folder, with `helper` (a script's text) beside it as its helper, or none."""
    built()
    shutil.copy2(PROGRAM, tmp_path / "clockbench-os")
    if helper is not None:
        h = tmp_path / "clockbench-os-libc"
        h.write_text(helper)
        h.chmod(0o755)
    return tmp_path / "clockbench-os"


@pytest.fixture(scope="module")
def quick():
    p = run()
    return p, records(p.stdout)


def glibc_versions_needed(path: Path) -> dict[str, set[str]]:
    """Every GLIBC_ version an ELF's dynamic symbols name: {version: {symbol, ...}}."""
    out = subprocess.run(["objdump", "-T", str(path)], capture_output=True, text=True, timeout=30, check=True).stdout
    needed: dict[str, set[str]] = {}
    for line in out.splitlines():
        m = re.search(r"\(?(GLIBC_[0-9.]+)\)?\s+(\S+)$", line)
        if m:
            needed.setdefault(m.group(1), set()).add(m.group(2))
    return needed


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.removeprefix("GLIBC_").split("."))


def test_the_helper_is_dynamic_and_needs_no_glibc_version_above_2_17():
    built()
    head = subprocess.run(["readelf", "-lW", "-d", str(HELPER)], capture_output=True, text=True, timeout=30).stdout
    assert "Requesting program interpreter: /lib64/ld-linux-x86-64.so.2" in head  # dynamic: the host's loader and libc
    assert re.findall(r"NEEDED.*\[(.*)\]", head) == ["libc.so.6"]  # nothing but libc: no libm, no libdl, no librt
    needed = glibc_versions_needed(HELPER)
    newer = {v: s for v, s in needed.items() if version_tuple(v) > (2, 17)}
    assert not newer, f"needs {newer}: it would not load on glibc 2.17"
    assert "clock_gettime" in needed.get("GLIBC_2.17", set())
    assert {"__libc_start_main", "gettimeofday", "time", "clock", "gnu_get_libc_version"} <= needed.get("GLIBC_2.2.5", set())


def test_the_version_check_itself_catches_a_newer_version(tmp_path):
    # the same check on a program built plainly here (crt1.o of glibc 2.34+: __libc_start_main@GLIBC_2.34)
    src = tmp_path / "plain.c"
    src.write_text("#include <string.h>\nint main(int c, char **v) { char b[64]; memcpy(b, v[0], (size_t)c); return b[1]; }\n")
    subprocess.run(["gcc", "-O0", "-o", str(tmp_path / "plain"), str(src)], check=True, timeout=60)
    needed = glibc_versions_needed(tmp_path / "plain")
    if max(map(version_tuple, needed)) <= (2, 17):
        pytest.skip(f"this host's glibc links a plain program at {sorted(needed)} only: nothing newer to catch")
    assert any(version_tuple(v) > (2, 17) for v in needed)


def test_the_libc_records_are_this_hosts_glibc(quick):
    p, recs = quick
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    host = [r for r in of(recs, "os_latency") if r["path"] == "libc"]
    assert {r["call"] for r in host} == LIBC_CALLS
    want = host_glibc()
    assert want == os.confstr("CS_GNU_LIBC_VERSION").split()[-1]  # ldd and the running Python agree on this host's glibc
    for r in host:
        lib = r["libc"]
        assert lib["name"] == "glibc" and lib["version"] == want and lib["linked"] == "dynamic", r
        assert Path(lib["file"]).resolve() == Path(lib["file"]) and Path(lib["file"]).name.startswith("libc"), lib
        assert 0 <= r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["p999_ns"] <= r["max_ns"], r
        assert r["n"] >= 100 and r["bracket_overhead_ticks"] > 0
        lo, hi = r["p50_ci_ns"]
        assert lo <= r["p50_ns"] <= hi, r
    # the file is the libc.so.6 this host's loader gives a program (ldd's answer for the helper)
    ldd = subprocess.run(["ldd", str(HELPER)], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"libc\.so\.6 => (\S+)", ldd)
    assert m and Path(m.group(1)).resolve() == Path(host[0]["libc"]["file"]), ldd
    once = of(recs, "os_libc")
    assert len(once) == 1 and once[0]["measured"] is True and once[0]["libc"]["version"] == want and once[0]["loader"] is None
    said = [line for line in p.stdout.splitlines() if line.startswith("  libc: ")]
    assert said == [f"  libc: the host's own C library, glibc {want} ({host[0]['libc']['file']}), through a dynamically linked helper"]


def test_the_static_rows_are_marked_as_the_bundles_copy(quick):
    p, recs = quick
    static = [r for r in of(recs, "os_latency") if r["path"] == "libc-static"]
    assert {r["call"] for r in static} == LIBC_CALLS
    for r in static:
        lib = r["libc"]
        assert lib["name"] == "glibc" and lib["linked"] == "static" and lib["file"] == str(PROGRAM.resolve()), r
    assert not [r for r in of(recs, "os_latency") if r["path"] == "libc" and r["libc"]["linked"] != "dynamic"]
    said = [line for line in p.stdout.splitlines() if line.startswith("  libc-static: ")]
    assert len(said) == 1 and "linked into clockbench-os (the bundle's copy, not the host's)" in said[0], said
    table = [line.split() for line in p.stdout.splitlines() if line.startswith("  clock_gettime(CLOCK_MONOTONIC) ")]
    assert [t[1] for t in table] == ["libc-static", "libc", "vdso", "syscall"], table


def check_goes_on(p, why: str):
    """A helper that could not measure: one line why, the static rows kept, exit status as without it."""
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    recs = records(p.stdout)
    said = [line for line in p.stdout.splitlines() if line.startswith("  libc: ")]
    assert len(said) == 1 and "the host's own C library not measured: " in said[0] and why in said[0], said
    assert not [r for r in of(recs, "os_latency") if r["path"] == "libc"]
    assert {r["call"] for r in of(recs, "os_latency") if r["path"] == "libc-static"} == LIBC_CALLS
    rec = of(recs, "os_libc")[0]
    assert rec["measured"] is False and why in rec["reason"] and rec["libc"] is None and rec["static_libc"]["linked"] == "static"
    assert of(recs, "summary")[0]["status"] == "passed"


def test_an_absent_helper_is_one_line_and_the_run_goes_on(tmp_path):
    p = run(lone_copy(tmp_path, None))
    check_goes_on(p, f"no helper {tmp_path}/clockbench-os-libc")


def test_a_failing_helper_is_one_line_and_the_run_goes_on(tmp_path):
    p = run(lone_copy(tmp_path, "#!/bin/sh\necho 'libc: broken on purpose' >&2\nexit 3\n"))
    check_goes_on(p, "exited with status 3: libc: broken on purpose")


def test_a_helper_that_talks_nonsense_is_one_line(tmp_path):
    p = run(lone_copy(tmp_path, "#!/bin/sh\necho 'hello'\n"))
    check_goes_on(p, "its first line is not 'libc name=... version=... file=...'")


def test_a_hanging_helper_is_killed_and_said(tmp_path):
    # its bound under --quick: 10 s and each of the 12 calls' 100 ms budget twice over
    p = run(lone_copy(tmp_path, "#!/bin/sh\necho 'libc name=glibc version=9.99 file=/nowhere'\nexec sleep 600\n"), timeout=90)
    check_goes_on(p, "hung: killed after 12 s")
    assert subprocess.run(["pgrep", "-f", f"{tmp_path}/clockbench-os-libc"], capture_output=True).returncode == 1  # nothing left


def test_without_a_glibc_loader_it_runs_under_musls(tmp_path):
    """The helper with its loader's name changed to one no host has stands
    for a musl host (Alpine: no /lib64/ld-linux-x86-64.so.2): clockbench-os
    runs it under musl's loader, which gives it musl as libc.so.6."""
    if not MUSL_LOADER.exists():
        pytest.skip(f"no {MUSL_LOADER} here (apt install musl; make deps installs it)")
    built()
    data = HELPER.read_bytes()
    old, new = b"/lib64/ld-linux-x86-64.so.2\0", b"/lib64/ld-nolib-x86-64.so.2\0"
    assert len(old) == len(new) and data.count(old) == 1
    shutil.copy2(PROGRAM, tmp_path / "clockbench-os")
    (tmp_path / "clockbench-os-libc").write_bytes(data.replace(old, new))
    (tmp_path / "clockbench-os-libc").chmod(0o755)
    p = run(tmp_path / "clockbench-os")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    recs = records(p.stdout)
    usage = subprocess.run([str(MUSL_LOADER)], capture_output=True, text=True, timeout=30).stderr
    version = re.search(r"Version (\S+)", usage).group(1)
    host = [r for r in of(recs, "os_latency") if r["path"] == "libc"]
    assert {r["call"] for r in host} == LIBC_CALLS
    for r in host:
        assert r["libc"]["name"] == "musl" and r["libc"]["version"] == version and "musl" in r["libc"]["file"], r
    assert of(recs, "os_libc")[0]["loader"] == str(MUSL_LOADER)
    assert "run by musl's loader: no glibc loader here" in p.stdout


def test_the_bundle_refuses_a_helper_that_needs_a_newer_glibc(tmp_path):
    """scripts/bundle.sh with a helper built plainly here (its crt1.o names __libc_start_main@GLIBC_2.34):
    one line naming the version, status 1, and no bundle left."""
    built()
    src = tmp_path / "plain.c"
    src.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-O0", "-o", str(tmp_path / "plain"), str(src)], check=True, timeout=60)
    if max(map(version_tuple, glibc_versions_needed(tmp_path / "plain"))) <= (2, 17):
        pytest.skip("this host's glibc links a plain program at GLIBC_2.17 or below: nothing newer to refuse")
    lang = tmp_path / "lang"
    for f in ("probe-cpp-libstdcxx", "probe-cpp-libcxx", "probe-rust", "probe-go", "java/Probe.class", "probe.py", "probe.js",
              "Probe.exe", "Probe.runtimeconfig.json"):
        (lang / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROGRAM, lang / f)  # a static program stands in for each probe
    out = tmp_path / "bundle" / "clockbench-os-test-x86_64-linux"
    p = subprocess.run([str(ROOT / "scripts" / "bundle.sh"), str(out), "test", str(PROGRAM), str(lang), "1700000000",
                        str(tmp_path / "plain")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.fullmatch(r"error: clockbench-os-libc needs GLIBC_2\.3\d+( GLIBC_\S+)*: it would not load on an older glibc "
                        r"\(os/hostlibc/glibc_baseline\.h\)\n", p.stderr), p.stderr
    assert not out.exists() and not (tmp_path / "bundle" / "clockbench-os-test-x86_64-linux.tar.gz").exists()
