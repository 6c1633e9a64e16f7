"""The loopback ssh hosts every test of `clockbench hosts` in this folder
may ask for (sshhosts.py): `ssh_fleet`, one fleet per module."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers.paths import BUILD, ROOT
from sshhosts import SshFleet, bundle, need_tools


def jdk_folder() -> Path:
    """The JDK's own folder (/usr/lib/jvm/java-17-openjdk-amd64): hidden, java on PATH leads nowhere."""
    java = shutil.which("java")
    if java is None:
        pytest.fail("java is not installed (`make deps` installs openjdk-17-jdk-headless)")
    return Path(java).resolve().parents[1]


@pytest.fixture(scope="module")
def ssh_fleet(tmp_path_factory):
    """Hosts a, b, c on 127.0.0.2-4; nojava on 127.0.0.5, whose sshd sees
    the JDK's folder as an empty tmpfs; gone on 127.0.0.6, where nothing
    listens; .bundle the bundle (make bundle's, as make test makes it). A test
    adds an os-vm guest with ssh_fleet.add(NAME, "127.0.0.1", PORT) (the
    guest taking ssh_fleet.user_key's public half), and names it in
    ssh_fleet.inventory([...])."""
    need_tools()
    root = tmp_path_factory.mktemp("ssh-hosts")
    f = SshFleet(root)
    try:
        for name, address in (("a", "127.0.0.2"), ("b", "127.0.0.3"), ("c", "127.0.0.4")):
            f.start(name, address)
        f.start("nojava", "127.0.0.5", hide=[jdk_folder()])
        f.unreachable("gone", "127.0.0.6")
        f.bundle = bundle(root, ROOT, BUILD)
        yield f
    finally:
        f.close()
