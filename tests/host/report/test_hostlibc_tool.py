"""The host tool on a clockbench-os run with the host's own C library
(issue 48, section 5; tests/fixtures/os-hostlibc-host.log: `clockbench-os
--quick --current-only --lang go,cpp-libstdc++ --lang-calls 500` on a 2-vCPU
AMD EPYC KVM guest, Debian 12's glibc 2.36, clocksource tsc): the store's os_p50_ns:<cs>/libc is the host's
library and .../libc-static the static copy, the ladder's and the page's
libc rows are the host's, the page names both libraries; without the
host's (the helper could not run) the ladder's libc rows are the static
copy's, named so, and nothing claims the host's."""

from __future__ import annotations

from helpers.paths import FIXTURES
from clockbench.records import figures, records, results
from clockbench.report import ladder, os_side

FIXTURE = FIXTURES / "os-hostlibc-host.log"
TEXT = FIXTURE.read_text()
MONO = "clock_gettime(CLOCK_MONOTONIC)"


def derived(text: str) -> dict:
    res = results.from_log(text)
    return {f.name: f for f in figures.derive(res, records.parse_log(text).records)}


def without_host_libc(text: str) -> str:
    """The same run as if its helper had failed: no record of path libc, and os_libc saying why."""
    out = []
    for line in text.splitlines():
        if line.startswith('@cb {"type":"os_latency"') and '"path":"libc",' in line:
            continue
        if line.startswith('@cb {"type":"os_libc"'):
            line = ('@cb {"type":"os_libc","measured":false,"reason":"the helper /x/clockbench-os-libc: exited with status 3",'
                    '"helper":"/x/clockbench-os-libc","loader":null,"libc":null,'
                    '"static_libc":{"name":"glibc","version":"2.36","file":"/x/clockbench-os","linked":"static"}}')
        out.append(line)
    return "\n".join(out) + "\n"


def test_the_store_keeps_the_hosts_libc_and_the_static_copy_apart():
    figs = derived(TEXT)
    host, static = figs["os_p50_ns:tsc/libc"], figs["os_p50_ns:tsc/libc-static"]
    res = results.from_log(TEXT)
    lat = {r["path"]: r for r in res["os_latency"] if r["call"] == MONO}
    assert host.value == lat["libc"]["p50_ns"] and static.value == lat["libc-static"]["p50_ns"]
    assert "the host's own C library, glibc 2.36 (/usr/lib/x86_64-linux-gnu/libc.so.6)" in host.detail
    assert "the glibc linked into clockbench-os (the bundle's copy)" in static.detail
    # without the host's: no libc figure at all, the static copy's kept
    figs = derived(without_host_libc(TEXT))
    assert "os_p50_ns:tsc/libc" not in figs and "os_p50_ns:tsc/libc-static" in figs


def test_the_ladders_libc_rows_are_the_hosts_else_the_static_copys_named_so():
    res = results.from_log(TEXT)
    rows = ladder.tables(res)[0]["rows"]
    libc = [r for r in rows if r["layer"] == "libc"]
    assert [r["read"] for r in libc] == [MONO, "clock_gettime(CLOCK_REALTIME)"]
    assert {r["path"] for r in libc} == {"host libc"}
    mono = {r["path"]: r for r in res["os_latency"] if r["call"] == MONO}
    assert libc[0]["p50_ns"] == mono["libc"]["p50_ns"]
    # the clock's least step: the static copy's back-to-back reads of the same clock
    step = next(r for r in res["os_resolution"] if r["call"] == MONO and r["path"] == "libc-static")["min_step_ns"]
    assert libc[0]["step"] == figures.ns(step)
    rows = ladder.tables(results.from_log(without_host_libc(TEXT)))[0]["rows"]
    assert not [r for r in rows if r["layer"] == "libc"]
    static = [r for r in rows if r["layer"] == "libc (static)"]
    assert len(static) == 2 and {r["path"] for r in static} == {"static glibc"}
    assert static[0]["p50_ns"] == mono["libc-static"]["p50_ns"]


def test_the_page_names_both_libraries_and_why_the_hosts_is_missing():
    res = results.from_log(TEXT)
    ctx = dict(os_side.context(res))
    assert ctx["C library"].startswith("the host's: glibc 2.36 (/usr/lib/x86_64-linux-gnu/libc.so.6); libc-static: glibc 2.36 (")
    paths = {r["path"] for r in os_side.call_rows(res, "tsc") if r["call"] == MONO}
    assert paths == {"libc (glibc 2.36)", "libc-static (glibc 2.36)", "vdso", "syscall"}
    ctx = dict(os_side.context(results.from_log(without_host_libc(TEXT))))
    assert ctx["C library"].startswith("the host's not measured: the helper /x/clockbench-os-libc: exited with status 3")
    # an older log (no os_libc record): nothing said
    old = "\n".join(line for line in TEXT.splitlines() if '"type":"os_libc"' not in line)
    assert dict(os_side.context(results.from_log(old)))["C library"] == "-"


def test_other_clocks_are_the_hosts_library_where_measured():
    res = results.from_log(TEXT)
    rows = os_side.other_rows(None, res)
    head, body = rows[0], {r[0]: r for r in rows[1:]}
    assert body["gettimeofday"][head.index("path")] == "libc"
    assert body["gettimeofday"][head.index("OS least step")] != "-"  # the static copy's reads of the same clock
    rows = os_side.other_rows(None, results.from_log(without_host_libc(TEXT)))
    assert {r[0]: r for r in rows[1:]}["gettimeofday"][rows[0].index("path")] == "libc-static"
