"""The plan of a run, before any machine starts: the image's kernel command
line (its profile= and duration= words, read as kernel/profile.c and
kernel/cmdline.c read them), and the run's time bound that follows from it.
One place for `run --append`, `os-vm` and the netboot machines file alike."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from clockbench import errors


def _usage(option: str, value, allowed: str) -> errors.UsageError:
    return errors.UsageError(f"{option} {value}: {allowed}")


PROFILES = ("quick", "standard", "soak")
# Seconds of drift window and stolen-time scan per profile (kernel/profile.c).
PROFILE_SECONDS = {"quick": (2, 0.5), "standard": (60, 5), "soak": (300, 30)}
# duration= as the image takes it (kernel/profile.c, kernel/cmdline.c): a
# whole number of seconds, decimal or 0x hexadecimal, from 1 to 86400.
DURATION_MIN_S, DURATION_MAX_S = 1, 86400
# The time bound: this much for booting (GRUB under nested KVM takes tens of
# seconds, a TCG run's fixed phases a minute or two) and the fixed phases,
# plus the timed windows, which may run WINDOW_CAP_FACTOR times as long (and
# 10 s more) to make up for time the CPU was away (experiments/exp_drift.c).
BOOT_AND_FIXED_S = 600
WINDOW_CAP_FACTOR = 3


def parse_duration(value: str) -> int | None:
    """A duration= value as the image reads it (kernel/cmdline.c
    cmdline_parse_u64, then the range in kernel/profile.c), or None where
    the image would ignore it."""
    m = re.fullmatch(r"0[xX]([0-9a-fA-F]+)|([0-9]+)", value)
    if not m:
        return None
    seconds = int(m.group(1), 16) if m.group(1) else int(m.group(2))
    return seconds if DURATION_MIN_S <= seconds <= DURATION_MAX_S else None


def timed_seconds(cmdline: str) -> tuple[float, float]:
    """The drift window and stolen-time scan, in seconds, that a kernel
    command line asks for, decided as kernel/profile.c decides: the last
    duration=, if valid, wins, then the last profile=, else quick."""
    words = dict(w.split("=", 1) if "=" in w else (w, "") for w in cmdline.split())
    s = parse_duration(words.get("duration", ""))
    if s is not None:
        return float(s), min(s / 10, 30.0)
    drift, hwlat = PROFILE_SECONDS.get(words.get("profile", "quick"), PROFILE_SECONDS["quick"])
    return float(drift), float(hwlat)


def default_timeout(cmdline: str) -> float:
    """The run's time bound when --timeout is not given: it follows the
    measuring time the command line asks for."""
    drift, hwlat = timed_seconds(cmdline)
    return BOOT_AND_FIXED_S + WINDOW_CAP_FACTOR * (drift + hwlat) + 10


def kernel_cmdline(args: argparse.Namespace) -> str:
    """The image's command line: --append's words, then profile= and
    duration=. A duration equal to the profile's own drift window adds
    nothing (check_run_arguments refuses any other): the profile alone
    keeps its sample counts, where duration= would take quick's."""
    duration = args.duration
    if args.profile and duration is not None and duration == PROFILE_SECONDS[args.profile][0]:
        duration = None
    words = [w for w in (args.append, f"profile={args.profile}" if args.profile else "",
                         f"duration={duration}" if duration is not None else "") if w]
    if not words and args.boot == "iso":
        # the menu's default entry, chosen by the tool: GRUB draws no menu
        words = ["profile=quick"]
    return " ".join(words)


# Words the image takes bare, with no value (kernel/finish.c: poweroff asks a
# PC, or QEMU without isa-debug-exit, to power off by ACPI S5 at the end).
BARE_WORDS = ("poweroff",)


def bare_word_problem(word: str) -> str | None:
    """Why a command-line word misuses a bare word (one the image takes with
    no value), or None."""
    key, eq, value = word.partition("=")
    if key in BARE_WORDS and eq:
        return f"{key} takes no value (the image would ignore {word!r}): write it alone"
    return None


def check_kernel_words(line: str, option: str) -> tuple[list[tuple[str, int]], list[tuple[str, str]]]:
    """The duration= and profile= words of a kernel command line, checked as
    the image reads them: one line for `run --append` and the netboot
    machines file alike. Returns ((word as written, seconds)...), ((word as
    written, profile)...); a value the image would ignore raises UsageError."""
    durations: list[tuple[str, int]] = []
    profiles: list[tuple[str, str]] = []
    for word in line.split():
        key, _, value = word.partition("=")
        problem = bare_word_problem(word)
        if problem:
            raise _usage(option, word, problem)
        if key == "duration":
            seconds = parse_duration(value)
            if seconds is None:
                raise _usage(option, word, f"duration= must be a whole number of seconds from {DURATION_MIN_S} "
                             f"to {DURATION_MAX_S}")
            durations.append((f"{option} {word}", seconds))
        elif key == "profile":
            if value not in PROFILES:
                raise _usage(option, word, f"profile= must be {', '.join(PROFILES[:-1])} or {PROFILES[-1]}")
            profiles.append((f"{option} {word}", value))
    return durations, profiles


@dataclass
class RunPlan:
    """What a command asks of a machine, decided before anything starts:
    the machine (machines.qemu.QemuConfig or machines.microvm.VmmConfig),
    the image it boots, the image's command line, the run's time bound,
    and the stop to make mid-run (machines.qemu.Migration or
    machines.snapshot.Snapshot), or none."""
    machine: object
    image: Path
    cmdline: str
    timeout: float
    stop: object | None = None
    hold: bool = False  # the terminal holds back what comes before the image (firmware, GRUB)

    @property
    def stop_field(self) -> str | None:
        """The metadata's name for what the stop did: migration or snapshot."""
        if self.stop is None:
            return None
        return "migration" if type(self.stop).__name__ == "Migration" else "snapshot"
