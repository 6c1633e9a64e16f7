"""Stand-ins for a machine's serial port: a pseudo-terminal, waited on
until its reader has opened it; a free TCP port for a console served over
TCP."""

from __future__ import annotations

import os
import socket
import termios
import time


def wait_configured(name: str, timeout: float = 30.0) -> None:
    """Waits until a reader has opened the pseudo-terminal NAME and made it raw, as pyserial does when it opens a port,
    then a little more: pyserial empties the port's input right after, so bytes written before then are lost. A fixed
    sleep instead lost them on a loaded host, where the reader can take seconds to start."""
    deadline = time.monotonic() + timeout
    fd = os.open(name, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        while termios.tcgetattr(fd)[3] & termios.ICANON:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing opened {name} as a serial port within {timeout} s")
            time.sleep(0.02)
    finally:
        os.close(fd)
    time.sleep(0.3)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
