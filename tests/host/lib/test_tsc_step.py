"""A TSC's own step (lib/stats.c: stats_staircase_step), from a staircase
of growing delays, and the rule that a figure within STEP_FEW steps is not
printed as a cost. Known
answers: the staircase this development machine's AMD host gives (its TSC
moves by 26 ticks, yet back-to-back reads differ by 1 now and then), a
TSC that counts every tick, one clocked faster than the core."""

import ctypes
import random

import pytest

from helpers.hostlib import as_json


@pytest.fixture(scope="module")
def step(lib):
    lib.shim_stats_step.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint32]
    lib.shim_stats_step.restype = ctypes.c_char_p

    def run(values):
        arr = (ctypes.c_uint64 * max(1, len(values)))(*values)
        return as_json(lib.shim_stats_step(arr, len(values)))

    return run


def test_the_staircase_of_a_coarse_tsc(step):
    # seen on this machine's host (EPYC, TSC 2596 MHz): flat, then a jump of 26, with a stray fall back
    mins = [52] * 23 + [78] * 35 + [104] * 37 + [130] * 24 + [156, 130, 130, 130, 130, 156, 130, 130, 156]
    assert step(mins)["staircase"] == 26


def test_the_staircase_of_a_tsc_that_counts_every_tick(step):
    assert step(list(range(40, 168)))["staircase"] == 1


def test_the_staircase_of_a_tsc_faster_than_the_core(step):
    # the core at a third of the TSC's rate: each addition is 3 ticks
    assert step([30 + 3 * j for j in range(128)])["staircase"] == 3


def test_a_stray_small_jump_does_not_make_a_coarse_tsc_fine(step):
    rng = random.Random(7)
    mins = []
    for j in range(128):
        mins.append(26 * (2 + j // 24) + (1 if rng.random() < 0.05 else 0))
    assert step(mins)["staircase"] == 26 or step(mins)["staircase"] == 25


def test_a_flat_staircase_has_no_step(step):
    assert step([50] * 128)["staircase"] == 0
