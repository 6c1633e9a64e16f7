"""The host tool's own exit statuses (docs/output.md, "Exit statuses of the
host tool"), kept apart from the image's run statuses 0-5, and the error
class every command raises for them: the command layer prints its message
on one line and exits with its code, never with a traceback."""

from __future__ import annotations

# The image's statuses, as `clockbench run` (and `report`, `capture` for a
# log) exit with them: docs/output.md, "How a run ends".
RUN_STATUSES = {
    0: "passed: every check that ran passed",
    1: "failed: at least one check failed",
    2: "nothing ran: no check could run",
    3: "crashed: an unexpected CPU exception",
    4: "no verdict: the run ended (or the log ends) before its summary",
    5: "the run exceeded its time bound and was stopped",
}

# The tool's own, from 64 up (the BSD sysexits.h numbers where one fits).
USAGE = 64  # a bad command line
BAD_INPUT = 65  # a file that is not a clockbench log, results or QR text
NO_INPUT = 66  # a file, folder or port that is missing or cannot be read
NEWER_SCHEMA = 67  # a log or results file newer than this tool: refused
MISSING_TOOL = 69  # a program or library the command needs is not installed, or a service it needs is unavailable (a labgrid place)
INTERNAL = 70  # a bug in the tool itself
QEMU_FAILED = 71  # QEMU could not be started, or stopped before the image ran
CANNOT_WRITE = 73  # an output file or folder cannot be written
STORE_BUSY = 75  # the store of runs is locked by another process beyond the wait (EX_TEMPFAIL: try again)
STORE_CORRUPT = 76  # the store of runs is damaged, or not a SQLite file
BAD_KEY = 77  # a signing key or certificate that must not be used (EX_NOPERM's number)
DECLINED = 79  # the user answered no at a prompt: nothing was done (no run failed)
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)

TOOL_STATUSES = {
    USAGE: "bad command line (unknown option, missing argument, a value out of its range)",
    BAD_INPUT: "bad input: empty, binary, not a clockbench log or results, bad QR text",
    NO_INPUT: "input missing or unreadable: no such file, a folder, a port that won't open",
    NEWER_SCHEMA: "a log or results file newer than this tool: refused",
    MISSING_TOOL: "a program or library the command needs is not installed",
    INTERNAL: "an internal error of the tool (a bug; CLOCKBENCH_DEBUG=1 for the traceback)",
    QEMU_FAILED: "QEMU failed to start",
    CANNOT_WRITE: "an output file or folder cannot be written",
    STORE_BUSY: "the store of runs is locked by another process (waited; try again)",
    STORE_CORRUPT: "the store of runs is damaged or not a SQLite file: nothing was changed",
    BAD_KEY: "a Secure Boot key or certificate that cannot be used: loose permissions, expired, not for code signing, not matching",
    DECLINED: "declined at the prompt: nothing was done",
    INTERRUPTED: "interrupted (Ctrl-C); what was read is kept",
}


class ToolError(ValueError):
    """A failure the user can act on: its message is one line, its code one
    of TOOL_STATUSES. A ValueError, so callers that catch ValueError from
    the loaders (as report.py does) keep working."""

    code = INTERNAL

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class UsageError(ToolError):
    code = USAGE


class BadInput(ToolError):
    code = BAD_INPUT


class NoInput(ToolError):
    code = NO_INPUT


class NewerSchema(ToolError):
    code = NEWER_SCHEMA


class MissingTool(ToolError):
    code = MISSING_TOOL


class Unavailable(ToolError):
    """A service the command needs cannot be had: labgrid's coordinator, a
    place it does not know or will not give (EX_UNAVAILABLE's number, as a
    missing tool's)."""
    code = MISSING_TOOL


class QemuFailed(ToolError):
    code = QEMU_FAILED


class CannotWrite(ToolError):
    code = CANNOT_WRITE


class BadKey(ToolError):
    code = BAD_KEY


def documented(code: int) -> bool:
    return code in RUN_STATUSES or code in TOOL_STATUSES


def epilog() -> str:
    """The exit statuses, for `clockbench --help`."""
    lines = ["exit statuses (docs/output.md):", "  the run's, from `run`, `report` and `capture`:"]
    lines += [f"    {n:3d}  {what}" for n, what in RUN_STATUSES.items()]
    lines.append("  the tool's own:")
    lines += [f"    {n:3d}  {what}" for n, what in TOOL_STATUSES.items()]
    return "\n".join(lines)
