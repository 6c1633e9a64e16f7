"""The machine's output pipe holds a whole run's output (vmrun.widen_pipe):
a monitor that cannot write to a full pipe holds the rest, and loses it when
the guest ends the machine at once (isa-debug-exit). With a reader starved
of the CPU, logs lost their ends; a 1 MiB pipe takes every byte a run
writes without waiting for the reader."""

import sys

from clockbench.machines import vmrun

CHILD = ("import fcntl, os, sys, time; time.sleep(0.3); size = fcntl.fcntl(1, 1032); "  # F_GETPIPE_SZ
         "os.set_blocking(1, False); data = b'x' * 300000; n = os.write(1, data); "
         "sys.stderr.write(f'{size} {n}')")


def test_a_whole_runs_output_goes_into_the_pipe_at_once():
    # the child writes 300 KB in one non-blocking write and exits: a 64 KiB
    # pipe would take 65536 bytes of it, this one all of it
    got = vmrun.run([sys.executable, "-c", CHILD], 30)
    size, written = map(int, got.stderr.split())
    assert size == vmrun.PIPE_BYTES and written == 300000, got.stderr
    assert len(got.output) == 300000
