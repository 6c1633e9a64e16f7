"""`clockbench lab` through labgrid's own coordinator and exporter on
localhost (labsetup.py): two QEMU machines powered by a PDU on 127.0.0.1,
their consoles exported as NetworkSerialPorts; both runs reach the store
whole, each machine is powered off and its place released at the end; a
place the coordinator does not know is a tool error (69) before anything
runs, and nothing is stored."""

from __future__ import annotations

import subprocess
import sys

from helpers.paths import KERNEL
from clockbench.machines import qemu
from clockbench.runs import store
from helpers.tool import tool_env
from labsetup import Lab


def test_two_places_run_through_labgrid_into_the_store(tmp_path):
    machines = {f"qemu-{i}": qemu.QemuConfig(boot="direct", kernel=KERNEL, accel="tcg", machine=m, smp=n,
                                              append="duration=1 only=drift,read_cost,cpus")
                for i, (m, n) in enumerate((("q35", 1), ("pc", 2)), start=1)}
    lab = Lab(tmp_path, machines)
    try:
        db = tmp_path / "runs.db"
        # "ghost" is no place the coordinator knows: a tool error in one line (69), nothing run or stored
        env = tool_env()
        r = subprocess.run([sys.executable, "-m", "clockbench", "lab", "qemu-1", "ghost", "--coordinator", lab.address,
                            "--store", str(db)], capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 69 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r
        assert r.stderr.startswith("clockbench lab: no labgrid place 'ghost'") and not db.exists(), r
        r = subprocess.run([sys.executable, "-m", "clockbench", "lab", "qemu-1", "qemu-2", "--coordinator", lab.address,
                            "--store", str(db), "--log-dir", str(tmp_path / "logs"), "--timeout", "240", "--idle", "60",
                            "--firmware", "bios", "--every", "2"],
                           capture_output=True, text=True, timeout=400, env=env)
        assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n{lab.logs()}"
        with store.open_store(db) as st:
            rows = {x["machine"]: x for x in st.runs()}
        assert set(rows) == {"qemu-1", "qemu-2"}
        for name, row in rows.items():
            assert row["status"] == "passed" and row["source"] == "lab" and row["place"] == name, row.row
        assert rows["qemu-2"].figures["cpus"].value == 2
        # powered off, and the places free again
        assert lab.qemu_pid("qemu-1") is None and lab.qemu_pid("qemu-2") is None
        places = lab.client("who").stdout
        assert "qemu-1" not in places and "qemu-2" not in places, places
    finally:
        lab.close()
