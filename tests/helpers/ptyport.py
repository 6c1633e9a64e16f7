"""A pseudo-terminal standing in for a serial port: waiting for the reader."""

from __future__ import annotations

import os
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
