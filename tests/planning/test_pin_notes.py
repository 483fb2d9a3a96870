"""Pins that name no vertex of the planned job: quiet when a shared inventory pins other jobs' sources (the shipped
demo), a note when it looks like a typo or leaves one of this job's sources without a birth pin."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from placement.costmodel import build_problem
from placement.inventory import Inventory
from placement.profile.format import load_profile

REPO = Path(__file__).resolve().parents[2]
EDGE_LAB = yaml.safe_load((REPO / "inventory" / "edge-lab.yaml").read_text())
IOT = load_profile(REPO / "examples" / "profiles" / "iot-sensors.json")


def notes(pins: dict, profile=IOT) -> tuple[str, ...]:
    doc = copy.deepcopy(EDGE_LAB)
    doc["pins"] = pins
    return build_problem(Inventory.model_validate(doc), profile).warnings


@pytest.mark.parametrize("profile", sorted((REPO / "examples" / "profiles").glob("*.json")), ids=lambda p: p.stem)
def test_the_shipped_demo_inventory_plans_every_example_without_pin_notes(profile):
    assert notes(EDGE_LAB["pins"], load_profile(profile)) == ()


def test_a_typo_is_named_with_the_vertex_it_was_meant_for():
    found = notes({"sources": {"Source: Sensor": ["rpi1", "rpi2", "rpi3"], "Source: Bids": "rpi1"}})
    assert found[0] == (
        "pins.sources.Source: Sensor names no vertex of job 'iot-sensors' and is ignored; "
        "did you mean 'Source: Sensors'?"
    )
    assert found[1] == (
        "1 pins name no vertex of job 'iot-sensors' and are ignored: pins.sources.Source: Bids "
        "(sources without a birth pin, run at the server side: Source: Sensors)"
    )


def test_another_jobs_source_pins_are_news_only_when_this_job_has_an_unborn_source():
    assert notes({"sources": {"Source: Sensors": "rpi1", "Source: Bids": "rpi2"}}) == ()
    assert notes({"sources": {"Source: Bids": "rpi2"}}) == (
        "1 pins name no vertex of job 'iot-sensors' and are ignored: pins.sources.Source: Bids "
        "(sources without a birth pin, run at the server side: Source: Sensors)",
    )


def test_an_operator_pin_for_no_vertex_of_this_job_is_always_noted():
    assert notes({"sources": {"Source: Sensors": "rpi1"}, "operators": {"Hot Items": "server"}}) == (
        "1 pins name no vertex of job 'iot-sensors' and are ignored: pins.operators.Hot Items",
    )
