"""Firecracker's command line for one run of the image (microvm.py runs
it): a JSON configuration file in the work folder (`--config-file`), the
PVH kernel as its boot source, COM1 on its standard output, its own log
lines on standard error (`--log-path /dev/stderr`). Without an API socket it runs `--no-api`; with
one (`--api-sock`), the API stays open while the configured machine runs:
`PATCH /vm {"state": "Paused"|"Resumed"}`, `PUT /snapshot/create`
({"snapshot_type": "Full", "snapshot_path": ..., "mem_file_path": ...}),
and for a new Firecracker `PUT /snapshot/load` (Firecracker's
docs/snapshotting/snapshot-support.md)."""

from __future__ import annotations

import json
from pathlib import Path

from clockbench.machines.vmrun import API_BOUND_S, api_request

BINARY = "firecracker"
CONFIG = "firecracker.json"


def config(cfg) -> dict:
    """The configuration file's contents for cfg, a microvm.VmmConfig."""
    return {"boot-source": {"kernel_image_path": str(Path(cfg.kernel).resolve()), "boot_args": cfg.append},
            "drives": [],
            "machine-config": {"vcpu_count": cfg.smp, "mem_size_mib": cfg.memory_mib}}


def command(cfg, binary: str, workdir: Path) -> tuple[list[str], dict]:
    """Writes the configuration into workdir and returns the command line and the configuration."""
    conf = config(cfg)
    path = Path(workdir) / CONFIG
    path.write_text(json.dumps(conf, indent=1) + "\n")
    # Its log goes to standard output unless given a path: /dev/stderr
    # keeps it apart from the serial port, as Cloud Hypervisor's is.
    cmd = [binary, "--config-file", str(path), "--log-path", "/dev/stderr"]
    cmd += ["--api-sock", str(cfg.api_socket)] if cfg.api_socket is not None else ["--no-api"]
    return cmd, conf


def api(sock: Path, method: str, path: str, body: dict | None = None,
        bound_s: float = API_BOUND_S) -> tuple[int, dict | str | None]:
    """One call of the API: ("PATCH", "/vm", {"state": "Paused"}), ("PUT", "/snapshot/create", {...}), ("GET", "/")..."""
    return api_request(sock, method, path, body, bound_s=bound_s)
