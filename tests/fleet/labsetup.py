"""A labgrid lab on localhost for the tests: labgrid's own coordinator and
exporter (build/labgrid-venv), QEMU machines powered through a QemuPdu
(lab.py) and their serial ports, QEMU's `-serial tcp:127.0.0.1:PORT,
server=on,wait=on`, exported as NetworkSerialPorts (raw): each log crosses
labgrid's network path."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from helpers.ports import free_port
from helpers.tool import not_installed
from clockbench.fleet import lab
from clockbench.machines import qemu


def need_labgrid() -> None:
    ok, why = lab.available()
    if not ok:
        not_installed(why)


class Lab:
    def __init__(self, workdir: Path, machines: dict[str, qemu.QemuConfig]):
        """machines: place name -> its QEMU (serial_tcp set here)."""
        need_labgrid()
        self.workdir = workdir
        self.bin = lab.VENV / "bin"
        self.address = f"127.0.0.1:{free_port()}"
        self.env = {**os.environ, "LG_COORDINATOR": self.address, "PYTHONPATH": ""}
        self.index = {name: i + 1 for i, name in enumerate(machines)}
        for name, cfg in machines.items():
            cfg.serial_tcp = free_port()
        self.machines = machines
        self.pdu = lab.QemuPdu({self.index[n]: c for n, c in machines.items()}).start()
        self.procs: list[subprocess.Popen] = []
        self.procs.append(self._spawn("coordinator", [self.bin / "labgrid-coordinator", "-l", self.address]))
        self._wait_port(self.address)
        conf = workdir / "exporter.yaml"
        conf.write_text("".join(
            f"{name}:\n  NetworkSerialPort:\n    host: 127.0.0.1\n    port: {cfg.serial_tcp}\n    protocol: raw\n"
            f"  NetworkPowerPort:\n    model: simplerest\n    host: '{self.pdu.url()}'\n    index: {self.index[name]}\n"
            for name, cfg in machines.items()))
        self.procs.append(self._spawn("exporter", [self.bin / "labgrid-exporter", "-c", self.address, "-n", "clockbench-test",
                                                   "--hostname", "127.0.0.1", conf]))
        for name in machines:
            self.client("-p", name, "create")
            self.client("-p", name, "add-match", f"clockbench-test/{name}/*")
        deadline = time.monotonic() + 60
        while True:  # the exporter has registered every resource
            out = self.client("resources").stdout
            if all(f"clockbench-test/{n}/NetworkSerialPort" in out for n in machines):
                break
            assert time.monotonic() < deadline, f"the exporter's resources never appeared:\n{out}\n{self.logs()}"
            time.sleep(0.3)

    def _spawn(self, name: str, cmd) -> subprocess.Popen:
        return subprocess.Popen([str(c) for c in cmd], cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=open(self.workdir / f"{name}.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)

    def _wait_port(self, address: str) -> None:
        host, port = address.split(":")
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection((host, int(port)), timeout=1).close()
                return
            except OSError:
                assert time.monotonic() < deadline, f"nothing listens on {address}:\n{self.logs()}"
                time.sleep(0.1)

    def client(self, *args: str) -> subprocess.CompletedProcess:
        r = subprocess.run([str(self.bin / "labgrid-client"), *args], env=self.env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"labgrid-client {' '.join(args)}: {r.stderr}"
        return r

    def qemu_pid(self, name: str) -> int | None:
        p = self.pdu.procs.get(self.index[name])
        return p.pid if p is not None and p.poll() is None else None

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.read_text()[-3000:]}" for p in self.workdir.glob("*.log"))

    def close(self) -> None:
        self.pdu.stop()
        for p in reversed(self.procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
