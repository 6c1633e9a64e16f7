"""Cloud Hypervisor's command line for one run of the image (microvm.py
runs it): the PVH kernel by --kernel, COM1 on its standard output
(--serial tty), no virtio console. Its own log lines go to standard error,
at its INFO level (-v; Firecracker logs at that level by default): there it
names each guest access to a port or address it has no device for ("Guest
PIO write to unregistered address 0x43"), which the image must never make,
and each write to its debug port 0x80 ("Debug I/O port") comes at WARN.
With an API socket (--api-socket path=...), its REST API takes
`PUT /api/v1/vm.pause`, `vm.resume`, `vm.snapshot` ({"destination_url":
"file:///dir"}); a snapshot is started again with `--restore
source_url=file:///dir` (Cloud Hypervisor's docs/api.md and docs/snapshot_restore.md)."""

from __future__ import annotations

from pathlib import Path

from clockbench.machines.vmrun import API_BOUND_S, api_request

BINARY = "cloud-hypervisor"
API_PREFIX = "/api/v1/"


def command(cfg, binary: str, workdir: Path) -> tuple[list[str], None]:
    """cfg: a microvm.VmmConfig. Cloud Hypervisor reads no file of ours."""
    cmd = [binary, "--kernel", str(cfg.kernel), "--cmdline", cfg.append,
           "--cpus", f"boot={cfg.smp}", "--memory", f"size={cfg.memory_mib}M",
           "--serial", "tty", "--console", "off", "-v"]
    if cfg.api_socket is not None:
        cmd += ["--api-socket", f"path={cfg.api_socket}"]
    return cmd, None


def api(sock: Path, action: str, body: dict | None = None,
        bound_s: float = API_BOUND_S) -> tuple[int, dict | str | None]:
    """One call of the REST API: action "vm.pause", "vm.resume", "vm.snapshot", "vm.info", "vmm.ping"..."""
    method = "GET" if action in ("vm.info", "vmm.ping", "vm.counters") else "PUT"
    return api_request(sock, method, API_PREFIX + action, body, bound_s=bound_s)
