"""`clockbench capture` of several machines at once (multicapture.py), over
TCP serial consoles served by this test: two whole runs, one machine that
hangs half-way, one whose console dies, one that never answers. Each ends in
a log and a run of its own in the store, the others unharmed."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from helpers.logs import KVM, TCG
from helpers.ports import free_port
from helpers.tool import run_cli
from clockbench import errors
from clockbench.fleet import multicapture
from clockbench.runs import store


class Console:
    """A TCP serial console: accepts one connection, sends `data` in pieces,
    then holds the line open (`hang`) or closes it."""

    def __init__(self, data: bytes, hang: bool = False, close_after: int | None = None):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.data, self.hang, self.close_after = data, hang, close_after
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.sock.accept()
        data = self.data[:self.close_after] if self.close_after is not None else self.data
        for i in range(0, len(data), 8192):
            conn.sendall(data[i:i + 8192])
            time.sleep(0.002)
        if self.hang:
            self.done.wait(60)
        conn.close()
        self.sock.close()


def test_targets_parse():
    t = multicapture.parse_target("rack1=tcp:127.0.0.1:5000,firmware=uefi,boot=netboot-uefi")
    assert (t.name, t.port, t.meta) == ("rack1", "tcp:127.0.0.1:5000", {"firmware": "uefi", "boot": "netboot-uefi"})
    assert multicapture.parse_target("/dev/ttyUSB0").name == "/dev/ttyUSB0"
    assert multicapture.parse_target("labgrid:qemu-3").meta == {"place": "qemu-3"}
    with pytest.raises(errors.UsageError):
        multicapture.parse_target("a=tcp:1.2.3.4:5,colour=red")


def test_several_machines_at_once_one_hangs_one_dies_one_never_answers(tmp_path, capsys):
    good = Console(TCG.read_bytes())
    good2 = Console(KVM.read_bytes())
    hangs = Console(TCG.read_bytes()[:60_000], hang=True)
    dies = Console(KVM.read_bytes(), close_after=40_000)
    nobody = free_port()
    db = tmp_path / "s.db"
    start = time.monotonic()
    r = run_cli(capsys, "capture", f"good=tcp:127.0.0.1:{good.port},firmware=bios", f"good2=tcp:127.0.0.1:{good2.port}",
                f"hangs=tcp:127.0.0.1:{hangs.port}", f"dies=tcp:127.0.0.1:{dies.port}", f"nobody=tcp:127.0.0.1:{nobody}",
                "--idle", "3", "--timeout", "60", "--every", "1", "--log-dir", tmp_path / "logs", "--store", db)
    took = time.monotonic() - start
    hangs.done.set()
    assert took < 30, took  # the hung machine cost its idle time, not the timeout
    assert r.code == errors.NO_INPUT, r  # the worst: a port that never opened
    assert (tmp_path / "logs" / "good.log").read_bytes() == TCG.read_bytes()
    assert (tmp_path / "logs" / "good2.log").read_bytes() == KVM.read_bytes()
    assert (tmp_path / "logs" / "hangs.log").stat().st_size == 60_000
    assert (tmp_path / "logs" / "dies.log").stat().st_size == 40_000
    out = r.out
    assert "every machine has ended" in out
    for name in ("good", "good2", "hangs", "dies", "nobody"):
        assert any(l.strip().startswith(name + " ") for l in out.splitlines()), (name, out)
    with store.open_store(db) as st:
        rows = {x["machine"]: x for x in st.runs()}
    assert set(rows) == {"good", "good2", "hangs", "dies", "nobody"}
    assert rows["good"]["status"] == "passed" and rows["good"]["firmware"] == "bios" and rows["good2"]["status"] == "passed"
    assert rows["hangs"]["status"] == "incomplete" and "nothing new for 3 s" in rows["hangs"]["reason"]
    assert rows["dies"]["status"] == "incomplete" and "went away" in rows["dies"]["reason"]
    # a port that never opened read no record: the run did not run, and no fleet row counts it
    assert rows["nobody"]["status"] == store.DID_NOT_RUN and "cannot open" in rows["nobody"]["reason"]
    assert rows["nobody"]["tool"] is None and rows["good"]["tool"] == "clockbench"
    assert rows["hangs"]["exit"] == 4


def test_one_plain_port_is_the_single_capture(tmp_path, capsys):
    c = Console(TCG.read_bytes())
    r = run_cli(capsys, "capture", f"tcp:127.0.0.1:{c.port}", "--log", tmp_path / "one.log", "--timeout", "30",
                "--store", tmp_path / "s.db")
    assert r.code == 0 and (tmp_path / "one.log").read_bytes() == TCG.read_bytes(), r
    assert "stored as run 1" in r.out


def test_two_ports_with_one_name_is_a_usage_error(tmp_path, capsys):
    r = run_cli(capsys, "capture", "a=tcp:127.0.0.1:1", "a=tcp:127.0.0.1:2", "--log-dir", tmp_path)
    assert r.code == errors.USAGE and "NAME=PORT" in r.err
