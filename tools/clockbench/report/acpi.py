"""`clockbench acpi [PATH]`: what the stick will find on this machine,
read from its ACPI tables by the image's own parser (lib/acpi.c, through the
host library) before anything is booted.

PATH is /sys/firmware/acpi/tables (the default: root only), an `acpidump`
text file, or a folder of binary tables (acpidump -b's *.dat, or FACP.dat,
APIC.dat, ...). It shows the counters with their addresses and widths, the
HPET's comparators and minimum tick, the PM timer and whether Linux would
use it, the CPUs, the IRQ routing overrides, how the image would power the
machine off, the firmware's contradictions, and where Linux reads the tables
differently. Exit 0; 65 for input that is not tables (or a table the parser
rejected: the others are still shown); 66 for a path missing or unreadable.

--store [DB] keeps the preview (the --json object, whole) in the store of
runs as a machine's (--machine; default: this host's name for sysfs, else
the file's or folder's name), beside that machine's runs: `clockbench runs
--acpi` lists the kept previews. A store that cannot be written exits 73, a
damaged one 76, and then nothing is printed or kept."""

from __future__ import annotations

import ctypes
import datetime as dt
import json
import os
import re
import socket
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

from clockbench import errors, paths

SYSFS = Path("/sys/firmware/acpi/tables")
HEADER = 36
MAX_TABLE = 4 << 20  # lib/acpi.h ACPI_MAX_TABLE_BYTES: larger claimed lengths are corrupt
SIG = re.compile(rb"^[A-Z0-9_!]{4}$")
# acpidump's text: "FACP @ 0x00000000bfee0000", then "  0000: 46 41 43 50 ...  FACP...."
DUMP_HEAD = re.compile(r"^\s*([A-Za-z0-9_!]{4})\s*@\s*0x([0-9A-Fa-f]{1,16})\s*$")
DUMP_ROW = re.compile(r"^\s*([0-9A-Fa-f]{4,8}):((?: [0-9A-Fa-f]{2}){1,16})(?:  |\s*$)")
# tables the root table does not list: reached through the RSDP and the FADT
NOT_LISTED = {"RSD ", "RSDT", "XSDT", "DSDT", "FACS"}
SYNTHETIC_BASE = 0x7000_0000  # where tables without a known address are laid out, 64 KiB apart


@dataclass
class Table:
    sig: str
    data: bytes
    address: int | None  # physical address, when the source says (acpidump text)
    name: str  # the file, or "TEXT line N"


@dataclass
class Source:
    path: str
    kind: str  # "sysfs", "folder", "acpidump"
    tables: list[Table] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # tables cut short or unreadable: exit 65 after the report


def host_library_path() -> Path:
    """The host library the Makefile builds (`make tool` does): in build/,
    or CLOCKBENCH_BUILD's, as the host tests find it."""
    return Path(os.environ.get("CLOCKBENCH_BUILD", paths.BUILD)) / "host" / "libclockbench_host.so"


def load_library() -> ctypes.CDLL:
    path = host_library_path()
    if not path.is_file():
        raise errors.MissingTool(f"the host library {path} is not built: run `make tool`")
    try:
        lib = ctypes.CDLL(str(path))
        fn = lib.tool_acpi_view
    except (OSError, AttributeError) as e:
        raise errors.MissingTool(f"the host library {path} cannot be used ({e}): run `make tool`") from None
    fn.restype = ctypes.c_char_p
    fn.argtypes = [ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_char_p),
                   ctypes.POINTER(ctypes.c_uint32), ctypes.c_char_p, ctypes.c_uint32]
    return lib


# --- reading the sources ---

def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except PermissionError:
        hint = " (the tables are root's: run with sudo, or give an acpidump file)" if SYSFS in path.parents else ""
        raise errors.NoInput(f"{path}: permission denied{hint}") from None
    except OSError as e:
        raise errors.NoInput(f"{path}: cannot read: {e.strerror or e}") from None


def _take(src: Source, data: bytes, address: int | None, name: str) -> None:
    """One table's bytes: kept when they start like a table; a table shorter
    than its header says is noted and still handed to the parser, which
    rejects it, as the image would."""
    if data[:8] == b"RSD PTR ":
        src.tables.append(Table("RSD ", data, address, name))
        return
    if len(data) < 8 or not SIG.match(data[:4]):
        return
    sig = data[:4].decode()
    if sig != "FACS" and len(data) >= 8:
        claimed = struct.unpack_from("<I", data, 4)[0]
        if len(data) < min(claimed, MAX_TABLE):
            src.problems.append(f"{name}: {sig} table cut short: {len(data)} bytes of the {claimed} its header gives")
        elif claimed < HEADER or claimed > MAX_TABLE:
            src.problems.append(f"{name}: {sig} table claims {claimed} bytes, outside {HEADER}..{MAX_TABLE}")
    src.tables.append(Table(sig, data, address, name))


def read_folder(path: Path, kind: str) -> Source:
    src = Source(str(path), kind)
    try:
        names = sorted(p for p in path.iterdir() if p.is_file())
    except PermissionError:
        raise errors.NoInput(f"{path}: permission denied (run with sudo, or give an acpidump file)") from None
    except OSError as e:
        raise errors.NoInput(f"{path}: cannot list: {e.strerror or e}") from None
    for p in names:
        _take(src, _read(p), None, p.name)
    if not src.tables:
        raise errors.BadInput(f"{path}: no ACPI tables in this folder (expected FACP.dat, APIC.dat, ... or sysfs's FACP, APIC)")
    return src


def parse_acpidump(text: str, name: str) -> Source:
    """acpidump's text output: a "SIG @ 0xADDRESS" line, then hex rows with
    their offsets. The offsets must follow on; anything else ends a table."""
    src = Source(name, "acpidump")
    current: tuple[str, int, int, bytearray] | None = None  # sig, address, first line, bytes

    def close():
        if current is not None:
            sig, addr, line, data = current
            if data:
                _take(src, bytes(data), addr, f"{sig} at line {line}")

    for n, line in enumerate(text.splitlines(), 1):
        head = DUMP_HEAD.match(line)
        if head:
            close()
            current = (head.group(1), int(head.group(2), 16), n, bytearray())
            continue
        row = DUMP_ROW.match(line)
        if row and current is not None:
            offset, data = int(row.group(1), 16), current[3]
            if offset != len(data):
                raise errors.BadInput(f"{name}: line {n}: offset 0x{offset:x} where 0x{len(data):x} was due: not an acpidump")
            data.extend(bytes.fromhex(row.group(2)))
    close()
    if not src.tables:
        raise errors.BadInput(f"{name}: not an acpidump text file (no \"SIG @ 0xADDRESS\" line with hex rows)")
    return src


def read_source(path_text: str | None) -> Source:
    path = Path(path_text) if path_text else SYSFS
    if not path.exists():
        raise errors.NoInput(f"{path}: no such file or folder"
                             + (" (this is not Linux, or ACPI is off: give an acpidump file)" if path == SYSFS else ""))
    if path.is_dir():
        return read_folder(path, "sysfs" if path.resolve() == SYSFS else "folder")
    raw = _read(path)
    if raw.count(b"\0") or not raw.strip():
        if raw[:4] and SIG.match(raw[:4]):  # one binary table given alone
            src = Source(str(path), "folder")
            _take(src, raw, None, path.name)
            return src
        raise errors.BadInput(f"{path}: not an acpidump text file, nor a folder of tables")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise errors.BadInput(f"{path}: not an acpidump text file (it is not ASCII text)") from None
    return parse_acpidump(text, str(path))


# --- laying the tables out in memory, as the firmware did ---

def _u32(d: bytes, off: int) -> int:
    return struct.unpack_from("<I", d, off)[0] if len(d) >= off + 4 else 0


def _u64(d: bytes, off: int) -> int:
    return struct.unpack_from("<Q", d, off)[0] if len(d) >= off + 8 else 0


def _checksum_fix(raw: bytearray, at: int, length: int) -> bytearray:
    raw[at] = 0
    raw[at] = (-sum(raw[:length])) & 0xFF
    return raw


def layout(src: Source) -> tuple[list[tuple[int, bytes]], bytes, str]:
    """(address, bytes) regions and the RSDP to hand over, as a loader hands
    the image a copy. Real addresses where the source gives them (an
    acpidump); otherwise each table gets one, the DSDT at the address its
    FADT names (so \\_S5 is read from it), and an XSDT listing them is made
    here: `root` says which."""
    tables = [t for t in src.tables if t.sig != "RSD "]
    rsdps = [t for t in src.tables if t.sig == "RSD "]
    known = all(t.address for t in src.tables) and rsdps
    regions: list[tuple[int, bytes]] = []
    if known:
        rsdp = rsdps[0].data[:36] if rsdps[0].data[15] >= 2 else rsdps[0].data[:20]
        regions = [(t.address, t.data) for t in tables]
        return regions, bytes(rsdp), "the firmware's (addresses as dumped)"
    facp = next((t for t in tables if t.sig == "FACP"), None)
    dsdt_at = 0
    if facp:
        dsdt_at = _u64(facp.data, 140) if len(facp.data) >= 148 else 0
        dsdt_at = dsdt_at or _u32(facp.data, 40)
    dsdt = next((t for t in tables if t.sig == "DSDT"), None)
    taken = (dsdt_at, dsdt_at + len(dsdt.data)) if dsdt and dsdt_at else (0, 0)

    def place(size: int) -> int:
        """The next free 64 KiB-aligned address whose size bytes miss the DSDT's."""
        nonlocal cursor
        while cursor < taken[1] and taken[0] < cursor + size:
            cursor += 0x10000
        at = cursor
        cursor += (size + 0xFFFF) // 0x10000 * 0x10000
        return at

    cursor = SYNTHETIC_BASE
    listed = []
    for t in tables:
        if t is dsdt and taken[1]:
            regions.append((dsdt_at, t.data))
            continue
        at = place(max(len(t.data), 1))
        regions.append((at, t.data))
        if t.sig not in NOT_LISTED:
            listed.append(at)
    xsdt_body = b"".join(struct.pack("<Q", a) for a in listed)
    xsdt = bytearray(struct.pack("<4sIBB6s8sI4sI", b"XSDT", HEADER + len(xsdt_body), 1, 0, b"CLOCKB", b"ACPIVIEW", 1,
                                 b"CBNC", 1) + xsdt_body)
    _checksum_fix(xsdt, 9, len(xsdt))
    xsdt_at = place(len(xsdt))
    regions.append((xsdt_at, bytes(xsdt)))
    oem = (facp.data[10:16] if facp else b"CLOCKB").ljust(6, b" ")
    rsdp = bytearray(struct.pack("<8sB6sBIIQB3s", b"RSD PTR ", 0, oem, 2, 0, 36, xsdt_at, 0, b"\0\0\0"))
    _checksum_fix(rsdp, 8, 20)
    _checksum_fix(rsdp, 32, 36)
    return regions, bytes(rsdp), "made here (the source gives no table addresses): an XSDT listing every table read"


def view(src: Source, lib: ctypes.CDLL | None = None) -> dict:
    """Runs lib/acpi.c on the tables; the records it gives, grouped."""
    lib = lib or load_library()
    regions, rsdp, root = layout(src)
    n = len(regions)
    keep = [ctypes.create_string_buffer(d, len(d)) for _, d in regions]
    addrs = (ctypes.c_uint64 * n)(*[a for a, _ in regions])
    ptrs = (ctypes.c_char_p * n)(*[ctypes.cast(b, ctypes.c_char_p) for b in keep])
    lens = (ctypes.c_uint32 * n)(*[len(d) for _, d in regions])
    out = lib.tool_acpi_view(n, addrs, ptrs, lens, rsdp, len(rsdp)).decode()
    v: dict = {"source": src.path, "source_kind": src.kind, "root_table": root, "tables": [], "messages": [],
               "cpus": [], "ioapics": [], "irq_overrides": [], "problems": list(src.problems)}
    for line in out.splitlines():
        rec = json.loads(line)
        kind = rec.pop("type")
        if kind == "acpi":
            v["acpi_record"] = rec
        elif kind == "acpi_table":
            v["tables"].append(rec)
        elif kind == "acpi_message":
            v["messages"].append(rec["text"])
        elif kind == "cpu":
            v["cpus"].append(rec)
        elif kind == "ioapic":
            v["ioapics"].append(rec)
        elif kind == "irq_override":
            v["irq_overrides"].append(rec)
        else:
            v[kind] = rec
    v["power_off"] = power_off(v["power"], v["acpi_record"])
    v["linux_differs"] = linux_differences(v)
    return v


def power_off(p: dict, acpi: dict) -> str:
    """How the image's ending (kernel/finish.c, acpi_s5) would go here."""
    if not p["fadt"]:
        return "no ACPI power-off: no valid FADT"
    if not p["s5"]:
        return "no ACPI power-off: " + (p["s5_why"] or "no \\_S5 package")
    typ = f"SLP_TYP {p['slp_typa']} from \\_S5"
    if p["hardware_reduced"]:
        if not p["sleep_control"]:
            return "no ACPI power-off: hardware-reduced, and no SLEEP_CONTROL_REG"
        return f"ACPI S5: SLEEP_CONTROL_REG ({_space(p['sleep_control_space'])} 0x{p['sleep_control']:x}), {typ}"
    if not p["pm1a_cnt"]:
        return "no ACPI power-off: no PM1a control block"
    enable = (f"; first ACPI mode, if the firmware left it off: 0x{p['acpi_enable']:02x} to SMI_CMD (I/O 0x{p['smi_cmd']:x})"
              if p["smi_cmd"] and p["acpi_enable"] else "")
    b = f" and PM1b (0x{p['pm1b_cnt']:x}, SLP_TYP {p['slp_typb']})" if p["pm1b_cnt"] else ""
    return f"ACPI S5: {p['pm1a_cnt_field']} ({_space(p['pm1a_cnt_space'])} 0x{p['pm1a_cnt']:x}){b}, {typ}{enable}"


def _space(s: str) -> str:
    return {"io": "I/O", "memory": "MMIO"}.get(s, s)


def linux_differences(v: dict) -> list[str]:
    """Every point where Linux reads these tables otherwise than the image."""
    out = []
    pm, a = v["pm_timer"], v["acpi_record"]
    if pm["found"] and pm["os_note"]:
        out.append(f"PM timer: {pm['os_note']}" + ("; the image measures it only if it answers and never takes it as "
                                                   "the default reference" if pm["set_aside"] else "; the image measures it"))
    elif pm["found"] and pm["linux_port"] and not (pm["space"] == "io" and pm["linux_port"] == pm["address"]):
        out.append(f"PM timer: Linux reads I/O port 0x{pm['linux_port']:x}, the image {pm['field']} 0x{pm['address']:x}")
    if pm["found"] and pm["register_bits"] not in (0, 32):
        out.append(f"PM timer: a {pm['register_bits']}-bit register by {pm['width_from']}; Linux reads 32 bits, as the image does")
    if a.get("madt_placeholders"):
        out.append(f"CPUs: {a['madt_placeholders']} placeholder entries: neither Linux nor the image counts them")
    if a.get("madt_enabled_repeats"):
        out.append(f"CPUs: {a['madt_enabled_repeats']} enabled entries repeat an APIC ID: Linux rejects each repeat "
                   "(\"APIC ID already reserved\"); the image keeps the first")
    online = a.get("cpus_online_capable") or 0
    if online:
        out.append(f"CPUs: {online} disabled but online-capable: Linux may bring them up later; the image does not")
    return out


# --- output ---

def render(v: dict) -> str:
    a, pm, h, m, p = v["acpi_record"], v["pm_timer"], v["hpet_table"], v["madt"], v["power"]
    L = [f"ACPI tables of {v['source']} ({v['source_kind']}), read by the image's parser (lib/acpi.c)"]
    if a["oem_id"]:
        L.append(f"  OEM \"{a['oem_id']}\", root table: {v['root_table']}")
    L.append("  Tables: " + ", ".join(f"{t['signature']}{'' if t['valid'] else ' (REJECTED)'}" for t in v["tables"]))
    L.append("Counters the stick will find")
    if h["found"]:
        L.append(f"  HPET: {_space(h['space'])} 0x{h['address']:x}, {h['comparators']} comparators, "
                 f"{'64' if h['counter_64bit'] else '32'}-bit counter, minimum tick {h['min_tick']}, "
                 f"block ID 0x{h['block_id']:08x} (vendor 0x{h['block_id'] >> 16:04x}), number {h['number']}")
    else:
        L.append(f"  HPET: none: {h['reason'] or 'no HPET table'}")
    if pm["found"]:
        width = f"{pm['register_bits']}-bit register (by {pm['width_from']})" if pm["register_bits"] else "no width stated"
        linux = ("Linux would use it" if not pm["os_ignored"] else f"Linux would not: {pm['os_note']}")
        L.append(f"  ACPI PM timer: {pm['field']} {_space(pm['space'])} 0x{pm['address']:x}, {pm['counter_bits']}-bit counter, "
                 f"{width}; {linux}")
    else:
        L.append(f"  ACPI PM timer: none: {pm['reason'] or 'no PM timer in the FADT'}")
    if a.get("fadt_revision") is not None:
        L.append(f"  FADT revision {a['fadt_revision']}{', hardware-reduced ACPI' if a['hardware_reduced'] else ''}")
    L.append("CPUs (MADT)")
    if m["found"]:
        L.append(f"  {a['cpus_enabled']} enabled of {a['cpus_listed']} listed ({a['cpus_x2apic']} by x2APIC entries, "
                 f"{a['cpus_online_capable']} online-capable); local APIC at 0x{m['lapic_address']:x}"
                 + (" (overridden)" if m["lapic_address_overridden"] else "") + (", dual 8259s" if m["pcat_compat"] else ""))
        en = [c["apic_id"] for c in v["cpus"] if c["enabled"]]
        dis = [c["apic_id"] for c in v["cpus"] if not c["enabled"]]
        L.append(f"  enabled APIC IDs: {_ids(en)}")
        if dis:
            L.append(f"  disabled APIC IDs: {_ids(dis)}")
        reps = [(a['madt_placeholders'], "placeholders (0xFF/0xFFFFFFFF)"),
                (a['madt_disabled_copies'], "disabled copies of enabled CPUs"),
                (a['madt_disabled_shared'], "disabled entries sharing an ID"),
                (a['madt_enabled_repeats'], "enabled entries repeating an ID")]
        if any(n for n, _ in reps):
            L.append("  repeated entries: " + ", ".join(f"{n} {what}" for n, what in reps if n))
    else:
        L.append("  no valid MADT")
    L.append("IRQ routing")
    for io in v["ioapics"]:
        L.append(f"  I/O APIC {io['id']} at 0x{io['address']:x}, from GSI {io['gsi_base']}")
    for o in v["irq_overrides"]:
        sig = f"{'active low' if o['active_low'] else 'active high'}, {'level' if o['level'] else 'edge'}"
        bus = "ISA " if o["bus"] == 0 else f"bus {o['bus']} "
        L.append(f"  {bus}IRQ {o['irq']} -> GSI {o['gsi']} ({sig})"
                 + ("" if o["used"] else ": not used (an earlier override for this IRQ wins)"))
    if not v["ioapics"] and not v["irq_overrides"]:
        L.append("  no I/O APIC or override listed")
    L.append("Power-off")
    L.append(f"  {v['power_off']}")
    if p["hypervisor_vendor"]:
        L.append(f"  FADT hypervisor vendor: \"{p['hypervisor_vendor']}\"")
    L.append("The firmware's contradictions and the parser's notes")
    L += [f"  {msg}" for msg in v["messages"]] or ["  none"]
    if a.get("messages_dropped"):
        more = a.get("messages_not_kept")
        L.append(f"  ({more} more not kept: the image keeps 12)" if more else "  (more notes were dropped: the image keeps 12)")
    L.append("Where Linux reads it differently")
    L += [f"  {d}" for d in v["linux_differs"]] or ["  nowhere the counters or CPUs depend on"]
    for prob in v["problems"]:
        L.append(f"Problem: {prob}")
    return "\n".join(L)


def _hex(v) -> int | None:
    """A record's address: "0xfed00000" as the image writes it, or a number."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    try:
        return int(v, 16) if isinstance(v, str) else None
    except ValueError:
        return None


def against_run(v: dict, recs: list[dict]) -> list[str]:
    """What the preview said beside what a run of the stick on the same
    machine found: the HPET, the PM timer and the enabled CPUs, from the
    run's own `acpi` record (the record the preview's parser also gives)
    and its `counter` records (whether the counter answered)."""
    run_acpi = next((r for r in recs if r.get("type") == "acpi"), None)
    if run_acpi is None:
        return ["the run has no acpi record to compare with"]
    counters = {r.get("name"): r for r in recs if r.get("type") == "counter"}
    a, h, pm = v["acpi_record"], v["hpet_table"], v["pm_timer"]
    out = []

    def line(what: str, said: str, found: str, same: bool) -> None:
        out.append(f"{what}: the preview said {said}, the run found {found}: {'the same' if same else 'DIFFERENT'}")

    def found(name: str, addr: int | None, where: str) -> str:
        c = counters.get(name) or {}
        if addr is None:
            return "none" + (f" ({c['reason']})" if c.get("reason") else "")
        if c and not c.get("present"):
            return f"{where} in its tables, but no counter ({c.get('reason') or 'not present'})"
        return where

    run_hpet = _hex(run_acpi.get("hpet_base")) or None
    said = _space_addr("memory", h["address"]) if h.get("found") else "none"
    got = found("hpet", run_hpet, _space_addr("memory", run_hpet))
    line("HPET", said, got, (h["address"] if h.get("found") else None) == run_hpet
         and (run_hpet is None or (counters.get("hpet") or {}).get("present", True)))
    run_pm = _hex(run_acpi.get("pm_timer_address")) or None
    said = f"{_space_addr(pm['space'], pm['address'])}, {pm['counter_bits']}-bit" if pm.get("found") else "none"
    where = f"{_space_addr(run_acpi.get('pm_timer_space'), run_pm)}, {run_acpi.get('pm_timer_bits')}-bit"
    got = found("acpi_pm", run_pm, where)
    line("ACPI PM timer", said, got, (pm["address"] if pm.get("found") else None) == run_pm
         and (run_pm is None or (pm["space"] == run_acpi.get("pm_timer_space") and pm["counter_bits"] == run_acpi.get("pm_timer_bits")
                                 and (counters.get("acpi_pm") or {}).get("present", True))))
    line("enabled CPUs", str(a.get("cpus_enabled")), str(run_acpi.get("cpus_enabled")),
         a.get("cpus_enabled") == run_acpi.get("cpus_enabled"))
    return out


def _space_addr(space, address) -> str:
    return f"{_space(space)} 0x{address:x}" if isinstance(address, int) else "none"


def _ids(ids: list[int]) -> str:
    """Runs of consecutive IDs: 0-7, 16, 18."""
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ", ".join(out) or "none"


def machine_name(src: Source, given: str | None) -> str:
    """The machine a preview is kept as: the name given; for sysfs this host's
    name (the tables are its own); else the file's or folder's name, as
    `clockbench import` names a bare log."""
    if given is not None:
        if not given.strip():
            raise errors.UsageError("--machine: an empty name")
        return given
    if src.kind == "sysfs":
        return socket.gethostname()
    p = Path(src.path)
    if p.is_dir():
        return p.resolve().name or str(p)
    if p.is_file():
        return p.stem or p.name
    # a pipe (`<(acpidump)`) or a device: its name says nothing of the machine
    raise errors.UsageError(f"{p}: not a file or folder whose name can name the machine: give --machine")


def _not_a_store(p: Path) -> bool:
    """A folder, or a file that is not SQLite's: tables, not a store."""
    if p.is_dir():
        return True
    try:
        with p.open("rb") as f:
            head = f.read(16)
    except OSError:
        return False  # missing (a new store) or unreadable: the store says which
    from clockbench.runs import store

    return bool(head) and head != store.SQLITE_MAGIC


def keep(v: dict, src: Source, args) -> str:
    """Adds the preview to the store (one transaction); the line saying so."""
    from clockbench.runs import store

    machine = machine_name(src, args.machine)
    with store.open_store(args.store) as st:
        pid, new = st.add_acpi_preview(v, machine, "acpi", host=socket.gethostname())
    return (f"clockbench acpi: stored as ACPI preview {pid} of machine {machine!r} in {args.store}"
            + ("" if new else " (these tables were already kept)"))


def main(args) -> int:
    if args.machine is not None and args.store is None:
        raise errors.UsageError("--machine names the machine in the store: give --store too")
    if args.machine is not None and not args.machine.strip():
        raise errors.UsageError("--machine: an empty name")
    if args.path is None and args.store is not None and _not_a_store(Path(args.store)):
        # `acpi --store dump.txt`: --store's optional DB took the tables' path
        raise errors.UsageError(f"--store took {args.store} as the store, and it is not one: write "
                                f"`clockbench acpi {args.store} --store` (or `--store DB {args.store}`)")
    src = read_source(args.path)
    if not any(t.sig == "FACP" for t in src.tables):
        raise errors.BadInput(f"{src.path}: no FACP (FADT) table among the {len(src.tables)} read: not a machine's tables")
    v = view(src)
    v["taken"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    stored = keep(v, src, args) if args.store is not None else None  # first: a store that fails leaves nothing half-done
    if args.json:
        print(json.dumps(v, indent=1))
    else:
        print(render(v))
    if stored:
        print(stored, file=sys.stderr if args.json else sys.stdout)
    rejected = [t["signature"] for t in v["tables"] if not t["valid"]]
    if src.problems or rejected:
        first = src.problems[0] if src.problems else \
            next((msg for msg in v["messages"] if msg.startswith(rejected[0])), f"{rejected[0]} table rejected")
        print(f"clockbench acpi: {src.path}: {first}; the other tables were read", file=sys.stderr)
        return errors.BAD_INPUT
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("acpi", help="what the stick will find on this machine, from its ACPI tables (before booting it)",
                       description=__doc__, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("path", nargs="?", help=f"an acpidump text file, or a folder of tables (default: {SYSFS}, root only)")
    p.add_argument("--json", action="store_true", help="print everything as one JSON object, for tools")
    from clockbench.runs import store

    p.add_argument("--store", nargs="?", const=store.default_text(), metavar="DB",
                   help="keep the preview in the store of runs, as the machine's (DB default: %(const)s)")
    p.add_argument("--machine", help="the machine's name in the store, as its runs name it (default: this host's name "
                   "for /sys/firmware/acpi/tables, else the file's or folder's name)")
    p.set_defaults(func=main)
