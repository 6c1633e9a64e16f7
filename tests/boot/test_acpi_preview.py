"""`clockbench acpi` previews what the stick will find: the image booted
with dump_acpi (QEMU q35, SeaBIOS, TCG: one short boot) writes its tables
as acpi_dump records; turned into an acpidump text, they go through the
tool, whose `acpi` record must be the image's own, field for field."""

from __future__ import annotations

import json
import subprocess
import sys

from clockbench.records import records
from helpers.tool import tool_env


def acpidump_text(recs: list[dict]) -> str:
    tables: dict[tuple[str, int], bytearray] = {}
    for r in records.of_type(recs, "acpi_dump"):
        t = tables.setdefault((r["signature"], int(r["address"], 16)), bytearray(r["length"]))
        chunk = bytes.fromhex(r["hex"])
        t[r["offset"]:r["offset"] + len(chunk)] = chunk
    out = []
    for (sig, addr), data in tables.items():
        out.append(f"{'RSDP' if sig == 'RSD PTR ' else sig} @ 0x{addr:016x}")
        out += [f"    {o:04X}: " + " ".join(f"{b:02X}" for b in data[o:o + 16]) for o in range(0, len(data), 16)]
        out.append("")
    return "\n".join(out)


def test_the_preview_is_what_the_image_finds(boot, tmp_path):
    b = boot(boot="direct", accel="tcg", machine="q35", append="dump_acpi only=cpu_speed", timeout=120)
    assert b.status == 0, b.explain()
    image = records.one(b.records, "acpi")
    (tmp_path / "qemu.txt").write_text(acpidump_text(b.records))
    env = tool_env()
    p = subprocess.run([sys.executable, "-m", "clockbench", "acpi", str(tmp_path / "qemu.txt"), "--json"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)
    assert v["root_table"].startswith("the firmware's")
    tool = dict(v["acpi_record"])
    # the one difference: the image found the RSDP in the BIOS area, the tool was handed it, as a loader would
    assert image.pop("rsdp_source") == "BIOS area 0xE0000-0xFFFFF" and tool.pop("rsdp_source").startswith("multiboot2 ACPI")
    image = {k: x for k, x in image.items() if k not in ("type", "seq", "t")}
    assert tool == {k: x for k, x in image.items() if k in tool} and set(image) <= set(tool) | {"seq"}, (tool, image)
    assert [(t["signature"], t["address"], t["length"]) for t in v["tables"]] == \
        [(t["signature"], int(t["address"], 16), t["length"]) for t in records.of_type(b.records, "acpi_table")]
    assert v["hpet_table"]["comparators"] == records.one(b.records, "hpet")["comparators"] == 3
    assert v["messages"] == [m["text"] for m in records.of_type(b.records, "acpi_message")]
    # the DSDT came too (dump_acpi gives it, as acpidump does): QEMU's \_S5 through PM1a_CNT
    assert v["power_off"].startswith("ACPI S5: X_PM1a_CNT_BLK (I/O 0x604), SLP_TYP 0 from \\_S5"), v["power_off"]
