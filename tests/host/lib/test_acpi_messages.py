"""ACPI messages are never cut and never lost without a count: every message
lib/acpi.c can write fits ACPI_MESSAGE_CHARS with its numbers at their
largest; messages past the 12 kept are counted (`messages_not_kept`); a FADT
whose X_PM1x_CNT_BLK and PM1x_CNT_BLK disagree says so and which it used."""

import json
import re
import struct

from helpers import acpi_builder as ab
from helpers.hostlib import as_json
from helpers.paths import ROOT

ACPI_C = (ROOT / "lib" / "acpi.c").read_text()
MESSAGE_CHARS = int(re.search(r"#define ACPI_MESSAGE_CHARS (\d+)", (ROOT / "lib" / "acpi.h").read_text()).group(1))
U32_MAX = 0xFFFFFFFF


def discover(lib, mem: ab.Memory):
    return as_json(lib.shim_acpi(bytes(mem.data), len(mem.data), mem.base, None, 0, None))


def messages(r):
    return [r[f"m{i}"] for i in range(r["messages"])]


def format_strings() -> list[str]:
    """Every format lib/acpi.c hands say() (directly or through pm_conflict)."""
    found = []
    for m in re.finditer(r'\b(?:say|pm_conflict)\(\s*a\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', ACPI_C):
        found.append("".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))).replace('\\"', '"'))
    return found


def longest_string_argument() -> int:
    """The longest text a %s in those formats can be: the places the RSDP is
    looked for, a mapper's reason (the image's, this shim's, the tool's),
    table signatures and the FADT's field names."""
    texts = re.findall(r'"([^"%]*)"', ACPI_C[ACPI_C.index("handover_where"):ACPI_C.index("static const uint8_t *find_rsdp")])
    texts += ["the EBDA", "the BIOS area", "X_PM_TMR_BLK bit width", "X_PM1a_CNT_BLK", ", hardware-reduced ACPI"]
    for path in ("kernel/paging.c", "tests/host/shim.c", "tools/native/acpi_view.c"):
        texts += re.findall(r'\*why = "([^"]*)"', (ROOT / path).read_text())
    assert len(texts) >= 10
    return max(map(len, texts))


def widest(fmt: str, s_chars: int) -> str:
    """fmt with every argument at its widest: 64-bit hex in full, 32-bit
    decimals of 10 digits, strings at their longest."""
    out = re.sub(r"%ll[xu]", "f" * 16, fmt)
    out = out.replace("%02x", "ff").replace("%x", "f" * 8).replace("%u", "4294967295").replace("%d", "-2147483648").replace("%c", "c")
    out = out.replace("%s", "s" * s_chars)
    assert "%" not in out, fmt
    return out


def test_every_message_format_fits_at_its_widest():
    fmts = format_strings()
    assert len(fmts) >= 30  # every say() in lib/acpi.c, not a handful
    s_chars = longest_string_argument()
    too_long = [(len(widest(f, s_chars)), f) for f in fmts if len(widest(f, s_chars)) > MESSAGE_CHARS - 1]
    assert not too_long, f"longer than {MESSAGE_CHARS - 1} characters at their widest: {too_long}"


def test_the_names_the_record_points_at_fit_the_worst_case_record(lib):
    """rsdp_source, pm_timer_field, pm_timer_width_from and pm_timer_os_note
    are fixed names; the worst-case record test fills them to
    shim_acpi_name_chars() - 1, so each must be shorter."""
    names = re.findall(r'(?:rsdp_source|pm_timer_field|pm_timer_width_from|pm_timer_os_note) = "([^"]*)"', ACPI_C)
    names += re.findall(r'"([^"]*)"', ACPI_C[ACPI_C.index("handover_names"):ACPI_C.index("handover_where")])
    names += ["EBDA", "BIOS area 0xE0000-0xFFFFF"]
    assert len(names) >= 8
    assert max(map(len, names)) < lib.shim_acpi_name_chars()


def x2apic_repeats(first_id: int, ids: int, per_id: int, enabled: int) -> list[tuple]:
    return [("x2apic", i, first_id - i, enabled) for i in range(ids) for _ in range(per_id)]


def test_each_repeat_message_whole_with_its_largest_figures(lib):
    """Each kind of repeated APIC ID with 3-digit counts and 10-digit x2APIC
    IDs: the message is exactly the whole text (with 112 characters the
    disabled-shared one lost its last character)."""
    top = U32_MAX - 1  # 0xFFFFFFFF is a placeholder
    cases = [
        (x2apic_repeats(top, 100, 2, 0),
         f"APIC table: 100 disabled entries repeat another disabled one's APIC ID (100 IDs, first {top}): one CPU each"),
        (x2apic_repeats(top, 100, 1, 1) + x2apic_repeats(top, 100, 1, 0),
         f"APIC table: 100 disabled copies of 100 enabled CPUs' APIC IDs (first ID {top}): the enabled entry counts"),
        (x2apic_repeats(top, 100, 2, 1),
         f"APIC table: 100 enabled entries repeat an enabled CPU's APIC ID (100 IDs, first {top}): the first is used"),
        ([("x2apic", 1, U32_MAX, 1)] * 100 + [("x2apic", 2, U32_MAX, 0)] * 100,
         "APIC table: 200 placeholder entries (APIC ID 0xFF/0xFFFFFFFF, 100 enabled): no CPU; Linux skips them too"),
    ]
    for entries, want in cases:
        mem, _ = ab.standard_machine(tables=[ab.fadt(x_pm=ab.gas(1, 0x608)), ab.hpet(), ab.madt_entries(entries)])
        got = [m for m in messages(discover(lib, mem)) if m.startswith("APIC table")]
        assert got == [want]
        assert len(want) <= MESSAGE_CHARS - 1


def fadt_with(pm_tmr_blk=0, x_pm=None, flags=0, pm_tmr_len=4, revision=None, pm1=None) -> bytearray:
    """ab.fadt, plus the PM1 control blocks: pm1 = (PM1a, PM1b, PM1_CNT_LEN,
    X_PM1a address, X_PM1b address)."""
    raw = ab.fadt(pm_tmr_blk=pm_tmr_blk, x_pm=x_pm, flags=flags, pm_tmr_len=pm_tmr_len, revision=revision)
    if pm1:
        a32, b32, cnt_len, xa, xb = pm1
        struct.pack_into("<II", raw, 64, a32, b32)
        raw[89] = cnt_len
        if xa:
            raw[172:184] = ab.gas(1, xa, 16, 2)
        if xb:
            raw[184:196] = ab.gas(1, xb, 16, 2)
    return ab.checksum_fix(raw, 9)


def test_pm_timer_contradictions_whole_with_64_bit_addresses(lib):
    top = 0xFFFFFFFFFFFFFFF0
    mem, _ = ab.standard_machine(tables=[fadt_with(U32_MAX, ab.gas(1, top, 255, 4), pm_tmr_len=255, revision=255)])
    got = [m for m in messages(discover(lib, mem)) if m.startswith("FACP")]
    assert got == [
        f"FACP table: X_PM_TMR_BLK 0x{top:x} and PM_TMR_BLK 0x{U32_MAX:x} disagree; X_PM_TMR_BLK used, as ACPICA does",
        "FACP table: PM_TMR_LEN 255 but X_PM_TMR_BLK is 255 bits wide; the X_ width used, as ACPICA does",
        "FACP table: X_PM_TMR_BLK access size 4 (64-bit) for a 255-bit register; the width decides (ACPICA)",
        "FACP table: PM timer 255 bits wide (by X_PM_TMR_BLK bit width), not 32; read as 32 bits, as Linux does",
        f"FACP table: revision 255: Linux reads port 0x{top & U32_MAX:x}, not X_PM_TMR_BLK 0x{top:x} (ACPICA's choice)",
    ]
    # hardware-reduced, the block in memory at the top of the address space
    mem, _ = ab.standard_machine(tables=[fadt_with(0, ab.gas(0, top), flags=1 << 20)])
    got = [m for m in messages(discover(lib, mem)) if m.startswith("FACP")]
    assert got == [f"FACP table: hardware-reduced, yet X_PM_TMR_BLK 0x{top:x}: ignored by the OS; measured only if it answers"]


def test_unreachable_table_message_whole(lib):
    mem = ab.Memory(0, 0x100000)
    xsdt = mem.place(ab.root_table([0xFFFFFFFFFFFFFFF0], xsdt=True))
    rsdt = mem.place(ab.root_table([], xsdt=False))
    mem.put(0xF5A00, ab.rsdp(rsdt, xsdt))
    got = messages(discover(lib, mem))
    assert got[0] == "a table at 0xfffffffffffffff0 unreachable: outside the test memory"
    assert not any(m.endswith("...") for m in got)


def test_messages_past_the_list_are_counted(lib):
    """14 short entries and the repeat kinds: 12 kept, the rest counted, the
    count in the `acpi` record."""
    from test_acpi import every_kind_of_repeat
    short = [("raw", bytes([1, 8]) + bytes(6))] * 14
    mem, _ = ab.standard_machine(tables=[ab.madt_entries(every_kind_of_repeat() + short)])
    r = discover(lib, mem)
    # 14 short entries + 4 repeat kinds + no FACP + no HPET = 20 said, 12 kept
    assert r["messages"] == 12 and r["messages_dropped"] and r["messages_not_kept"] == 8
    rec = json.loads(lib.shim_acpi_record(False).decode()[4:])
    assert rec["messages"] == 12 and rec["messages_not_kept"] == 8
    # a short list drops nothing and says 0
    mem, _ = ab.standard_machine()
    r = discover(lib, mem)
    assert r["messages_not_kept"] == 0 and not r["messages_dropped"]
    assert json.loads(lib.shim_acpi_record(False).decode()[4:])["messages_not_kept"] == 0


def test_pm1_control_blocks_that_disagree_are_reported(lib):
    """ACPICA's "32/64X address mismatch" (tbfadt.c): the X_ block is used,
    and the image says so, once per block; blocks that agree say nothing."""
    mem, _ = ab.standard_machine(tables=[fadt_with(0x608, ab.gas(1, 0x608), pm1=(0x604, 0x704, 2, 0xB004, 0xFFFFFFFFFFFFFFFF))])
    r = discover(lib, mem)
    assert r["pm1_cnt_conflicts"] == 2
    assert [m for m in messages(r) if "PM1" in m] == [
        "FACP table: X_PM1a_CNT_BLK 0xb004 and PM1a_CNT_BLK 0x604 disagree; X_PM1a_CNT_BLK used (to power off), as ACPICA does",
        "FACP table: X_PM1b_CNT_BLK 0xffffffffffffffff and PM1b_CNT_BLK 0x704 disagree; X_PM1b_CNT_BLK used (to power off), as ACPICA does",
    ]
    assert json.loads(lib.shim_acpi_record(False).decode()[4:])["pm1_cnt_conflicts"] == 2
    # agreeing blocks, or only one of the two set: no message
    for pm1 in ((0x604, 0, 2, 0x604, 0), (0x604, 0, 2, 0, 0), (0, 0, 2, 0xB004, 0)):
        mem, _ = ab.standard_machine(tables=[fadt_with(0x608, ab.gas(1, 0x608), pm1=pm1)])
        r = discover(lib, mem)
        assert r["pm1_cnt_conflicts"] == 0 and not [m for m in messages(r) if "PM1" in m]
