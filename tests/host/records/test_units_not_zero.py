"""Figures that are not zero never print as zero: a 0.5 Hz rate, an RTC
edge bracket of 30 ns, an RTC with no edge fitted (no figure at all, said in
words), and a rate that rounds up into the next unit."""


from clockbench.records import figures, results
from clockbench.report import report
from helpers.paths import FIXTURES


def test_hz_keeps_what_is_below_one_hz():
    assert figures.hz(0.5) == "0.5 Hz"
    assert figures.hz(0.25) == "0.25 Hz"
    assert figures.hz(0.000123456789) == "0.000123457 Hz"
    assert figures.hz(0) == "0 Hz"
    # the nominal rates keep their words
    assert (figures.hz(1), figures.hz(32768), figures.hz(3579545)) == ("1 Hz", "32.768 kHz", "3.579545 MHz")
    assert figures.hz(2596120080, 0.21) == "2596.12008 MHz"


def test_hz_picks_the_unit_on_the_figure_as_printed():
    assert figures.hz(999999.9999) == "1.000000 MHz"
    assert figures.hz(999.9996) == "1 kHz"
    assert figures.hz(999.4) == "999 Hz"


def rtc_row(rec: dict, what: str) -> str:
    return next(r["value"] for r in report.rtc_rows({"rtc": rec}) if r["what"] == what)


def test_no_edge_fitted_is_said_in_words_not_0_ns():
    base = {"present": True, "edges": 1, "edges_used": 0, "widest_edge_ns": None, "longest_spin_us": 3994.2,
            "phase_wait_ms": 646.8, "window_s": 2.0}
    assert rtc_row(base, "edge timing").startswith("no edges fitted, ")
    # a log from before the figure became null: 0.0 with no edge fitted
    assert rtc_row(dict(base, widest_edge_ns=0.0), "edge timing").startswith("no edges fitted, ")
    # the emulator fixture is such a log (1 edge, none fitted)
    res = results.from_log((FIXTURES / "tcg-q35-emulator.log").read_text())
    assert res["rtc"]["edges_used"] == 0
    assert rtc_row(res["rtc"], "edge timing").startswith("no edges fitted, ")


def test_a_narrow_bracket_prints_in_ns():
    rec = {"present": True, "edges": 3, "edges_used": 3, "widest_edge_ns": 30.0, "longest_spin_us": 1.0,
           "phase_wait_ms": 1.0, "window_s": 2.0}
    assert rtc_row(rec, "edge timing").startswith("widest bracket 30.0 ns, ")
