"""What `clockbench run` shows on the terminal while the image runs: the
report's lines as the image prints them, without its machine records (the
log keeps them; `--records` shows them), and a progress bar fed by the
image's `progress` records (docs/output.md). On a terminal the bar is drawn
with rich at the bottom, under the report; elsewhere (a pipe, a CI log)
there is no bar, only a plain line now and then during a long phase.

Booted from the ISO, everything before the image's first line (firmware
and GRUB, with their escape codes) is held back: it stays in the log, and
is shown only if the image never starts."""

from __future__ import annotations

import json
import re
import sys
import threading
import time

from clockbench.records import records

# The image's first line: a note about the command line, the banner, or a record.
KERNEL_START = re.compile(r"^(clockbench \S+: |Note: |@cb \{)")
PLAIN_FIRST_S = 10  # on a non-terminal, a phase sized at least this long is announced
PLAIN_EVERY_S = 30  # and then said again at most this often
TICK_S = 0.25  # the bar moves on between records at this pace, by the phase's estimate
# what records.clean leaves of the firmware's screen control (OVMF's ESC[=3h)
_ESCAPES = re.compile(r"\x1b\[[0-9;?=]*[A-Za-z]")


def parse_progress(line: str) -> dict | None:
    """The progress record on this line, or None. Malformed ones are None
    (the log keeps them; `report` names them)."""
    if not line.startswith(records.PREFIX):
        return None
    try:
        rec = json.loads(line[len(records.PREFIX):])
    except ValueError:
        return None
    if not isinstance(rec, dict) or rec.get("type") != "progress" or not isinstance(rec.get("phase"), str):
        return None
    pct = rec.get("percent")
    left = rec.get("seconds_left")
    if not isinstance(pct, int) or isinstance(pct, bool) or not 0 <= pct <= 100:
        return None
    if left is not None and (not isinstance(left, int) or isinstance(left, bool) or left < 0):
        return None
    return rec


class Estimate:
    """A phase's progress between records: from the last record's percent
    toward 100 as the seconds it said were left pass, never past 99 until
    the image says so."""

    def __init__(self, phase: str, percent: int, seconds_left: int | None, now: float):
        self.phase, self.percent, self.seconds_left, self.t0 = phase, percent, seconds_left, now

    def at(self, now: float) -> tuple[float, float | None]:
        """(percent, seconds left) at host time now."""
        if self.seconds_left is None:
            return float(self.percent), None
        if self.seconds_left == 0:
            return float(self.percent), 0.0
        gone = max(0.0, now - self.t0)
        frac = min(gone / self.seconds_left, 0.99)
        pct = self.percent + (100 - self.percent) * frac
        return min(pct, 99.0) if self.percent < 100 else 100.0, max(0.0, self.seconds_left - gone)


class Terminal:
    """Takes the serial output as it arrives (feed, from one thread) and
    shows it. tty: draw a bar (default: whether out is a terminal)."""

    def __init__(self, out=None, show_records: bool = False, hold_until_image: bool = False, tty: bool | None = None,
                 console=None):
        self.out = out or sys.stdout
        self.show_records = show_records
        self.holding = hold_until_image
        self.held: list[str] = []
        self.image_started = not hold_until_image
        self.tty = self.out.isatty() if tty is None else tty
        self.partial = ""
        self.lock = threading.RLock()
        self.estimate: Estimate | None = None
        self.plain_said = 0.0
        self.phases_seen: list[str] = []
        self._console = console
        self._progress = None
        self._task = None
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()

    # --- input
    def feed(self, text: str) -> None:
        with self.lock:
            text = self.partial + text
            lines = text.split("\n")
            self.partial = lines.pop()
            for line in lines:
                self._line(line)

    def close(self) -> None:
        """Shows a last line without its newline, ends the bar."""
        with self.lock:
            if self.partial:
                self._line(self.partial)
                self.partial = ""
            self._end_bar()

    def held_text(self) -> str:
        """What came before the image's first line, when the image never
        started (else empty): the firmware's or GRUB's last words."""
        return "" if self.image_started else "\n".join(self.held)

    # --- lines
    def _line(self, raw: str) -> None:
        line = _ESCAPES.sub("", records.clean(raw))
        if not self.image_started:
            if KERNEL_START.match(line):
                self.image_started = True
            else:
                if line.strip():
                    self.held.append(line)
                return
        rec = parse_progress(line)
        if rec is not None:
            self._progress_record(rec)
        if line.startswith(records.PREFIX) and not self.show_records:
            return
        self._show(line)

    def _show(self, line: str) -> None:
        if self._progress is not None:
            self._progress.console.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)
        else:
            self.out.write(line + "\n")
            self.out.flush()

    # --- progress
    def _progress_record(self, rec: dict) -> None:
        now = time.monotonic()
        phase = rec["phase"]
        if phase not in self.phases_seen:
            self.phases_seen.append(phase)
        if phase == "done":
            self.estimate = None
            self._end_bar()
            return
        self.estimate = Estimate(phase, rec["percent"], rec["seconds_left"], now)
        if self.tty:
            self._draw(now)
        else:
            self._plain(rec, now)

    def _plain(self, rec: dict, now: float) -> None:
        left = rec["seconds_left"]
        if left is None:
            return
        starting = rec["percent"] == 0 and left >= PLAIN_FIRST_S
        if starting or (rec["percent"] > 0 and now - self.plain_said >= PLAIN_EVERY_S and left >= PLAIN_FIRST_S / 2):
            self.plain_said = now
            self.out.write(f"clockbench: {rec['phase']}: {rec['percent']} %, about {_seconds(left)} left\n")
            self.out.flush()

    def _draw(self, now: float) -> None:
        if self._progress is None:
            self._start_bar()
        self._update(now)

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        console = self._console or Console(file=self.out, force_terminal=True, highlight=False)
        self._progress = Progress(TextColumn("[bold]{task.description:<16}"), BarColumn(), TextColumn("{task.fields[left]}"),
                                  console=console, transient=True, auto_refresh=True, refresh_per_second=8)
        self._task = self._progress.add_task("", total=100, left="")
        self._progress.start()
        self._stop.clear()
        self._ticker = threading.Thread(target=self._tick, name="clockbench-progress", daemon=True)
        self._ticker.start()

    def _update(self, now: float) -> None:
        e = self.estimate
        if self._progress is None or e is None:
            return
        pct, left = e.at(now)
        if left is None:  # not sized ahead: a pulsing bar
            self._progress.update(self._task, description=e.phase, total=None, completed=0, left="measuring")
        else:
            self._progress.update(self._task, description=e.phase, total=100, completed=pct,
                                  left=f"{pct:3.0f} %  about {_seconds(left)} left")

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            with self.lock:
                self._update(time.monotonic())

    def _end_bar(self) -> None:
        if self._progress is None:
            return
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join(timeout=2)
        self._progress.stop()
        self._progress = None
        self._ticker = None


def _seconds(s: float) -> str:
    s = int(round(s))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
