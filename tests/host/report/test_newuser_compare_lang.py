"""`compare BARE OS` of a bare run and an OS run with languages, and the OS
page's order table, as a new user met them (issue 44, section 5): the
ladder's bare row gives the bare image's own least step of the very read it
names (rdtscp's beneath tsc, as the table above it), never another read's;
a clock that is not the clocksource's (a CPU-time clock) says so under
every clocksource, and so does the user-space rdtsc measured once; the "!"
legend has one wording and the BARE/OS ladder explains no "b" it does not
use; the heading never reads "bare bare and ..."; and the HTML order table
of a 1-CPU machine has no "1 thread | 2 threads | 1 threads". From the
real runs tests/fixtures/tcg-q35.log (the image under TCG) and
tests/fixtures/os-vm-lang-intervals.log (Debian's Linux in the same QEMU
machine, 1 CPU, Go and Python on tsc, hpet and acpi_pm)."""

from __future__ import annotations

import re

from helpers.paths import FIXTURES
from helpers.tool import run_cli
from clockbench.records import results
from clockbench.report import ladder, os_side, report

BARE = FIXTURES / "tcg-q35.log"
VM = FIXTURES / "os-vm-lang-intervals.log"


def test_the_bare_rows_least_step_is_the_bare_images_own_reads(tmp_path):
    bare = results.from_log(BARE.read_text())
    # rdtsc steps coarser than rdtscp, as on a host whose plain RDTSC is trapped: the tsc row's read is rdtscp
    bare["resolution"]["rdtsc"]["min_step_ns"] = 22.31
    vm = results.from_log(VM.read_text())
    cs_rows = os_side.clocksource_rows(bare, vm)
    above = dict(zip(cs_rows[0], next(r for r in cs_rows if r[0] == "tsc")))
    tsc = next(t for t in ladder.tables(vm, bare) if t["clocksource"] == "tsc")
    first = tsc["rows"][0]
    assert first["read"].startswith("rdtscp (the image") and above["bare counter"] == "rdtscp"
    assert first["step"] == "0.385 ns" and above["bare least step"] == "0.385 ns", (first, above)


def test_a_clock_that_is_not_the_clocksources_is_marked_under_every_clocksource():
    vm = results.from_log(VM.read_text())
    for t in ladder.tables(vm):
        cpu = next(r for r in t["rows"] if r["read"] == "process_time_ns")
        assert cpu["clock"] == "PROCESS_CPUTIME_ID (CPU time: not the clocksource)", (t["clocksource"], cpu)
        bare = t["rows"][0]
        if t["clocksource"] == "tsc":
            assert bare["read"] == "rdtsc (user space; no bare run given)"
        else:  # measured once, on tsc
            assert bare["read"] == "rdtsc (user space, measured on tsc; no bare run given)", bare


def test_compare_bare_and_os_says_each_legend_once_and_never_bare_bare(capsys, tmp_path):
    bare = tmp_path / "bare.log"
    bare.write_text(BARE.read_text())
    r = run_cli(capsys, "compare", bare, VM, "--html", tmp_path / "c.html")
    assert r.code == 0, r
    flat = " ".join(r.out.split())
    assert "bare bare" not in flat and "bare (the image, no OS) and os-vm-lang-intervals through the OS" in flat
    # one wording of "!", the one the ladder judges by (half the least step)
    legends = set(re.findall(r"!: [^;:]*", flat))
    assert legends == {os_side.CLAIM_LEGEND}, legends
    # the BARE/OS ladder has a method column, not a "b" mark: no legend for one
    assert "b: " not in flat and not re.search(r"\d b\b", r.out)
    page = (tmp_path / "c.html").read_text()
    assert "bare bare" not in page and "finer than the least step" not in page
    assert max(map(len, r.out.split("\n"))) < 160
    # a bare run and two OS runs of different machines: the warning and the OS runs' languages against each other
    r = run_cli(capsys, "compare", bare, VM, FIXTURES / "os-lang-intervals.log")
    assert r.code == 0, r
    assert max(map(len, r.out.split("\n"))) < 160, max(r.out.split("\n"), key=len)
    flat = " ".join(r.out.split())
    assert "WARNING: different machines" in flat and "Python: different runtimes, CPython 3.11.2" in flat
    assert "Go time.Now on tsc: " in flat and "faster in os-lang-intervals, beyond both intervals" in flat


def test_the_order_table_of_a_1_cpu_machine_names_each_thread_column_once(tmp_path):
    vm = results.from_log(VM.read_text())
    assert {r["threads_n"] for r in vm["lang_clock"]} == {1}
    report.write(vm, tmp_path)
    page = (tmp_path / "report.html").read_text()
    at = page.index("In order, across CPUs and threads")
    head = re.search(r"<tr>(<th>.*?)</tr>", page[at:]).group(1)
    cols = re.findall(r"<th>(.*?)</th>", head)
    assert cols[-3:] == ["1 thread", "2 threads", "judged"], cols
    row = re.search(r"<tr[^>]*><td class=\"nw\">Go</td>.*?</tr>", page[at:]).group(0)
    assert row.count("<td") == len(cols), (row, cols)
    # with more CPUs than two, the N column is there
    for r in vm["lang_clock"]:
        r["threads_n"], r["threads_n_ns"] = 4, r["threads_1_ns"]
    assert ladder.tables(vm)[0]["thread_heads"] == ["1 thread", "2 threads", "4 threads"]
