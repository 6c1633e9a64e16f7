"""docs/fleet.md's examples hold: the LAVA job's monitors find every check of
the real fixture logs and the run's end; the machines files in the page and
its summary parse; the labgrid environment and exporter snippets are YAML
naming the strategy's bindings."""

from __future__ import annotations

import re

import pytest
import yaml

from clockbench.fleet import netboot
from clockbench.records import records
from helpers.paths import ROOT

DOC = (ROOT / "docs" / "fleet.md").read_text()
LOGS = [p for p in sorted((ROOT / "tests" / "fixtures").glob("*.log")) if not p.name.startswith("os-")]


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def lava_job() -> dict:
    [job] = [yaml.safe_load(b) for b in blocks(DOC, "yaml") if "actions:" in b]
    return job


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_lava_monitors_find_every_check_and_the_end(log):
    text = records.clean(log.read_text())
    test = next(a["test"] for a in lava_job()["actions"] if "test" in a)
    checks_mon, run_mon = test["monitors"]
    # as LAVA does: from the start pattern to the end pattern, the pattern on each line
    start = re.search(checks_mon["start"], text)
    end = re.search(checks_mon["end"], text[start.end():])
    assert start and end
    window = text[start.end():start.end() + end.start()]
    found = [m.groupdict() for m in re.finditer(checks_mon["pattern"], window)]
    expected = [l for l in window.split("\n") if re.match(r"(PASS|FAIL|SKIP): ", l)]
    assert len(found) == len(expected) > 10
    assert {f["result"] for f in found} <= set(checks_mon["fixupdict"])
    assert all(checks_mon["fixupdict"][f["result"]] in ("pass", "fail", "skip") for f in found)
    n = {k: sum(1 for f in found if f["result"] == k) for k in ("PASS", "FAIL", "SKIP")}
    s = records.of_type(records.parse_log(log.read_text()).records, "summary")[0]
    assert (n["PASS"], n["FAIL"], n["SKIP"]) == (s["pass"], s["fail"], s["skip"])
    rest = text[start.end() + end.start():]
    r = re.search(run_mon["pattern"], rest)
    assert r and run_mon["fixupdict"][r["result"]] == "pass" and re.search(run_mon["end"], rest)


def test_the_machines_files_shown_parse():
    shown = blocks(DOC, "toml")  # the summary's ("In short", once the README's) and "Network boot"'s
    assert len(shown) >= 2
    for text in shown:
        cfg = netboot.parse_config(text)
        assert cfg.default == "profile=quick" and cfg.cmdline("52:54:00:00:00:01") == "profile=standard"
    network_boot = DOC[DOC.index("## Network boot"):]
    assert netboot.parse_config(blocks(network_boot, "toml")[0]).cmdline("52:54:00:12:34:57") == "profile=standard"


def test_the_labgrid_snippets_are_yaml_with_the_strategy_and_its_bindings():
    env, exporter = [yaml.safe_load(b) for b in blocks(DOC, "yaml") if "actions:" not in b]
    drivers = env["targets"]["main"]["drivers"]
    assert {"NetworkPowerDriver", "SerialDriver", "ClockbenchStrategy"} <= set(drivers)
    assert env["imports"] == ["tools/labgrid/clockbench_strategy.py"]
    assert (ROOT / env["imports"][0]).is_file()
    [place] = exporter.values()
    assert place["NetworkSerialPort"]["protocol"] == "raw" and place["NetworkPowerPort"]["model"] == "simplerest"
    strategy = (ROOT / "tools" / "labgrid" / "clockbench_strategy.py").read_text()
    assert 'bindings = {"power": "PowerProtocol", "console": "ConsoleProtocol"}' in strategy
