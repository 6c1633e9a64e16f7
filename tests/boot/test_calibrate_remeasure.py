"""The quick estimate's second opinion (experiments/exp_calibrate.c): two
references that disagree are both measured once more before the check
judges them. Known answers from inside the image (cal_skew=PPM:N makes the
second reference's estimate PPM too high for its first N measurements):
- once: the first pair disagrees by PPM, the second agrees, the check passes
  and the record says both were measured again, and by how much they were off;
- twice: the second pair disagrees by PPM too, and the check fails, naming it.
TCG, one cheap experiment after the estimate."""

from __future__ import annotations

import pytest

from clockbench.records import records

SKEW_PPM = 100000
# the two references' own disagreement under TCG (both are QEMU's host clock)
# plus the estimate's rounding: far inside this
TOLERANCE_PPM = 2000
CHECK = "quick TSC estimate agrees across references"


def run(boot, skew: str):
    b = boot(boot="direct", accel="tcg", append=f"only=read_cost cal_skew={skew}", timeout=120)
    (cal,) = records.of_type(b.records, "calibration")
    (check,) = [c for c in records.of_type(b.records, "check") if c["name"] == CHECK]
    return b, cal, check


def test_a_disagreement_once_is_measured_again_and_passes(boot):
    b, cal, check = run(boot, f"{SKEW_PPM}:1")
    assert (cal["skew_injected_ppm"], cal["skew_injected_times"]) == (SKEW_PPM, 1), cal
    assert abs(cal["first_disagreement_ppm"] - SKEW_PPM) < TOLERANCE_PPM, cal
    assert check["result"] == "PASS", check
    assert abs(cal["second_hz"] - cal["estimate_hz"]) / cal["estimate_hz"] * 1e6 < TOLERANCE_PPM, cal
    assert "both measured again" in b.output and b.status == 0, b.explain()


def test_a_disagreement_that_stays_fails_the_check_with_its_size(boot):
    b, cal, check = run(boot, f"{SKEW_PPM}:2")
    assert abs(cal["first_disagreement_ppm"] - SKEW_PPM) < TOLERANCE_PPM, cal
    assert check["result"] == "FAIL", check
    shown = int(check["detail"].split(" gives ")[1].split(" ppm")[0])
    assert abs(shown - SKEW_PPM) < TOLERANCE_PPM, check
    assert b.status == 1, b.explain()


@pytest.mark.parametrize("bad", ["abc", "100000", "0:1", "100000:3"])
def test_a_bad_value_gets_a_note_and_nothing_is_skewed(boot, bad):
    b = boot(boot="direct", accel="tcg", append=f"only=read_cost cal_skew={bad}", timeout=120)
    assert f"Note: cal_skew={bad} is not PPM:N" in b.output
    (cal,) = records.of_type(b.records, "calibration")
    assert "skew_injected_ppm" not in cal and "first_disagreement_ppm" not in cal, cal
