"""The verdict (lib/verdict.c): one row per counter from what the
experiments found, computed in one place."""

import ctypes
import json

import pytest

NONE, REFERENCE, TSC_MEASURED, VS_NOMINAL = range(4)
UNKNOWN, YES, NO, STUCK = range(4)


@pytest.fixture(scope="module")
def verdict(lib):
    f = lib.shim_verdict
    f.restype = ctypes.c_char_p
    f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int, ctypes.c_int64, ctypes.c_int, ctypes.c_int,
                  ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_int]

    def call(present=1, measured=1, read=20_000, repeats=0, step=0, mono=YES, freq=NONE, ppm=0, u=0, tsc=0,
             intercepted=0, invariant=1):
        return json.loads(f(present, measured, read, repeats, step, mono, freq, ppm, u, tsc, intercepted, invariant))

    return call


def test_absent_counter_gives_its_reason(verdict):
    v = verdict(present=0, measured=0)
    assert not v["present"] and not v["measured"] and v["advice"] == "gone"


def test_resolution_is_the_step_when_reads_repeat_else_the_read(verdict):
    assert verdict(read=70_000, repeats=1, step=279_365)["res"] == "279.4"
    assert verdict(read=70_000, repeats=0, step=279_365)["res"] == "70.0"
    # a step finer than a read is not a resolution you can use
    assert verdict(read=70_000, repeats=1, step=10_000)["res"] == "70.0"


def test_frequency_cells(verdict):
    v = verdict(tsc=1, freq=TSC_MEASURED, u=173)
    assert v["freq"] == "+-0.173 ppm" and v["has_ppm"] and v["ppm_x100"] == 17
    assert verdict(freq=REFERENCE)["freq"] == "reference"
    v = verdict(freq=VS_NOMINAL, ppm=-615, u=462)
    assert v["freq"] == "-0.61+-0.46 ppm" or v["freq"] == "-0.62+-0.46 ppm"
    assert v["ppm_x100"] in (-61, -62)


def test_advice_follows_what_was_found(verdict):
    assert verdict(mono=NO, tsc=1)["advice"] == "do not trust: it stepped backwards"
    assert verdict(mono=STUCK)["advice"] == "do not trust: not monotonic or stopped"
    assert verdict(tsc=1, intercepted=1)["advice"].startswith("monotonic, but the hypervisor traps")
    assert verdict(tsc=1, invariant=0)["advice"].startswith("cheap, but not invariant")
    assert verdict(tsc=1)["advice"] == "good" and verdict()["advice"] == "good"
