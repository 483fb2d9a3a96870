"""``placement.planning.plan`` called directly, as watch, the lab and the benchmarks call it: one job and several
through one pipeline, a bad combination of options refused in the request, the ``--json`` summary alike for both,
and the running jobs read by an injected reader (no cluster)."""

from __future__ import annotations

import json

import pytest
import yaml

from placement.costmodel.model import RunningUse
from placement.errors import BadInput
from placement.planning import PlanRequest, plan, summary_json, write_outcome
from support.cli import EDGE_LAB, IOT, PROFILES
from support.planning import FakeClusterReader

NEXMARK = PROFILES / "nexmark-hot-items.json"


def request(*profiles, **options) -> PlanRequest:
    said: list[str] = []
    return PlanRequest(
        inventory=str(EDGE_LAB), profiles=tuple(str(p) for p in profiles or (IOT,)), say_warning=said.append, **options
    )


def test_one_job_is_planned_and_written_as_its_own_plan_directory(tmp_path):
    outcome = plan(request(IOT))
    assert not outcome.several and outcome.names == ("iot-sensors",)
    assert outcome.result.status == "optimal" and outcome.parts == {"iot-sensors": outcome.result}
    written = write_outcome(outcome, tmp_path / "out")
    assert (tmp_path / "out" / "plan.json") in written.paths
    doc = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert doc["job"] == "iot-sensors"
    assert summary_json(outcome, written.paths)["out"] == [str(p) for p in written.paths]


def test_two_jobs_are_one_joint_plan_written_as_a_fleet_directory(tmp_path):
    outcome = plan(request(IOT, NEXMARK))
    assert outcome.several and outcome.names == ("iot-sensors", "nexmark-q5")
    assert outcome.result.status == "optimal" and set(outcome.parts) == set(outcome.names)
    write_outcome(outcome, tmp_path / "out")
    assert (tmp_path / "out" / "fleet.json").is_file()
    assert all((tmp_path / "out" / outcome.dirs[n] / "plan.json").is_file() for n in outcome.names)


def test_the_input_warnings_go_to_the_sink_the_request_names(tmp_path):
    # an inventory that does not know the job: neither its job block nor a jobs: entry names nexmark-q5
    doc = yaml.safe_load(EDGE_LAB.read_text())
    doc["jobs"] = [j for j in doc.get("jobs", []) if j["name"] != "nexmark-q5"]
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump(doc))
    said: list[str] = []
    outcome = plan(PlanRequest(inventory=str(inv), profiles=(str(NEXMARK),), say_warning=said.append))
    assert said == outcome.warnings and any("job.name" in w for w in said)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"max_rate": True, "rate_scale": 2.0}, "--max-rate"),
        ({"max_rate": True, "rescale": True}, "--max-rate"),
        ({"target_rate": "a=1"}, "--target-rate"),
        ({"rescale": True, "method": "decompose"}, "--method"),
        ({"job_rate_scales": {"iot-sensors": 2.0}}, "--rate-scale"),
    ],
)
def test_a_bad_combination_of_options_is_refused_before_any_file_is_read(options, field):
    bad = PlanRequest(inventory="no-such-inventory.yaml", profiles=(str(IOT),), **options)
    with pytest.raises(BadInput) as refused:
        plan(bad)
    assert refused.value.field == field


def test_several_jobs_refuse_rescale_and_a_scale_naming_no_job():
    with pytest.raises(BadInput) as rescale:
        plan(request(IOT, NEXMARK, rescale=True))
    assert rescale.value.field == "--rescale"
    with pytest.raises(BadInput) as unknown:
        plan(request(IOT, NEXMARK, job_rate_scales={"nope": 2.0}))
    assert unknown.value.field == "--rate-scale" and "no job 'nope'" in unknown.value.message


def test_the_summary_has_the_same_result_keys_for_one_job_and_several():
    one = summary_json(plan(request(IOT)))["results"][0]
    several = summary_json(plan(request(IOT, NEXMARK)))["results"][0]
    assert {"worst_path", "worst_path_ms", "worst_path_expected_ms", "paths", "paths_expected"} <= set(one)
    assert set(one) | {"jobs"} == set(several)


def test_the_running_jobs_come_from_the_reader_the_request_is_given():
    reader = FakeClusterReader(
        uses={"rpi1": [RunningUse(job="other", cores=1.0, mbit=2.0)]}, jobs=[("other", "a fake cluster")]
    )
    outcome = plan(request(IOT, cluster=reader))
    assert reader.asked == [("iot-sensors",)]
    assert summary_json(outcome)["running"] == [
        {
            "job": "other",
            "plan": "a fake cluster",
            "uses": {"rpi1": {"cores": 1.0, "memory_mib": 0.0, "slots": 0, "mbit": 2.0}},
        }
    ]
    assert outcome.result.cost is not None and outcome.result.status == "optimal"


def test_rescale_around_a_cluster_reader_is_refused_with_its_field():
    with pytest.raises(BadInput) as refused:
        plan(request(IOT, rescale=True, cluster=FakeClusterReader()))
    assert refused.value.field == "--running-cluster"


@pytest.mark.parametrize(
    "profiles",
    [(IOT,), (IOT, NEXMARK)],
    ids=["one job", "two jobs"],
)
def test_the_summary_names_its_format_and_places_every_subtask_as_plan_json_does(tmp_path, profiles):
    outcome = plan(request(*profiles))
    written = write_outcome(outcome, tmp_path / "out")
    summary = summary_json(outcome, written.paths)
    assert next(iter(summary)) == "format" and summary["format"] == "placement.plan-summary/v2"
    dirs = (
        {n: tmp_path / "out" / outcome.dirs[n] for n in outcome.names}
        if outcome.several
        else {outcome.names[0]: tmp_path / "out"}
    )
    placed = summary["assignment"] if outcome.several else {outcome.names[0]: summary["assignment"]}
    for name, folder in dirs.items():
        doc = json.loads((folder / "plan.json").read_text())
        assert placed[name] == {a["label"]: a["host"] for a in doc["assignment"]}


def test_a_rescaled_summary_places_the_subtasks_at_the_parallelism_it_chose(tmp_path):
    outcome = plan(request(NEXMARK, rescale=True, rate_scale=1.2))
    summary = summary_json(outcome)
    counts: dict[str, int] = {}
    for label in summary["assignment"]:
        vertex = label.rsplit(" (", 1)[0]
        counts[vertex] = counts.get(vertex, 0) + 1
    assert counts == summary["parallelism"]["joint"]  # the chosen parallelism, not the profiled one
    assert counts != {v.name: v.parallelism for v in outcome.profiles[0].vertices}
