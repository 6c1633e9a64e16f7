"""Issue 48's repeatability goal, measured by `make bench`: of every pair of
back-to-back runs, per API, whether the two p50 intervals overlap."""

from clockbench.cli.bench import interval_overlap


def rec(api, lo, hi, language="python", cs="tsc"):
    return {"type": "lang_clock", "language": language, "api": api, "clocksource": cs, "p50_ci_ns": [lo, hi] if lo is not None else None}


def test_pairs_whose_intervals_overlap_are_counted_and_the_others_named():
    runs = [[rec("time_ns", 58, 62), rec("perf_counter_ns", 57, 60)],
            [rec("time_ns", 61, 70), rec("perf_counter_ns", 100, 110)],
            [rec("time_ns", 62, 62.5), rec("perf_counter_ns", 59, 101)]]
    o = interval_overlap(runs)
    # time_ns: (1,2) overlap at 61-62, (1,3) touch at 62, (2,3) overlap; perf_counter_ns: (1,2) apart, (1,3) and (2,3) overlap
    assert (o["pairs"], o["overlapping"], o["share"]) == (6, 5, 0.8333), o
    assert o["apart"] == [{"language": "python", "api": "perf_counter_ns", "clocksource": "tsc", "runs": [1, 2],
                           "intervals": [[57, 60], [100, 110]]}], o


def test_a_run_without_an_interval_is_not_counted_as_agreeing():
    runs = [[rec("time_ns", 58, 62)], [rec("time_ns", None, None)], [rec("time_ns", 59, 61), rec("Date.now", 40, 41, "node")]]
    o = interval_overlap(runs)
    assert (o["pairs"], o["overlapping"], o["pairs_without_interval"]) == (1, 1, 5), o  # Date.now is missing from two runs
    assert interval_overlap([[], []])["share"] is None
