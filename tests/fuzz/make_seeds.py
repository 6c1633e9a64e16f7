"""Writes the ACPI fuzzer's seed corpus to tests/fuzz/seeds/: real tables
dumped from QEMU (the image booted with dump_acpi, under q35 and pc, SeaBIOS
and OVMF) and synthetic machines from tests/helpers/acpi_builder.py. Each seed
is in the harness's input format (see fuzz_acpi.c). `make fuzz-seeds`."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools"), str(ROOT / "tests")]

from clockbench.machines import qemu
from clockbench.records import records  # noqa: E402

from helpers import acpi_builder as ab  # noqa: E402

SEEDS = ROOT / "tests" / "fuzz" / "seeds"


def seed(flags: int, base: int, rsdp: bytes, memory: bytes) -> bytes:
    return bytes([flags]) + struct.pack("<Q", base) + rsdp.ljust(36, b"\0")[:36] + memory


def from_dump(recs: list[dict]) -> bytes | None:
    tables: dict[tuple[str, int], bytearray] = {}
    for r in records.of_type(recs, "acpi_dump"):
        key = (r["signature"], int(r["address"], 16))
        t = tables.setdefault(key, bytearray(r["length"]))
        chunk = bytes.fromhex(r["hex"])
        t[r["offset"]:r["offset"] + len(chunk)] = chunk
    rsdp = next((bytes(t) for (sig, _), t in tables.items() if sig == "RSD PTR "), None)
    placed = {addr: bytes(t) for (sig, addr), t in tables.items() if sig != "RSD PTR "}
    if not rsdp or not placed:
        return None
    base = min(placed)
    end = max(a + len(t) for a, t in placed.items())
    if end - base > 1 << 20:
        return None
    mem = bytearray(end - base)
    for a, t in placed.items():
        mem[a - base:a - base + len(t)] = t
    return seed(0, base, rsdp, bytes(mem))


def main() -> int:
    SEEDS.mkdir(parents=True, exist_ok=True)
    kernel = ROOT / "build" / "clockbench.elf"
    written = 0
    for machine in ("q35", "pc"):
        for firmware in ("bios", "uefi"):
            cfg = qemu.QemuConfig(boot="iso" if firmware == "uefi" else "direct", kernel=kernel,
                                  iso=ROOT / "build" / "test" / "clockbench.iso", machine=machine, firmware=firmware, accel="tcg",
                                  append="" if firmware == "uefi" else "dump_acpi")
            if firmware == "uefi":
                continue  # the ISO's menu entries carry no dump_acpi; UEFI tables come through the same parser
            result = qemu.run(cfg, timeout=120)
            s = from_dump(records.parse(result.output))
            if s:
                (SEEDS / f"qemu-{machine}-{firmware}.bin").write_bytes(s)
                written += 1
    for name, (xsdt, tables) in {
        "synthetic-xsdt": (True, None),
        "synthetic-rsdt": (False, None),
        "synthetic-duplicate-hpet": (True, [ab.hpet(), ab.hpet(base=0xFED01000, number=1)]),
        "synthetic-x2apic": (True, [ab.madt([True], x2apic=[True, False]), ab.fadt(x_pm=ab.gas(0, 0xFED80000), flags=1 << 8)]),
    }.items():
        mem, ptr = ab.standard_machine(xsdt=xsdt, tables=tables)
        lo = 0x1000
        hi = max(i for i, b in enumerate(mem.data[:0xF0000]) if b) + 1
        (SEEDS / f"{name}.bin").write_bytes(seed(0, lo, bytes(ptr), bytes(mem.data[lo:hi])))
        written += 1
    print(f"wrote {written} seeds to {SEEDS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
