"""Counter differences modulo the counter's width, at the edges of every width we read."""

import pytest


@pytest.mark.parametrize("width", [16, 24, 32, 64])
def test_delta_across_the_wrap(lib, width):
    top = (1 << width) - 1
    d = lib.shim_counter_delta
    assert d(width, 0, 0) == 0
    assert d(width, 0, 1) == 1
    assert d(width, top, 0) == 1  # the wrap itself
    assert d(width, top - 4, 5) == 10
    assert d(width, 5, top - 4) == top - 9
    assert d(width, 1, 0) == top  # a step "backwards" is a huge forward delta: callers test for it
    assert d(width, 0, top) == top


@pytest.mark.parametrize("width", [16, 24, 32])
def test_bits_above_the_width_are_ignored(lib, width):
    # a 24-bit PM timer read through a 32-bit port, with junk in the high bits
    junk = 0xAB << width if width < 64 else 0
    assert lib.shim_counter_delta(width, junk | 10, 20) == 10
