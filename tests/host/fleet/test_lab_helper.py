"""The labgrid helper (tools/labgrid/clockbench_lab.py) keeps its place's
release whatever SIGTERM comes when: the capture sends one as soon as it has
the verdict, often just as the helper's run ends by itself, and one that
landed in the helper's power-off or release cut it short and left the place
acquired (test_lab.py, in a CI-like run: qemu-1 still acquired). labgrid is
stood in for by a module of fakes; the helper's own code runs in this
process, the signal sent to it for real."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import types

import pytest

from helpers.paths import ROOT

HELPER = ROOT / "tools" / "labgrid" / "clockbench_lab.py"


@pytest.fixture
def helper(monkeypatch):
    spec = importlib.util.spec_from_file_location("clockbench_lab_under_test", HELPER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    calls = []

    def client(*args):
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, "", "")
    monkeypatch.setattr(mod, "client", client)
    monkeypatch.setattr(sys, "argv", ["clockbench_lab.py", "--place", "qemu-1"])
    old = signal.getsignal(signal.SIGTERM)
    yield mod, calls
    signal.signal(signal.SIGTERM, old)


def fake_labgrid(monkeypatch, on_off, on_read=None):
    class Strategy:
        def transition(self, state):
            if state == "off":
                on_off()

        def read_run(self, sink, timeout, idle):
            if on_read:
                on_read()
            return "the run ended: SUMMARY seen"

    class Target:
        def get_driver(self, name):
            return Strategy()

        def cleanup(self):
            pass

    class Environment:
        def __init__(self, path):
            pass

        def get_target(self, name):
            return Target()
    monkeypatch.setitem(sys.modules, "labgrid", types.SimpleNamespace(Environment=Environment))


def sigterm():
    os.kill(os.getpid(), signal.SIGTERM)


def run_main(mod) -> int:
    try:
        return mod.main()
    except KeyboardInterrupt:  # the helper's own SIGTERM handler raises it
        pytest.fail("a SIGTERM got through the helper's power-off or release: its place would stay acquired")


def test_a_sigterm_in_the_power_off_does_not_cut_the_release_short(helper, monkeypatch, capsys):
    mod, calls = helper
    fake_labgrid(monkeypatch, on_off=sigterm)
    assert run_main(mod) == 0  # the run ended by itself, as it should
    assert calls == [("-p", "qemu-1", "acquire"), ("-p", "qemu-1", "release")]
    assert "the run ended" in capsys.readouterr().err


def test_a_sigterm_in_the_run_powers_off_and_releases(helper, monkeypatch, capsys):
    mod, calls = helper
    fake_labgrid(monkeypatch, on_off=sigterm, on_read=sigterm)  # and a second one in the power-off
    assert run_main(mod) == 1
    assert calls[-1] == ("-p", "qemu-1", "release")
    assert capsys.readouterr().err.splitlines()[-1] == "clockbench lab: stopped"


def test_a_release_that_fails_is_said(helper, monkeypatch, capsys):
    mod, calls = helper
    fake_labgrid(monkeypatch, on_off=lambda: None)

    def client(*args):
        calls.append(args)
        failed = args[-1] == "release"
        return subprocess.CompletedProcess(args, int(failed), "", "Error: the coordinator went away\n" if failed else "")
    monkeypatch.setattr(mod, "client", client)
    assert run_main(mod) == 0
    assert capsys.readouterr().err.splitlines()[-1] == \
        "clockbench lab: could not release place qemu-1: Error: the coordinator went away"
