"""Boot tests of command-line values the console cannot use: each gets a
"Note:" line on the serial port naming the value and what is used instead,
and the run still reports in full. Before, baud=0 or baud=115201 gave a run
that printed nothing at all and ended "passed"."""

from __future__ import annotations

import pytest

from clockbench.records import records

SHORT = "profile=quick duration=1"  # the notes come first; the measurements only need to end


def run(boot, words: str):
    b = boot(boot="direct", accel="tcg", append=f"{SHORT} {words}", timeout=120)
    assert b.status is not None and b.lines("SUMMARY: "), b.explain()
    assert records.one(b.records, "summary")
    return b


def text(b) -> str:
    """The serial output with wrapped lines joined: a long note is wrapped
    at 80 columns like every line for people."""
    return " ".join(b.output.split())


def console_line(b) -> str:
    lines = b.lines("Console:")
    assert len(lines) == 1, b.explain()
    return lines[0]


UNMADE = "is not a rate the UART can make (115200 / rate must be a whole number from 1 to 65535, or 110); using 115200 baud"


@pytest.mark.parametrize("value, note", [
    ("0", UNMADE),
    ("1", UNMADE),
    ("115201", UNMADE),
    ("abc", "is not a number; using 115200 baud"),
], ids=["0", "1", "115201", "abc"])
def test_a_baud_rate_the_uart_cannot_make_is_115200_with_a_note(boot, value, note):
    b = run(boot, f"baud={value}")
    assert b.lines(f"Note: baud={value} ") and f"Note: baud={value} {note}" in text(b), b.explain()
    assert "at 115200 baud" in console_line(b)


@pytest.mark.parametrize("value", ["com9", "0xZZ"])
def test_a_serial_port_that_is_not_one_is_com1_with_a_note(boot, value):
    b = run(boot, f"serial={value}")
    assert f"Note: serial={value} is not com1..com4, an I/O port from 0x1 to 0xfff8, or none; using com1 (0x3f8)" in text(b), b.explain()
    assert "serial port 0x3f8" in console_line(b)


def test_a_port_where_no_uart_answers_falls_back_to_com1(boot):
    # QEMU gives this machine one serial port, COM1: nothing answers at COM2.
    b = run(boot, "serial=com2")
    assert "Note: no UART answers at serial=com2 (port 0x2f8); using com1 (0x3f8)" in text(b), b.explain()
    assert "serial port 0x3f8" in console_line(b)


def test_good_values_give_no_note(boot):
    b = run(boot, "serial=0x3f8 baud=9600 screen=none")
    assert not b.lines("Note: serial") and not b.lines("Note: baud") and not b.lines("Note: screen"), b.explain()
    assert "serial port 0x3f8 at 9600 baud" in console_line(b)
