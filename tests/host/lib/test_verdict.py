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
                  ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                  ctypes.c_int, ctypes.c_int64, ctypes.c_int, ctypes.c_int64]

    def call(present=1, measured=1, read=20_000, repeats=0, step=0, mono=YES, freq=NONE, ppm=0, u=0, tsc=0,
             intercepted=0, invariant=1, below_step=0, tsc_step=0, batch_done=0, batch=0):
        return json.loads(f(present, measured, read, repeats, step, mono, freq, ppm, u, tsc, intercepted, invariant,
                            below_step, tsc_step, batch_done, batch))

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


@pytest.fixture(scope="module")
def read_cost(lib):
    f = lib.shim_read_cost
    f.restype = ctypes.c_char_p
    f.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.c_int64, ctypes.c_int, ctypes.c_int64]
    return lambda p50, below, step, batch_done, batch: json.loads(f(p50, below, step, batch_done, batch))


def test_a_read_cost_is_one_figure_in_words_and_in_a_cell(read_cost):
    """lib/verdict.c's read_cost_*: the words every output prints, the
    narrow tables' cell and the QR's tenths all carry the same figure:
    the p50 as measured, or below the TSC's step the batch's, marked."""
    c = read_cost(29_640, 0, 10_000, 1, 28_100)
    assert (c["text"], c["cell"], c["ns_x10"]) == ("29.6 ns", "29.6", 296)
    c = read_cost(10_000, 1, 10_000, 1, 9_541)
    assert c["text"] == "below the TSC's step (10.0 ns): 9.54 ns a read by the batch"
    assert (c["cell"], c["ns_x10"]) == ("9.54*", 95)
    # no batch (a counter other than a TSC variant): nothing stands for the read
    c = read_cost(0, 1, 10_000, 0, 0)
    assert (c["text"], c["cell"], c["ns_x10"]) == ("below the TSC's step (10.0 ns): not resolved", "<10.0", 100)


def test_the_verdict_row_shows_the_batch_figure_below_the_step(verdict):
    """The terminal's and the summary screen's verdict cell and the QR's
    tenths: the batch's 9.54, marked, never "<10.0" where a batch ran."""
    v = verdict(read=10_000, tsc=1, below_step=1, tsc_step=10_000, batch_done=1, batch=9_541)
    assert (v["read"], v["read_ns_x10"]) == ("9.54*", 95)
    assert v["res"] == "10.0"  # the batch's 9.54 is finer than the TSC's step: the step is what a read resolves
    # a read dearer than the step: the resolution is the read's one figure, not its quantised p50
    v = verdict(read=594_800, tsc=1, below_step=1, tsc_step=318_300, batch_done=1, batch=525_460)
    assert (v["read"], v["res"]) == ("525.46*", "525.5"), v
    v = verdict(read=29_640, tsc=1, tsc_step=10_000, batch_done=1, batch=28_100)
    assert (v["read"], v["read_ns_x10"]) == ("29.6", 296)
