"""clockbench-os runs: who the host was, and where its runs are kept.

A clockbench-os log's `os` record names the host it measured (docs/output.md,
"The OS side"): its hostname, machine id (/etc/machine-id), kernel, the
clocksource in use and those available, and whether the kernel marked the TSC
unstable (`tsc_unstable`; also an `os_claim` "tsc unstable" with the kernel's
words). Logs written before those members read as unknown: the hostname then
comes from where the log was kept (a run folder's name, else the file's).

`make os-bench` and `make os-vm` keep each run in a folder of its own,
`build/os-runs/<host>-<UTC time>/os.log` and `build/os-vm-runs/...`, and a
bundle's `clockbench-os --out DIR` writes DIR/os.log: `clockbench import` takes
such a folder, or a folder of them, and stores the run under the host's name
(store.Store.add_os_run, for other code: `clockbench hosts` stores each
inventory host's run under its inventory name)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from clockbench.records import records

OS_LOG = "os.log"
# a kept run folder's name: <host>-<UTC time> (make os-bench), perhaps with a suffix that made it
# unique, or clockbench-os-<host>-<UTC time> (the bundle's own default, os/os_keep.c)
_FOLDER = re.compile(r"^(?:clockbench-os-)?(?P<host>.+?)-(?:\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ|\d{8}T\d{6}Z)(?:[-.][0-9A-Za-z]+)?$")
# what Linux says when nobody set a hostname (an initramfs's /init, os-vm)
NO_HOSTNAME = ("", "(none)", "localhost", "localhost.localdomain")


def _str(v) -> str | None:
    return v.strip() if isinstance(v, str) and v.strip() else None


def identity(recs: list[dict]) -> dict:
    """The host a clockbench-os log measured, as the store's run row keeps it:
    hostname, machine_id, kernel, clocksource, clocksources (those available,
    space-separated as the kernel lists them), tsc_unstable (1, 0, or None
    when unknown: the kernel log could not be read, or an older log that read
    none of it) and tsc_unstable_why (the kernel's words)."""
    os_rec = next((r for r in recs if r.get("type") == "os"), None) or {}
    claims = [r for r in recs if r.get("type") == "os_claim"]
    # the kernel's own words ("tsc: Marking TSC unstable due to ...") or its watchdog demoting it
    # ("Marking clocksource 'tsc' as unstable ...": a "clocksource unstable" claim naming tsc)
    unstable = [c for c in claims if c.get("what") == "tsc unstable"
                or (c.get("what") == "clocksource unstable" and c.get("detail") == "tsc")]
    flag = os_rec.get("tsc_unstable")
    if isinstance(flag, bool):
        tsc_unstable = int(flag or bool(unstable))
    elif unstable:
        tsc_unstable = 1
    elif "tsc_unstable" in os_rec:  # clockbench-os says it: null, the kernel log could not be read
        tsc_unstable = None
    elif claims:  # an older log: its kernel log was read (it has claims from it) and none said so
        tsc_unstable = 0
    else:
        tsc_unstable = None
    host = _str(os_rec.get("hostname"))
    why = "; ".join(sorted({("the clocksource watchdog marked it unstable" if c.get("what") == "clocksource unstable"
                             else str(c.get("detail") or "").strip()) for c in unstable} - {""}))
    return {"hostname": host if host not in NO_HOSTNAME else None, "machine_id": _str(os_rec.get("machine_id")),
            "kernel": _str(os_rec.get("kernel")), "clocksource": _str(os_rec.get("clocksource")),
            "clocksources": " ".join(str(os_rec.get("available_clocksources") or "").split()) or None,
            "tsc_unstable": tsc_unstable, "tsc_unstable_why": why or None}


def os_record(text: str) -> dict | None:
    """The `os` record of a log, found without parsing the rest (a store of
    hundreds of hosts names each run before it reads it); None when there is
    none or it does not parse."""
    at = text.find('"type":"os"')
    if at < 0:
        return None
    start = text.rfind(records.PREFIX, 0, at)
    end = text.find("\n", at)
    if start < 0:
        return None
    try:
        rec = json.loads(text[start + len(records.PREFIX):end if end >= 0 else len(text)])
    except ValueError:
        return None
    return rec if isinstance(rec, dict) and rec.get("type") == "os" else None


def folder_host(folder: Path) -> str:
    """The host a kept run folder was named after: <host>-<UTC time> -> host;
    any other folder's own name."""
    m = _FOLDER.match(folder.name)
    return m.group("host") if m else folder.name


def machine_name(text: str, fallback: str) -> str:
    """The store's name for a clockbench-os log's machine: the hostname its
    `os` record gives, else fallback (the folder's host, or the file's name)."""
    host = _str((os_record(text) or {}).get("hostname"))
    return host if host and host not in NO_HOSTNAME else fallback


def is_os_folder(d: Path) -> bool:
    return (d / OS_LOG).is_file()
