"""Valid input that probably was not meant: a warning on stderr (also with --json), an error with --strict
(issue 26, defect 5). Before: a mistyped source pin planned everything on the server with WAN 0 and, with --json,
its "did you mean" reached neither stream; another job's profile and tc's "mbps" (megabytes) passed without a word.
"""

from __future__ import annotations

import json

import pytest
import yaml

from support.cli import EDGE_LAB, PROFILES, one_line_error, plan_args, run_placement


def _inventory(tmp_path, edit) -> str:
    doc = yaml.safe_load(EDGE_LAB.read_text())
    edit(doc)
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _typo_pin(doc):
    doc["pins"]["sources"]["Source: Sensor"] = doc["pins"]["sources"].pop("Source: Sensors")


def _megabytes(doc):
    doc["links"][0]["bandwidth"] = "50mbps"


def _pinned_1_20(doc):
    doc["flink"]["version"] = "1.20.5"


def _collected_on_2_3(tmp_path):
    """The shipped IoT profile as `placement profile` writes one from a history collected on a 2.3.0 cluster."""
    doc = json.loads((PROFILES / "iot-sensors.json").read_text())
    doc["job"]["flink_version"] = "2.3.0"
    path = tmp_path / "iot-2.3.json"
    path.write_text(json.dumps(doc))
    return path


CASES = {
    "pin typo": (
        _typo_pin,
        PROFILES / "iot-sensors.json",
        "pins.sources.Source: Sensor names no vertex of job 'iot-sensors' and is ignored; "
        "did you mean 'Source: Sensors'?",
    ),
    "other job": (
        lambda doc: doc.pop("jobs", None),
        PROFILES / "branching-join.json",  # no entry for the job
        "job.name: is 'iot-sensors' but the profile is of job 'camera-meter-join'",
    ),
    "bytes unit": (
        _megabytes,
        PROFILES / "iot-sensors.json",
        "links[0].bandwidth: '50mbps' is in tc's bytes per second (400 Mbit/s); write '50mbit'",
    ),
    "other flink release": (
        _pinned_1_20,
        _collected_on_2_3,
        "flink.version: the cluster is pinned to Flink 1.20.5 but the profile was collected on "
        "2.3.0: profile the job on 1.20.5",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_warning_reaches_stderr_and_json_stays_json(tmp_path, case):
    edit, profile, says = CASES[case]
    inventory = _inventory(tmp_path, edit)
    profile = profile(tmp_path) if callable(profile) else profile
    done = run_placement(*plan_args(tmp_path / "plan", inventory, profile), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["status"] == "optimal"
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    assert [w for w in warnings if says in w and str(inventory) in w], done.stderr  # names the file and field


@pytest.mark.parametrize("case", CASES)
def test_strict_makes_it_an_error_before_anything_is_written(tmp_path, case):
    edit, profile, says = CASES[case]
    inventory = _inventory(tmp_path, edit)
    profile = profile(tmp_path) if callable(profile) else profile
    done = run_placement(*plan_args(tmp_path / "plan", inventory, profile), "--strict", cwd=tmp_path)
    assert done.returncode == 2
    line = one_line_error(done)
    assert says in line and line.endswith("[--strict]")
    assert not (tmp_path / "plan").exists()


def test_the_tables_say_it_too_and_once(tmp_path):
    inventory = _inventory(tmp_path, _typo_pin)
    done = run_placement(*plan_args(tmp_path / "plan", inventory), cwd=tmp_path)
    assert done.returncode == 0
    assert done.stderr.count("did you mean 'Source: Sensors'?") == 1
    assert "did you mean" not in done.stdout  # said once, as a warning, not again as a note
