"""`clockbench acpi` on real machines' tables (tests/host/data/acpi: five
machines of the linuxhw/ACPI collection, their FACP, HPET and APIC), each
checked against ACPICA's own decoding of the same bytes (`iasl -d` run
here, and the collection's decoding kept beside each dump, which must
agree), against what a person reads off that decoding, and for bad input:
one line and the documented exit status."""

from __future__ import annotations

import functools
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import ROOT

DATA = ROOT / "tests" / "host" / "data" / "acpi"
sys.path.insert(0, str(ROOT / "tools"))
from clockbench.report import acpi  # noqa: E402
from helpers.tool import tool_env

MACHINES = sorted(p.stem for p in DATA.glob("*.txt"))


def run(*args, env=None, user=None):
    cmd = [sys.executable, "-m", "clockbench", "acpi", *map(str, args)]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    e = tool_env(**(env or {}))
    return subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=60)


@functools.lru_cache(maxsize=None)
def tool_text(machine: str) -> str:
    r = run(DATA / f"{machine}.txt", "--json")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout


def tool_json(machine: str) -> dict:
    return json.loads(tool_text(machine))


# --- ACPICA's decoding: "[02Fh 0047 001h]   Local Apic ID : 00" lines ---

FIELD = re.compile(r"^\[([0-9A-F]{3,4})h (\d{4})\s+[0-9A-Fa-f]+h?\]\s+(.+?) : (\S+)")
FLAG = re.compile(r"^\s+(.+?) : (\d+)$")


def decoded_parts(lines: list[str], start=lambda i, line: None) -> dict[str, list[dict]]:
    """Per table, its parts as ACPICA decoded them: part 0 the fixed fields
    (offset -> value, and the decoded flag names), then one per subtable.
    start(i, line) names the table a line begins, or None."""
    tables: dict[str, list[dict]] = {}
    cur = None
    for i, line in enumerate(lines):
        sig = start(i, line)
        if sig:
            cur = tables.setdefault(sig, [{}])
            continue
        if cur is None:
            continue
        m = FIELD.match(line)
        if m:
            off, name, value = int(m.group(2)), m.group(3).strip(), m.group(4)
            if name == "Subtable Type":
                cur.append({})
            part = cur[-1]
            part[off] = part[name] = value
            continue
        m = FLAG.match(line)
        if m:
            cur[-1][m.group(1).strip()] = int(m.group(2))
    return tables


def acpica(machine: str) -> dict[str, list[dict]]:
    """The collection's `iasl -d` decoding of the machine's tables."""
    with gzip.open(DATA / f"{machine}.dsl.gz", "rt") as f:
        lines = f.read().splitlines()
    return decoded_parts(lines, lambda i, line: line if line in ("FACP", "HPET", "APIC") and i + 1 < len(lines)
                         and lines[i + 1].startswith("----") else None)


def iasl(machine: str, tmp: Path) -> dict[str, list[dict]]:
    """ACPICA's decoding made here, now: `iasl -d` on the tables' bytes."""
    exe = shutil.which("iasl")
    assert exe, "iasl is missing: install acpica-tools (make deps does)"
    out = {}
    for sig, data in binary_tables(machine).items():
        (tmp / f"{sig.lower()}.dat").write_bytes(data)
        p = subprocess.run([exe, "-d", f"{sig.lower()}.dat"], cwd=tmp, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        out.update(decoded_parts((tmp / f"{sig.lower()}.dsl").read_text().splitlines(),
                                 lambda i, line, sig=sig: sig if i == 0 else None))
    return out


def summary(dec: dict[str, list[dict]]) -> dict:
    """The fields the tests compare, from a decoding."""
    f = dec["FACP"][0]
    procs, ioapics, isos = [], [], []
    for s in dec["APIC"][1:]:
        t = s.get("Subtable Type")
        if t == "00":
            procs.append((0, hexv(s["Local Apic ID"]), s["Processor Enabled"]))
        elif t == "09":
            procs.append((9, hexv(s["Processor x2Apic ID"]), s["Processor Enabled"]))
        elif t == "01":
            ioapics.append((hexv(s["I/O Apic ID"]), hexv(s["Address"]), hexv(s["Interrupt"])))
        elif t == "02":
            isos.append((hexv(s["Source"]), hexv(s["Interrupt"]), hexv(s["Flags (decoded below)"])))
    h = dec["HPET"][0] if "HPET" in dec else None
    return {"pm_tmr_blk": hexv(f[76]), "pm_tmr_len": hexv(f[91]), "x_pm_tmr_blk": hexv(f[212]) if 212 in f else 0,
            "revision": hexv(f[8]), "tmr_val_ext": f["32-bit PM Timer (V1)"], "hw_reduced": f.get("Hardware Reduced (V5)", 0),
            "hpet": (hexv(h[36]), hexv(h[44]), hexv(h[53])) if h else None,
            "procs": procs, "ioapics": ioapics, "isos": isos}


def hexv(s: str) -> int:
    return int(s, 16)


def test_every_machine_is_read_as_acpica_decodes_it(tmp_path):
    assert len(MACHINES) == 5
    for machine in MACHINES:
        dec = summary(iasl(machine, tmp_path))
        assert dec == summary(acpica(machine)), machine  # today's iasl reads the bytes as the collection's did
        v = tool_json(machine)
        a, pm = v["acpi_record"], v["pm_timer"]
        assert '"truncated"' not in json.dumps(a), machine  # the image's record, whole
        # FADT (ACPI 6.5, 5.2.9): ACPICA takes X_PM_TMR_BLK when its address is set, else PM_TMR_BLK as I/O
        want = dec["x_pm_tmr_blk"] or dec["pm_tmr_blk"]
        assert pm["found"] and pm["address"] == want, machine
        assert pm["field"] == ("X_PM_TMR_BLK" if dec["x_pm_tmr_blk"] else "PM_TMR_BLK"), machine
        assert pm["counter_bits"] == (32 if dec["tmr_val_ext"] else 24), machine
        assert a["hardware_reduced"] == bool(dec["hw_reduced"]), machine
        assert pm["os_ignored"] == a["hardware_reduced"], machine  # these machines: Linux skips it only when hardware-reduced
        assert (a["fadt_revision"], a["pm_timer_len"]) == (dec["revision"], dec["pm_tmr_len"]), machine
        # HPET (IA-PC HPET 1.0a, 3.2.4): the block ID's bits 12:8 are the comparators less one
        h = v["hpet_table"]
        if dec["hpet"]:
            block_id, address, min_tick = dec["hpet"]
            assert h["found"] and (h["block_id"], h["address"], h["min_tick"]) == (block_id, address, min_tick), machine
            assert h["comparators"] == ((block_id >> 8) & 0x1F) + 1, machine
        else:
            assert not h["found"] and h["reason"] == "no valid HPET table in the XSDT", machine
        # MADT (5.2.12): every processor entry, by ACPICA, counted by the rules the image states
        assert dec["procs"], machine
        cpus = [(i, en) for t, i, en in dec["procs"] if i != (0xFF if t == 0 else 0xFFFFFFFF)]
        ids = {i for i, _ in cpus}
        enabled = {i for i, en in cpus if en}
        assert a["madt_placeholders"] == len(dec["procs"]) - len(cpus), machine
        assert (a["cpus_listed"], a["cpus_enabled"]) == (len(ids), len(enabled)), machine
        assert a["madt_disabled_copies"] == sum(1 for i, en in cpus if not en and i in enabled), machine
        assert a["madt_disabled_shared"] == sum(1 for i, en in cpus if not en and i not in enabled) - len(ids - enabled)
        assert sorted(c["apic_id"] for c in v["cpus"] if c["enabled"]) == sorted(enabled), machine
        assert [(i["id"], i["address"], i["gsi_base"]) for i in v["ioapics"]] == dec["ioapics"], machine
        assert [(o["irq"], o["gsi"], o["flags"]) for o in v["irq_overrides"]] == dec["isos"], machine


# What a person reads off ACPICA's decoding of each machine, and what the
# tool must say about it.
EXPECTED = {
    "hp-pavilion-x2-tablet": dict(cpus=(4, 4), hpet=True, pm=(0x408, 24), hw=True, messages=[
        "FACP table: hardware-reduced, yet PM_TMR_BLK 0x408: ignored by the OS; measured only if it answers"]),
    "supermicro-x8dtt-server": dict(cpus=(16, 24), hpet=True, pm=(0x808, 24), hw=False, ioapics=2, messages=[]),
    "evga-x299-desktop": dict(cpus=(20, 20), hpet=True, pm=(0x1808, 24), hw=False, ioapics=5, messages=[
        "APIC table: 92 placeholder entries (APIC ID 0xFF/0xFFFFFFFF, 0 enabled): no CPU; Linux skips them too"]),
    "peladn-ha4-desktop": dict(cpus=(16, 16), hpet=False, pm=(0x808, 32), hw=False, messages=[
        "no valid HPET table in the XSDT"]),
    "gigabyte-a320-desktop": dict(cpus=(2, 3), hpet=True, pm=(0x808, 32), hw=False, messages=[
        "APIC table: 29 disabled entries repeat another disabled one's APIC ID (1 IDs, first 0): one CPU each"]),
}


def test_each_machine_gives_the_expected_counters_cpus_and_messages():
    assert sorted(EXPECTED) == MACHINES
    for machine, want in EXPECTED.items():
        v = tool_json(machine)
        a, pm = v["acpi_record"], v["pm_timer"]
        assert (a["cpus_enabled"], a["cpus_listed"]) == want["cpus"], machine
        assert v["hpet_table"]["found"] == want["hpet"] and (a["hpet_base"] == "0xfed00000") == want["hpet"], machine
        assert (pm["address"], pm["counter_bits"]) == want["pm"] and a["hardware_reduced"] == want["hw"], machine
        assert pm["set_aside"] == want["hw"], machine
        if "ioapics" in want:
            assert len(v["ioapics"]) == want["ioapics"], machine
        # the fixtures keep no DSDT, so the one other note is that, and power-off says so
        notes = [m for m in v["messages"] if not m.startswith("DSDT table at")]
        assert notes == want["messages"], machine
        assert v["power_off"].startswith("no ACPI power-off: the DSDT at"), machine
        assert not a["messages_dropped"] and '"truncated"' not in json.dumps(a)
        assert v["linux_differs"] == (["PM timer: ignored by the OS (hardware-reduced ACPI); the image measures it only if "
                                       "it answers and never takes it as the default reference"] if want["hw"] else
                                      ["CPUs: 92 placeholder entries: neither Linux nor the image counts them"]
                                      if machine.startswith("evga") else []), machine


def test_the_human_output_names_what_the_stick_will_find():
    r = run(DATA / "hp-pavilion-x2-tablet.txt")
    assert r.returncode == 0 and r.stderr == ""
    out = r.stdout
    assert "HPET: MMIO 0xfed00000, 3 comparators, 64-bit counter, minimum tick 128" in out
    assert ("ACPI PM timer: PM_TMR_BLK I/O 0x408, 24-bit counter, 32-bit register (by PM_TMR_LEN); "
            "Linux would not: ignored by the OS (hardware-reduced ACPI)") in out
    assert "4 enabled of 4 listed" in out and "enabled APIC IDs: 0, 2, 4, 6" in out
    assert "ISA IRQ 0 -> GSI 2 (active high, edge)" in out


def binary_tables(machine: str) -> dict[str, bytes]:
    src = acpi.parse_acpidump((DATA / f"{machine}.txt").read_text(), machine)
    return {t.sig: t.data for t in src.tables}


@pytest.mark.parametrize("naming", ["acpidump -b", "sysfs"])
def test_a_folder_of_binary_tables_reads_as_the_text_dump(tmp_path, naming):
    machine = "supermicro-x8dtt-server"
    for sig, data in binary_tables(machine).items():
        (tmp_path / (f"{sig.lower()}.dat" if naming == "acpidump -b" else sig)).write_bytes(data)
    r = run(tmp_path, "--json")
    assert r.returncode == 0 and r.stderr == ""
    v, t = json.loads(r.stdout), tool_json(machine)
    for key in ("acpi_record", "pm_timer", "hpet_table", "madt", "cpus", "ioapics", "irq_overrides", "messages"):
        assert v[key] == t[key], key
    assert v["source_kind"] == "folder"


def one_line_failure(r, status: int, *words: str):
    assert r.returncode == status, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("clockbench acpi: "), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_bad_input_one_line_each(tmp_path):
    one_line_failure(run(tmp_path / "absent.txt"), 66, "no such file")
    (tmp_path / "notes.txt").write_text("hello\nthis is not a dump\n")
    r = run(tmp_path / "notes.txt")
    one_line_failure(r, 65, "not an acpidump")
    assert r.stdout == ""
    (tmp_path / "noise.bin").write_bytes(bytes(range(256)) * 4)
    one_line_failure(run(tmp_path / "noise.bin"), 65, "not an acpidump")
    # offsets that do not follow on
    (tmp_path / "skip.txt").write_text("APIC @ 0x0\n  0000: 41 50 49 43\n  0020: 00 00\n")
    one_line_failure(run(tmp_path / "skip.txt"), 65, "line 3")
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_failure(run(empty), 65, "no ACPI tables")
    no_facp = tmp_path / "no-facp"
    no_facp.mkdir()
    (no_facp / "apic.dat").write_bytes(binary_tables("evga-x299-desktop")["APIC"])
    one_line_failure(run(no_facp), 65, "no FACP")
    # unreadable: the kernel refuses a plain read of another view of memory
    one_line_failure(run("/proc/self/mem"), 66, "cannot read")


@pytest.mark.parametrize("damage", ["checksum", "cut short"])
def test_a_bad_table_does_not_stop_the_others(tmp_path, damage):
    tables = binary_tables("evga-x299-desktop")
    apic = bytearray(tables["APIC"])
    if damage == "checksum":
        apic[50] ^= 0x5A
    else:
        apic = apic[:200]
    tables["APIC"] = bytes(apic)
    for sig, data in tables.items():
        (tmp_path / f"{sig.lower()}.dat").write_bytes(data)
    r = run(tmp_path)
    one_line_failure(r, 65, "checksum" if damage == "checksum" else "cut short", "the other tables were read")
    assert "ACPI PM timer: X_PM_TMR_BLK I/O 0x1808" in r.stdout and "HPET: MMIO 0xfed00000" in r.stdout
    assert "APIC (REJECTED)" in r.stdout and "no valid MADT" in r.stdout


def test_the_default_source_needs_root():
    """/sys/firmware/acpi/tables: its files are root's (0400). As another
    user the tool says so in one line and exits 66, as it does where there
    is no such folder."""
    r = run(user=65534) if os.geteuid() == 0 else run()
    if acpi.SYSFS.is_dir():
        one_line_failure(r, 66, "permission denied", "sudo")
    else:
        one_line_failure(r, 66, "no such file")


def test_without_the_host_library_the_tool_says_how_to_build_it(tmp_path):
    one_line_failure(run(DATA / "peladn-ha4-desktop.txt", env={"CLOCKBENCH_BUILD": str(tmp_path)}), 69, "make tool")


def test_the_fixtures_name_their_source_and_licence():
    text = (DATA / "README.md").read_text()
    assert "https://github.com/linuxhw/ACPI" in text and "CC BY 4.0" in text
    for machine in MACHINES:
        assert machine in text
    if shutil.which("git") and (ROOT / ".git").exists():  # kept by git: tests/fixtures/*/ is ignored, this folder is not
        ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", str(DATA / f"{MACHINES[0]}.txt")])
        assert ignored.returncode == 1


def acpidump_text(tables: list[tuple[str, int, bytes]]) -> str:
    """acpidump's layout: "SIG @ 0xADDRESS", then rows of 16 bytes with
    their offset and an ASCII column, a blank line after each table."""
    out = []
    for sig, addr, data in tables:
        out.append(f"{sig} @ 0x{addr:016x}")
        for off in range(0, len(data), 16):
            row = data[off:off + 16]
            text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in row)
            out.append(f"    {off:04X}: {' '.join(f'{b:02X}' for b in row):<47}  {text}")
        out.append("")
    return "\n".join(out) + "\n"


def test_a_dump_with_real_addresses_is_read_through_its_own_rsdp(tmp_path):
    """The RSDP, the XSDT and the tables where the dump puts them: the
    parser walks the firmware's own root table (the image's path), and an
    ASCII column that looks like hex is not taken for bytes."""
    from helpers import acpi_builder as ab

    fadt, hpet = ab.fadt(x_pm=ab.gas(1, 0x608)), ab.hpet(base=0xFED00000)
    madt = ab.madt_entries([("lapic", 0, 0, 1), ("lapic", 1, 1, 1), ("lapic", 2, 0xFF, 0)])
    at = {"FACP": 0x7FFE0000, "HPET": 0x7FFE1000, "APIC": 0x7FFE2000}
    xsdt = ab.root_table(list(at.values()), xsdt=True)
    rsdp = ab.rsdp(0, 0x7FFD0000, oem=b"ABCDEF")  # its OEM ID is hex-like in the ASCII column
    dump = acpidump_text([("RSDP", 0xF5A00, bytes(rsdp)), ("XSDT", 0x7FFD0000, bytes(xsdt)), ("FACP", at["FACP"], bytes(fadt)),
                          ("HPET", at["HPET"], bytes(hpet)), ("APIC", at["APIC"], bytes(madt))])
    (tmp_path / "dump.txt").write_text(dump)
    r = run(tmp_path / "dump.txt", "--json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["root_table"].startswith("the firmware's") and v["acpi_record"]["root_address"] == "0x7ffd0000"
    assert [(t["signature"], t["address"]) for t in v["tables"]] == [(s, a) for s, a in at.items()]
    assert v["acpi_record"]["oem_id"] == "ABCDEF" and v["pm_timer"]["address"] == 0x608
    assert (v["acpi_record"]["cpus_enabled"], v["acpi_record"]["madt_placeholders"]) == (2, 1)


def test_a_folder_gets_the_dsdt_where_its_fadt_says_and_nothing_over_it(tmp_path):
    """Folders give no addresses: the DSDT goes where the FADT's X_DSDT
    points (here inside the range the tool lays tables out in), no other
    table overlaps it, and \\_S5 is read from it."""
    import struct

    from helpers import acpi_builder as ab

    dsdt_at = acpi.SYNTHETIC_BASE + 0x18000
    dsdt = ab.table(b"DSDT", bytes(0x30000) + b"\x08_S5_\x12\x08\x04\x0a\x05\x0a\x05\x00\x00", revision=2)
    fadt = bytearray(ab.fadt(x_pm=ab.gas(1, 0x608)))
    struct.pack_into("<Q", fadt, 140, dsdt_at)        # X_DSDT
    struct.pack_into("<I", fadt, 64, 0x604)           # PM1a_CNT_BLK
    fadt[89] = 2                                      # PM1_CNT_LEN
    ab.checksum_fix(fadt, 9)
    for name, data in {"FACP": fadt, "DSDT": dsdt, "APIC": ab.madt([True]), "HPET": ab.hpet(), "SSDT1": ab.table(b"SSDT", bytes(0x20000))}.items():
        (tmp_path / name).write_bytes(bytes(data))
    src = acpi.read_source(str(tmp_path))
    regions, _, _ = acpi.layout(src)
    spans = sorted((a, a + len(d)) for a, d in regions)
    assert (dsdt_at, dsdt_at + len(dsdt)) in spans
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1)), [(hex(a), hex(b)) for a, b in spans]
    v = acpi.view(src)
    assert v["power"]["dsdt"] and v["power"]["s5"] and v["power"]["slp_typa"] == 5
    assert v["power_off"].startswith("ACPI S5: PM1a_CNT_BLK (I/O 0x604), SLP_TYP 5 from \\_S5")
    assert v["messages"] == []


def test_messages_past_the_twelve_kept_are_counted_in_the_text():
    """The image keeps 12 ACPI messages and counts the rest
    (`messages_not_kept`): the preview says how many it did not keep."""
    v = acpi.view(acpi.read_source(str(DATA / f"{MACHINES[0]}.txt")))
    v["acpi_record"].update(messages_dropped=True, messages_not_kept=8)
    assert "  (8 more not kept: the image keeps 12)" in acpi.render(v).split("\n")
