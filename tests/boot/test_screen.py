"""What a person sees: the framebuffer console under GRUB on legacy BIOS
(VBE) and UEFI (GOP), and the VGA text screen of a direct boot, each ending
on the summary screen, with the failed and skipped checks by name and a QR
code (pixels on a framebuffer, half-block characters on a text screen)
that zbarimg decodes into the payload the serial records carry. Then the
final screen's keys, sent through QEMU's monitor: R pages through the whole
report, Q comes back, B reboots. A framebuffer is read back into text by
matching every 8x16 cell against the console font; a text screen is read
from its buffer at 0xb8000 through the monitor."""

from __future__ import annotations

import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers.paths import KERNEL, TEST_ISO
from helpers.tool import not_installed
from clockbench.records import decode, qrimage, records
from clockbench.machines import qemu, screen

TEXT_BUFFER = 0xB8000
# the end of the screen's last line, drawn after the serial port's (kernel/finish.c):
# "... Halted; it is safe to power off.", which a narrow panel beside the QR code
# wraps anywhere but inside a word; no other line on the screen has "off."
FINAL_LINE = "off."
PAGER_FOOTER = re.compile(r"^ Report lines (\d+)-(\d+) of (\d+): Up Down PgUp PgDn Home End; Q back; B reboot")


def carried_counters(recs):
    """The counters a payload carries: the four every PC has, and the APIC
    timer and paravirtual clocks only when present (the RTC has its own
    record and is not one of them)."""
    return [c["name"] for c in records.of_type(recs, "counter")
            if c["name"] in ("tsc", "hpet", "acpi_pm", "pit") or (c["present"] and c["name"] != "rtc")]

def read_cell(recs, lat) -> str:
    """The verdict's read column: the p50; where the p50 lies below the
    TSC's step (docs/output.md, `below_step`), the batch's figure marked
    "*" for a TSC variant (seen under TCG on a loaded host), else "<step"."""
    if not lat.get("below_step"):
        return f"{lat['p50_ns']:.1f}"
    if lat.get("batch_ns_per_read") is not None:
        counter = "tsc" if lat["counter"] == "rdtsc" else lat["counter"]
        cell = records.one(recs, "verdict", counter=counter)["read"]
        assert cell.endswith("*") and abs(float(cell[:-1]) - lat["batch_ns_per_read"]) <= 0.0051, (cell, lat)
        return cell
    return f"<{records.one(recs, 'tsc_step')['step_ns']:.1f}"


def need_zbar():
    if not qrimage.zbar_available():
        not_installed("zbarimg is missing under CI=true: `make deps` installs it (Debian package zbar-tools)",
                      "zbarimg not installed (Debian package zbar-tools): the QR code was not decoded")


class Machine:
    """The image booted as on hardware (no isa-debug-exit, so it stays on
    its final screen), with QEMU's monitor to read the screen and press
    keys. Every wait is bounded."""

    def __init__(self, cfg: qemu.QemuConfig, tmp: Path, timeout: float = 240):
        self.tmp = tmp
        cfg.debug_exit = False
        cfg.monitor_socket = tmp / "monitor.sock"
        accel, _ = qemu.resolve_accel(cfg.accel)
        self.proc = subprocess.Popen(qemu.build_command(cfg, accel), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.chunks: list[bytes] = []
        threading.Thread(target=lambda: [self.chunks.append(c) for c in iter(lambda: self.proc.stdout.read1(4096), b"")],
                         daemon=True).start()
        self.mon = socket.socket(socket.AF_UNIX)
        try:
            # the serial port's last line: every record (the ending record comes after "run ended") is whole
            self.wait_serial("clockbench: halted; it is safe to power off.\r\n", timeout)
            self.mon.settimeout(10)
            self.mon.connect(str(cfg.monitor_socket))
            self._read_prompt()
        except BaseException:
            self.close()  # a machine left on its final screen polls the keyboard at full speed
            raise
        self.dumps = 0

    @property
    def serial(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")

    def wait_serial(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.serial:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"no {text!r} on the serial port within {timeout} s (QEMU exit {self.proc.poll()}): "
                                     f"{self.serial[-800:]!r}")
            time.sleep(0.2)

    def _read_prompt(self) -> str:
        got = b""
        deadline = time.monotonic() + 20
        while not got.endswith(b"(qemu) "):
            if time.monotonic() > deadline:
                raise AssertionError(f"QEMU's monitor gave no prompt: {got[-300:]!r}")
            got += self.mon.recv(65536)
        return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", got.decode("utf-8", "replace"))

    def command(self, line: str) -> str:
        self.mon.sendall(line.encode() + b"\n")
        return self._read_prompt()

    def text_cells(self) -> list[tuple[int, int]]:
        """The 80x25 text buffer: (character, attribute) per cell."""
        out = self.command(f"xp /4000xb {TEXT_BUFFER:#x}")
        data = [int(b, 16) for line in out.splitlines() if re.match(r"^[0-9a-f]{16}: ", line)
                for b in re.findall(r"0x([0-9a-f]{2})", line.split(": ", 1)[1])]
        assert len(data) == 4000, out[-300:]
        return list(zip(data[0::2], data[1::2]))

    def text_lines(self) -> list[str]:
        cells = self.text_cells()
        return ["".join(chr(c) if 0x20 <= c < 0x7F else "#" for c, _ in cells[r * 80:(r + 1) * 80]) for r in range(25)]

    def screendump(self) -> Path:
        self.dumps += 1
        path = self.tmp / f"screen{self.dumps}.ppm"
        self.command(f"screendump {path}")
        deadline = time.monotonic() + 10
        while not (path.exists() and path.stat().st_size > 1000):
            assert time.monotonic() < deadline, "no screendump"
            time.sleep(0.1)
        time.sleep(0.2)
        return path

    def key(self, name: str, until, what: str, timeout: float = 20):
        """Presses a key, then waits until until() holds (see settled)."""
        self.command(f"sendkey {name}")
        return self.settled(until, f"after key {name}: {what}", timeout)

    def settled(self, until, what: str, timeout: float = 20):
        """Polls until() until it holds on two reads in a row that agree, and returns that read.

        A read (screendump or xp) runs beside the guest's drawing, so one read can catch a page half drawn: rows
        below the one being drawn still old, even with the footer already new (seen on a loaded host)."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            got = until()
            if got and got == last:
                return got
            last = got
            assert time.monotonic() < deadline, f"{what} (last read: {last!r})"
            time.sleep(0.3)

    def close(self) -> None:
        try:
            self.mon.close()
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=20)


@pytest.fixture
def machine(tmp_path):
    made = []

    def start(cfg: qemu.QemuConfig, timeout: float = 240) -> Machine:
        m = Machine(cfg, tmp_path, timeout)
        made.append(m)
        return m

    yield start
    for m in made:
        m.close()


def panel(lines: list[str], width: int) -> str:
    """The text left of the QR code, one string, whitespace collapsed."""
    return " ".join(" ".join(l[:width].split()) for l in lines).strip()


def check_names(recs, result: str) -> list[str]:
    return [r["name"] for r in records.of_type(recs, "check") if r["result"] == result]


def test_text_screen_summary_and_its_qr_code(machine):
    m = machine(qemu.QemuConfig(boot="direct", kernel=KERNEL, accel="tcg"))
    recs = records.parse(m.serial)
    assert records.one(recs, "machine")["screen"] == "VGA text 80x25"
    qr = records.one(recs, "qr")
    size = 4 * qr["version"] + 17
    assert 1 <= qr["version"] <= 7, "version 7 (45 modules) is the largest that fits 25 rows of two modules"
    cells = m.settled(lambda: (c := m.text_cells()) and FINAL_LINE in "".join(chr(x) for x, _ in c) and c,
                      "the summary screen, to its last line")
    # the code: black-on-white half blocks against the right edge, the text left of it
    qr_cols = size + 4
    for r in range((size + 4 + 1) // 2):
        row = cells[r * 80:(r + 1) * 80]
        assert all(a == 0x70 and c in (0x20, 0xDB, 0xDC, 0xDF) for c, a in row[80 - qr_cols:]), r
    width = 80 - qr_cols - 1
    lines = m.text_lines()
    text = panel(lines, width)
    s = records.one(recs, "summary")
    assert lines[0].startswith("clockbench ")
    assert f"SUMMARY: {s['pass']} passed, {s['fail']} failed, {s['skip']} skipped" in text, "\n".join(lines)
    failed, skipped = check_names(recs, "FAIL"), check_names(recs, "SKIP")
    assert s["skip"] == len(skipped) and skipped and s["fail"] == len(failed)
    if "more (R: the report)" not in text:
        for name in failed + skipped:
            assert " ".join(name.split()) in text, (name, text)
    assert "Keys: R the report, B reboot" in text
    for name in ("tsc", "hpet", "acpi_pm", "pit"):
        lat = records.one(recs, "latency", counter="rdtsc" if name == "tsc" else name)
        assert re.search(rf"\b{name} +{re.escape(read_cell(recs, lat))} ns", text), (name, lat["p50_ns"], text)

    need_zbar()
    codes = qrimage.decode_image(m.screendump())
    assert codes == [qr["screen_payload"].encode()], "the code on the text screen scans to the payload the serial port records for it"
    assert decode.parse_payload(qr["payload"])["summary"]["status"] == s["status"], "the record also carries the whole payload"
    result = decode.parse_payload(codes[0].decode())
    assert result["summary"] == {"pass": s["pass"], "fail": s["fail"], "skip": s["skip"], "status": s["status"]}
    assert len(codes[0]) <= 154, "version 7 at level L holds 154 bytes"
    # what did not fit is said, never guessed: counters from the end, check names with +N
    names = [c["name"] for c in result["counters"]]
    every = carried_counters(recs)
    assert names == every[:len(names)] and len(names) + result["counters_not_carried"] == len(every) and len(names) >= 2
    for what, want in (("failed", failed), ("skipped", skipped)):
        carried = result["checks"][what]
        assert carried == want[:len(carried)] and len(carried) + result["checks"][f"{what}_not_carried"] == len(want)
    if failed:
        assert result["checks"]["failed"], "a failed check's name outranks the legacy counters"


def test_keys_page_the_report_come_back_and_reboot(machine):
    """A short run (only=read_cost, so most checks are skipped), then the keys."""
    m = machine(qemu.QemuConfig(boot="direct", kernel=KERNEL, accel="tcg", append="only=read_cost"))
    recs = records.parse(m.serial)
    qr = records.one(recs, "qr")
    summary = m.settled(lambda: (l := m.text_lines()) and any(FINAL_LINE in x for x in l) and l,
                        "the summary screen, to its last line")
    assert summary[0].startswith("clockbench ")
    report = [l for l in records.clean(m.serial).split("\n")]
    summary_line = next(l for l in report if l.startswith("SUMMARY:"))

    def footer():
        lines = m.text_lines()
        f = PAGER_FOOTER.match(lines[24])
        return (lines, tuple(int(x) for x in f.groups())) if f else None

    # R: the last page of the report, ending where the summary screen began
    lines, (first, last, total) = m.key("r", footer, "the pager's footer")
    assert last == total and last - first == 23 and total > 40
    assert any(l.rstrip() == summary_line for l in lines[:24]), lines
    assert all(cell[1] == 0x07 for cell in m.text_cells()[:24 * 80]), "the pager draws over the QR code"
    # Home: the first page, the banner as the serial port has it
    lines, (first, last, total) = m.key("home", lambda: (f := footer()) and f[1][0] == 1 and f, "Home: line 1")
    banner = next(l for l in report if l.startswith("clockbench "))
    assert next(l for l in lines if l.strip()).rstrip() == banner[:80].rstrip(), "\n".join(lines)
    # PgDn: the next 24 lines; Down: one more
    m.key("pgdn", lambda: (f := footer()) and f[1][0] == 25 and f, "PgDn: line 25")
    m.key("down", lambda: (f := footer()) and f[1][0] == 26 and f, "Down: line 26")
    # Q: the summary screen again, its QR code drawn again, still scanning
    lines = m.key("q", lambda: (l := m.text_lines()) and not PAGER_FOOTER.match(l[24]) and l, "Q: back to the summary")
    assert lines[0] == summary[0] and any("Keys: R the report, B reboot" in l for l in lines)
    need_zbar()
    assert qrimage.decode_image(m.screendump()) == [qr.get("screen_payload", qr["payload"]).encode()]
    # B: a reset; QEMU runs with -no-reboot, so the reset ends it, with 0
    m.command("sendkey b")
    m.wait_serial("clockbench: rebooting (B pressed on the final screen)", 20)
    assert m.proc.wait(timeout=30) == 0


def test_with_isa_debug_exit_nothing_waits_for_a_key(boot):
    """The run ends through isa-debug-exit, with its verdict, before the keys' loop."""
    b = boot(kernel=KERNEL, accel="tcg", append="only=read_cost", timeout=60)
    assert b.status in (0, 1) and b.result.seconds < 60, b.explain()
    assert "rebooting" not in b.output and b.lines("clockbench: run ended:")


@pytest.mark.parametrize("firmware", ["bios", "uefi"])
def test_summary_screen_and_its_qr_code(firmware, machine):
    m = machine(qemu.QemuConfig(boot="iso", iso=TEST_ISO, firmware=firmware, accel="tcg"))
    serial = m.serial
    recs = records.parse(serial)
    w, h, pixels = m.settled(lambda: (d := screen.read_ppm(m.screendump())) and
                             any(FINAL_LINE in x for x in screen.screen_text(*d)) and d, "the summary screen, to its last line")
    machine_rec = records.one(recs, "machine")
    assert machine_rec["screen"].startswith("framebuffer 1024x768, 32 bits per pixel")
    assert (w, h) == (1024, 768)
    # cells under the QR code match no glyph and read as '?': cut them off the right
    text = [l.rstrip("? ") for l in screen.screen_text(w, h, pixels)]
    summary = [l for l in serial.replace("\r", "").split("\n") if l.startswith("SUMMARY:")]
    assert summary and summary[0] in text, "\n".join(text)
    assert text[0].startswith("clockbench ") and text[0].endswith(": summary")
    assert any(l.startswith("CPU:") and machine_rec["brand"] in l for l in text)
    # under TCG the TSC's advice is the emulator's, as the report's verdict says
    tsc_verdict = records.one(recs, "verdict", counter="tsc")
    assert tsc_verdict["qualifier"] == "in this emulator"
    at = text.index("           -> in this emulator:")
    assert text[at + 1].strip() == tsc_verdict["advice"][:63], text[at:at + 2]
    for name in ("tsc", "hpet", "acpi_pm", "pit"):
        lat = records.one(recs, "latency", counter="rdtsc" if name == "tsc" else name)
        row = [l for l in text if l.startswith(f"  {name} ")]
        assert row and f"{read_cell(recs, lat)} ns" in row[0], (row, lat["p50_ns"])
    failed, skipped = check_names(recs, "FAIL"), check_names(recs, "SKIP")
    listed = " ".join(" ".join(l.split()) for l in text[text.index(summary[0]) + 1:])
    want = " ".join(f"{title} {', '.join(names)}" for title, names in (("Failed:", failed), ("Skipped:", skipped)) if names)
    assert listed.startswith(want) or "more (R: the report)" in listed, (want, listed)
    assert "Keys: R the report, B reboot" in text
    s = records.one(recs, "summary")
    status = ["passed", "failed", "nothing ran", "crashed"].index(s["status"])
    assert f"clockbench: run ended: {s['status']} (status {status}). Halted; it is safe to power off." in text
    assert not any(l.startswith("@cb ") for l in text), "machine records stay off the screen"

    # R: the pager, on the framebuffer too; Q back
    def fb_text():
        return [l.rstrip() for l in screen.screen_text(*screen.read_ppm(m.screendump()))]

    paged = m.key("r", lambda: (t := fb_text()) and PAGER_FOOTER.match(t[-1]) and t, "the framebuffer pager")
    assert summary[0] in paged
    m.key("q", lambda: (t := fb_text()) and t[0].endswith(": summary") and t, "Q: back to the summary")

    need_zbar()
    qr = records.one(recs, "qr")
    codes = qrimage.decode_image(m.screendump())
    assert codes == [qr["payload"].encode()]
    result = decode.parse_payload(codes[0].decode())
    assert result["summary"] == {"pass": s["pass"], "fail": s["fail"], "skip": s["skip"], "status": s["status"]}
    assert result["checks"]["failed"] == failed and result["checks"]["skipped"] == skipped
    assert result["not_carried"] == [] and result["counters_not_carried"] == 0, "a framebuffer's code carries everything"
    assert result["cpu"].endswith(machine_rec["brand"])
    assert [c["name"] for c in result["counters"]] == carried_counters(recs)
    f = records.one(recs, "frequency", counter="acpi_pm", reference="hpet")
    pm = result["counters"][2]
    assert abs(pm["ppm"] - f["ppm_vs_nominal"]) <= 0.005 + 1e-9
