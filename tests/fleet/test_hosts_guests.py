"""A fleet whose hosts really differ (issue 43, "Done when"): the loopback
sshd hosts beside two os-vm guests booted with clocksource=hpet and
clocksource=acpi_pm (Debian's Linux under QEMU, reached over ssh through
hostfwd on 127.0.0.1: tests/helpers/guests.py), all through `clockbench
hosts -i INVENTORY`. Every host is stored under its inventory name, the
guests with the clocksource they were booted with, and `fleet` says in
words, on the terminal, in its JSON and on its HTML page, that those two
read time through a system call while the others read it in the vDSO.

Known answers: Linux 6.x has no vDSO mode for the HPET or the PM timer, so
there every Go time.Now is two system calls (CLOCK_REALTIME, then
CLOCK_MONOTONIC), and on this machine's tsc (the loopback hosts) none.

The guests themselves are held to what an os-vm host must be (these checks
had a guest of their own in tests/boot/test_os_vm_guest.py, 40 s of the
quiet lane): each reached by OpenSSH's client as root on the clocksource and
hostname it was booted with; reached by Ansible, which copies the bundle in
and fetches the log back (the playbook's run itself); `poweroff` over ssh
ends the hpet guest and its tool with 0; no QEMU of either is left."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from helpers.guests import running_guests
from helpers.ports import free_port
from helpers.tool import PYTHON, tool_env
from sshhosts import fleet_json, fleet_rows, recap_line, run_hosts, stored

# in the quiet lane, one at a time: two TCG guests beside the timed KVM tests
# made those see their vCPU away for seconds (test_stalls' baseline)
pytestmark = pytest.mark.timed

# Go alone: the sentence is about its time.Now (Python in a TCG guest only cost the quiet lane its start-up)
OS_ARGS = "--quick --lang go --lang-calls 500"


def fleet(db, *args) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "clockbench", "fleet", "--store", str(db), *args], capture_output=True, text=True,
                          timeout=120, env=tool_env())


def guest_is_booted_as_asked(g, key) -> None:
    """Reached by OpenSSH's client as root, on the clocksource and hostname it was booted with."""
    r = g.ssh(key, "cat /sys/devices/system/clocksource/clocksource0/current_clocksource; hostname; cat /proc/cmdline; id -u")
    out = r.stdout.decode().split("\n")
    assert r.returncode == 0, (r.stderr, g.explain())
    assert out[0] == g.clocksource and out[1] == g.hostname and f"clocksource={g.clocksource}" in out[2] and out[3] == "0", out


def poweroff_in_the_guest_ends_it(g, key) -> None:
    """`poweroff` run over ssh (busybox's, which signals init) powers the
    machine off, and the tool ends with 0 by itself."""
    g.ssh(key, "poweroff", timeout=60)
    try:
        g.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the guest did not power off within 60 s of `poweroff`:\n{g.explain()}")
    assert g.proc.returncode == 0, g.explain()
    assert "the guest powered off (QEMU status 0)" in g.output.read_text(), g.explain()


def test_the_guests_on_hpet_and_acpi_pm_are_said_in_words_as_the_hosts_that_read_time_by_a_system_call(ssh_fleet, tmp_path):
    began = time.monotonic()
    public = ssh_fleet.user_key.with_suffix(".pub")
    with running_guests([("hpet", free_port()), ("acpi_pm", free_port())], public, tmp_path / "guests") as (hpet, pm):
        for g in (hpet, pm):
            guest_is_booted_as_asked(g, ssh_fleet.user_key)
        ssh_fleet.add("vm-hpet", hpet.host, hpet.port, ansible_user="root")
        ssh_fleet.add("vm-acpi-pm", pm.host, pm.port, ansible_user="root")
        inventory = ssh_fleet.inventory(["a", "b", "c", "vm-hpet", "vm-acpi-pm"])
        r = run_hosts(ssh_fleet, tmp_path, inventory, os_args=OS_ARGS)
        poweroff_in_the_guest_ends_it(hpet, ssh_fleet.user_key)
    for g in (hpet, pm):
        left = subprocess.run(["pgrep", "-f", f"hostfwd=tcp:127.0.0.1:{g.port}-"], capture_output=True, text=True)
        assert left.stdout.strip() == "", f"a QEMU of {g.hostname} is left running: {left.stdout}"
    took = time.monotonic() - began
    print(f"the fleet of 3 loopback hosts and 2 os-vm guests, boots included: {took:.0f} s")
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    runs = stored(tmp_path / "runs.db")
    assert set(runs) == {"a", "b", "c", "vm-hpet", "vm-acpi-pm"}, r.stdout
    for name in runs:
        assert f"stored as run {runs[name]['id']}" in recap_line(r.stdout, name), r.stdout

    table = fleet_json(tmp_path / "runs.db")
    rows = fleet_rows(tmp_path / "runs.db", table)
    assert rows["vm-hpet"]["clocksource"] == "hpet" and rows["vm-acpi-pm"]["clocksource"] == "acpi_pm", rows
    # two a call on the guests (Go's scheduler and timers add reads of their own: 2.19 seen under TCG),
    # none on the loopback hosts' tsc
    for name in ("vm-hpet", "vm-acpi-pm"):
        go = rows[name]["languages"]["go"]
        assert go["api"] == "time.Now" and go["path"] == "syscall" and 1.95 <= go["syscalls_per_call"] <= 2.5, (name, go)
    for name in "abc":
        go = rows[name]["languages"]["go"]
        assert go["api"] == "time.Now" and go["syscalls_per_call"] < 0.1, (name, go)
    slow = min(rows[n]["languages"]["go"]["p50_ns"] for n in ("vm-hpet", "vm-acpi-pm"))
    fast = max(rows[n]["languages"]["go"]["p50_ns"] for n in "abc")
    assert slow > fast, (slow, fast)

    said = table["os_hosts"]["said"]
    sentence = next((s for s in said if "read time through a system call" in s), None)
    assert sentence, said
    assert re.match(r"2 of 5 hosts read time through a system call \(clocksource ", sentence), sentence
    assert "hpet: vm-hpet" in sentence and "acpi_pm: vm-acpi-pm" in sentence and "Go time.Now" in sentence, sentence
    assert set(table["os_hosts"]["outliers"]) >= {"vm-hpet", "vm-acpi-pm"}
    # the loopback hosts read the TSC by the vDSO: never said to read by a system call. A loopback
    # host may still be flagged for its cost or its run (the three share this machine with two TCG
    # guests: one's Go clock measured at over twice the others' is a true figure of that moment)
    for name in "abc":
        assert not [f for f in rows[name]["flags"] if f["kind"] == "syscall"], (name, rows[name]["flags"])
        print(name, "flags:", rows[name]["flags"])

    terminal = fleet(tmp_path / "runs.db")
    assert terminal.returncode == 0 and sentence in terminal.stdout, terminal.stdout[-3000:] + terminal.stderr[-2000:]
    page = tmp_path / "fleet.html"
    html = fleet(tmp_path / "runs.db", "--html", str(page))
    assert html.returncode == 0, html.stderr
    text = re.sub(r"<[^>]+>", "", page.read_text())
    assert "read time through a system call" in text and "vm-hpet" in text and "vm-acpi-pm" in text
