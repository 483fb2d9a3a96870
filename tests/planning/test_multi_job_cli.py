"""``placement plan`` with several ``--profile`` and with ``--running`` (issue 24): what is written and said.

Each job's directory holds what the single-job writer makes of that job's part of the joint plan — so ``apply`` of one
job reads it as today — and ``fleet.json`` the shared links' and hosts' use per job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from planning_factories import cli_run
from test_multi_job_plan import contested

from placement.costmodel import build_problem, evaluate
from placement.solver.result import PlanResult
from placement.writers.planjson import SourceRef, build_plan_document, load_plan
from placement.writers.schedulercfg import render_schedulercfg

EXAMPLES = [
    "--inventory",
    "inventory/edge-lab.yaml",
    "--profile",
    "examples/profiles/iot-sensors.json",
    "--profile",
    "examples/profiles/branching-join.json",
]


def files(tmp_path: Path, inv, profiles) -> tuple[str, list[str]]:
    inv_path = tmp_path / "inv.yaml"
    inv_path.write_text(yaml.safe_dump(inv.model_dump(mode="json", by_alias=True)))
    paths = []
    for p in profiles:
        path = tmp_path / f"{p.job.name}.json"
        path.write_text(json.dumps(p.model_dump(mode="json")))
        paths.append(str(path))
    return str(inv_path), paths


def plan_args(inv_path: str, profile_paths: list[str], *extra) -> list[str]:
    return ["plan", "--inventory", inv_path, *[a for p in profile_paths for a in ("--profile", p)], *extra]


def test_each_job_gets_the_plan_directory_the_single_job_writer_makes_of_its_part(tmp_path, capsys):
    out = tmp_path / "fleet"
    code, stdout, err = cli_run(["plan", *EXAMPLES, "--out", out, "--json"], capsys)
    assert code == 0, err
    summary = json.loads(stdout)
    assert [j["dir"] for j in summary["jobs"]] == ["iot-sensors", "camera-meter-join"]
    joint = summary["results"][0]
    assert joint["status"] == "optimal" and joint["wan_mbit"] == pytest.approx(10.368 + 46.464)
    fleet = json.loads((out / "fleet.json").read_text())
    assert {"fleet.json", "fleet.dot", "iot-sensors", "camera-meter-join"} <= {p.name for p in out.iterdir()}
    from placement.inventory import load_inventory
    from placement.profile.format import load_profile

    inv = load_inventory("inventory/edge-lab.yaml")
    for entry, profile_path in zip(
        fleet["jobs"], ["examples/profiles/iot-sensors.json", "examples/profiles/branching-join.json"]
    ):
        doc = load_plan(out / entry["dir"])  # the loader apply uses
        profile = load_profile(profile_path)
        assert doc.job == profile.job.name == entry["job"]
        problem = build_problem(inv, profile)
        assignment = {(a.vertex_id, a.subtask): a.host for a in doc.assignment}
        cost = evaluate(problem, assignment)
        assert cost.feasible
        # what the single-job writer makes of this assignment, the timestamp and solver record aside
        alone = build_plan_document(
            problem,
            PlanResult("ilp", "optimal", assignment, cost),
            job=profile.job.name,
            placement_mode="custom",
            inventory=SourceRef(path="inventory/edge-lab.yaml", digest=inv.digest(), name=inv.name),
            profile=SourceRef(path=profile_path, digest=profile.digest(), name=profile.job.name),
        )
        mine, theirs = doc.model_dump(), alone.model_dump()
        for key in ("created_at", "solver", "warnings", "paths", "contingencies"):
            mine.pop(key), theirs.pop(key)
        assert mine == theirs
        # the fleet's contingency for each Pi, this job's part of it: whatever of it ran on the lost Pi moves off it
        assert [c.lost for c in doc.contingencies] == ["rpi1", "rpi2", "rpi3"]
        for c in doc.contingencies:
            on_lost = {a.label for a in doc.assignment if a.host == c.lost}
            assert on_lost <= {m.label for m in c.moves} and all(m.to != c.lost for m in c.moves), c.lost
            assert c.objective.wan_mbit == pytest.approx(sum(link.mbit for link in c.links))
        # its paths queue behind every job's traffic on a shared uplink (issue 25), not its own alone
        joint_use = {link["link"]: link["utilisation"] for link in fleet["links"]}
        for path, single in zip(doc.paths, alone.paths):
            assert (path.path, path.flush_ms) == (single.path, single.flush_ms)
            if path.link:  # its slowest crossing may be another uplink than alone: the busiest together
                assert path.utilisation == pytest.approx(joint_use[path.link])
                assert path.latency_ms > single.latency_ms
        assert doc.solver.status == "optimal" and doc.solver.stages[0].name == "wan"  # the joint solve's record
        assert any(w.startswith("planned together with ") and "fleet.json" in w for w in doc.warnings)
        assert (out / entry["dir"] / "schedulercfg").read_text() == render_schedulercfg(
            doc.assignment, problem.vertex_order, doc.contingencies
        )
        assert entry["objective"]["wan_mbit"] == pytest.approx(cost.wan_mbit)
    # fleet.json: every link's use per job adds up to its total, and matches each job's own plan.json
    plans = {j["job"]: load_plan(out / j["dir"]) for j in fleet["jobs"]}
    for link in fleet["links"]:
        assert link["mbit"] == pytest.approx(sum(link["jobs"].values()))
        for job, mbit in link["jobs"].items():
            assert mbit == pytest.approx(next(x.mbit for x in plans[job].links if x.link == link["link"]))
    rpi1 = next(h for h in fleet["hosts"] if h["host"] == "rpi1")
    assert rpi1["cores_used"] == pytest.approx(sum(j["cores"] for j in rpi1["jobs"].values()))
    assert rpi1["slots_used"] == sum(j["slots"] for j in rpi1["jobs"].values())
    # and its memory, with the limit apply's order checks each mixed state against (the planner's memory row's)
    assert rpi1["memory_mib_used"] == pytest.approx(sum(j["memory_mib"] for j in rpi1["jobs"].values()))
    assert rpi1["memory_mib_usable"] == pytest.approx(problem.usable_memory(problem.host_by_name["rpi1"]))
    assert fleet["objective"]["wan_mbit"] == pytest.approx(joint["wan_mbit"])
    assert fleet["solver"]["status"] == "optimal" and fleet["running"] == []


def test_the_terminal_shows_jobs_links_per_job_and_the_comparison(tmp_path, capsys):
    inv_path, paths = files(tmp_path, *contested())
    code, out, err = cli_run(plan_args(inv_path, paths, "--out", tmp_path / "o", "--compare"), capsys)
    assert code == 0, err
    assert "2 jobs (job-A, job-B)" in out and "WAN 11.00 Mbit/s" in out
    assert "WAN links, per job" in out and "Joint vs one by one" in out
    row = next(line for line in out.splitlines() if line.startswith("│ rpi1→server"))
    assert [c.strip() for c in row.split("│")[2:5]] == ["10.00", "1.00", "11.00"]  # A raw, B reduced, total
    assert (
        "one by one: job-B does not fit: link rpi1→server needs 30.0 Mbit/s, has 14 (11.6 usable after running "
        "job job-A's 1 Mbit/s)" in out
    )
    assert "each alone: the plans together oversubscribe: host rpi1 needs 1.27 cores" in out
    code, out, err = cli_run(plan_args(inv_path, paths, "--out", tmp_path / "j", "--compare", "--json"), capsys)
    compare = {c["strategy"]: c for c in json.loads(out)["compare"]}
    assert compare["one by one"]["failed"] == "job-B" and not compare["one by one"]["feasible"]
    assert compare["each alone"]["violations"] and not compare["each alone"]["feasible"]
    assert (
        compare["all on server"]["wan_mbit"] == pytest.approx(10 + 30) and compare["all on server"]["feasible"] is False
    )
    assert json.loads((tmp_path / "j" / "fleet.json").read_text())["compare"][0]["strategy"] == "one by one"


def test_decompose_finds_the_same_joint_plan(tmp_path, capsys):
    results = {}
    for method in ("exact", "decompose"):
        code, out, err = cli_run(["plan", *EXAMPLES, "--out", tmp_path / method, "--json", "--method", method], capsys)
        assert code == 0, err
        results[method] = json.loads(out)["results"][0]
    assert results["exact"]["wan_mbit"] == pytest.approx(results["decompose"]["wan_mbit"])
    assert results["exact"]["server_cores"] == pytest.approx(results["decompose"]["server_cores"], abs=1e-6)


def test_a_job_planned_around_a_running_one(tmp_path, capsys):
    inv, (a, b) = contested()
    inv_path, (pa, pb) = files(tmp_path, inv, [a, b])
    code, out, err = cli_run(plan_args(inv_path, [pa], "--out", tmp_path / "a"), capsys)
    assert code == 0, err
    # B around A as planned alone: A's reducer holds the Pi, B's raw stream does not fit what A leaves of the link
    code, out, err = cli_run(plan_args(inv_path, [pb], "--out", tmp_path / "b", "--running", tmp_path / "a"), capsys)
    assert code == 3
    assert "running: job-A" in out
    assert "warning" not in err  # A's pins name the running job's vertices: no typo of B's
    assert err.startswith(
        "error: no placement fits: link rpi1→server needs 30.0 Mbit/s, has 14 (11.6 usable after "
        "running job job-A's 1 Mbit/s)"
    )
    assert not (tmp_path / "b").exists()
    # what is left for B around A: its max rate
    code, out, err = cli_run(
        plan_args(inv_path, [pb], "--out", tmp_path / "b", "--running", tmp_path / "a", "--max-rate", "--json"), capsys
    )
    assert code == 0, err
    assert json.loads(out)["max_rate"]["scale"] == pytest.approx(11.6 / 30, rel=1e-3)
    assert load_plan(tmp_path / "b").job == "job-B"


def test_max_rate_of_several_jobs_scales_them_together(tmp_path, capsys):
    inv_path, paths = files(tmp_path, *contested())
    code, out, err = cli_run(plan_args(inv_path, paths, "--out", tmp_path / "o", "--max-rate", "--json"), capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["max_rate"]["scale"] == pytest.approx(12.6 / 11, rel=1e-3)
    assert summary["max_rate"]["binding"][0]["kind"] == "link"
    assert load_plan(tmp_path / "o" / "job-A").rate_scale == pytest.approx(summary["max_rate"]["scale"])


def test_bad_running_plans_are_one_line_errors(tmp_path, capsys):
    inv, (a, b) = contested()
    inv_path, (pa, pb) = files(tmp_path, inv, [a, b])
    code, _, err = cli_run(plan_args(inv_path, [pa], "--out", tmp_path / "a"), capsys)
    assert code == 0, err
    doc = json.loads((tmp_path / "a" / "plan.json").read_text())
    doc["hosts"][1]["host"] = "rpi9"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    code, out, err = cli_run(plan_args(inv_path, [pb], "--out", tmp_path / "b", "--running", bad), capsys)
    assert code == 2 and err.strip().splitlines() == [
        f"error: {bad}: hosts[1].host: host 'rpi9' is not in the inventory"
    ]
    code, out, err = cli_run(
        plan_args(inv_path, [pa, pb], "--out", tmp_path / "b", "--running", tmp_path / "a"), capsys
    )
    assert code == 2 and "job: is job 'job-A', which this plan places" in err and "Traceback" not in err
    code, out, err = cli_run(plan_args(inv_path, [pa, pb], "--out", tmp_path / "b", "--rescale"), capsys)
    assert code == 2 and "--rescale" in err


def test_re_planning_a_fleet_keeps_a_jobs_audit_log(tmp_path, capsys):
    out = tmp_path / "fleet"
    assert cli_run(["plan", *EXAMPLES, "--out", out], capsys)[0] == 0
    (out / "iot-sensors" / "apply-audit.jsonl").write_text("{}\n")
    (out / "iot-sensors" / "vanilla" / "stale.yaml").write_text("x")
    assert cli_run(["plan", *EXAMPLES, "--out", out], capsys)[0] == 0
    assert (out / "iot-sensors" / "apply-audit.jsonl").read_text() == "{}\n"
    assert not (out / "iot-sensors" / "vanilla" / "stale.yaml").exists()  # plan artifacts are replaced whole
    assert not list(tmp_path.glob(".fleet.*"))


def test_one_profile_twice_is_two_jobs(tmp_path, capsys):
    code, out, err = cli_run(
        [
            "plan",
            "--inventory",
            "inventory/edge-lab.yaml",
            "--profile",
            "examples/profiles/branching-join.json",
            "--profile",
            "examples/profiles/branching-join.json",
            "--out",
            tmp_path / "o",
            "--json",
            "--rate-scale",
            "0.5",
        ],
        capsys,
    )
    assert code == 0, err  # two copies of one job: same sources, twice the load
    assert [j["dir"] for j in json.loads(out)["jobs"]] == ["camera-meter-join", "camera-meter-join-2"]
    assert "job 'camera-meter-join' is planned more than once (this copy as 'camera-meter-join-2')" in err
    assert load_plan(tmp_path / "o" / "camera-meter-join-2").job == "camera-meter-join"


def test_jobs_that_do_not_fit_together_write_nothing(tmp_path, capsys):
    """The three shipped jobs together need more of rpi2's CPU than it has: exit 3, the shortfall on one line, no
    plan directory (each of them alone fits)."""
    code, out, err = cli_run(
        ["plan", *EXAMPLES, "--profile", "examples/profiles/nexmark-hot-items.json", "--out", tmp_path / "o"], capsys
    )
    assert code == 3
    lines = [line for line in err.strip().splitlines() if not line.startswith("warning: ")]  # job.name: one job's
    # 3.16 usable: 4 × 0.8 less each job's Netty work for the stream leaving rpi2 (3 × 0.0012 × 10 a second)
    assert lines == ["error: no placement fits: host rpi2 needs 3.52 cores, has 4 (3.16 usable)"]
    assert "3 jobs (iot-sensors, camera-meter-join, nexmark-q5)" in out and not (tmp_path / "o").exists()
    code, out, err = cli_run(
        ["plan", *EXAMPLES, "--profile", "examples/profiles/nexmark-hot-items.json", "--out", tmp_path / "o", "--json"],
        capsys,
    )
    assert code == 3 and json.loads(out)["results"][0]["shortages"][0]["resource"] == "rpi2"


def test_a_fleet_directory_as_running_stands_for_all_its_jobs(tmp_path, capsys):
    out = tmp_path / "fleet"
    assert cli_run(["plan", *EXAMPLES, "--out", out], capsys)[0] == 0
    code, stdout, err = cli_run(
        [
            "plan",
            "--inventory",
            "inventory/edge-lab.yaml",
            "--profile",
            "examples/profiles/nexmark-hot-items.json",
            "--running",
            out,
            "--out",
            tmp_path / "q5",
            "--json",
        ],
        capsys,
    )
    assert code == 3  # what the two jobs leave of rpi2's uplink and CPU is too little for nexmark-q5
    summary = json.loads(stdout)
    assert [r["job"] for r in summary["running"]] == ["iot-sensors", "camera-meter-join"]
    link = next(s for s in summary["results"][0]["shortages"] if s["kind"] == "link")
    assert link["message"] == (
        "link rpi2→server needs 36.0 Mbit/s, has 50 (20.2 usable after running jobs "
        "camera-meter-join's 21.5 Mbit/s, iot-sensors's 3.28 Mbit/s)"
    )


def scaled_by_hand(profile, x: float):
    """``profile`` as if its sources sent ``x`` times as much: every subtask's records in and out and busy time."""
    doc = profile.model_dump(mode="json")
    for v in doc["vertices"]:
        for s in v["subtasks"]:
            for key in ("records_in_per_s", "records_out_per_s", "busy_ms_per_s"):
                s[key] *= x
    return type(profile).model_validate(doc)


def test_each_jobs_own_rate_scale_plans_as_its_profile_scaled_by_hand(tmp_path, capsys):
    """--rate-scale job-A=0.5 --rate-scale job-B=1.2 is the joint plan of A's profile at half its rates and B's at
    1.2×, planned at 1: the same placement, links and objective; each plan.json records its own scale."""
    inv, (a, b) = contested()
    inv_path, paths = files(tmp_path, inv, [a, b])
    code, out, err = cli_run(
        plan_args(
            inv_path,
            paths,
            "--out",
            tmp_path / "own",
            "--json",
            "--rate-scale",
            "job-A=0.5",
            "--rate-scale",
            "job-B=1.2",
        ),
        capsys,
    )
    assert code == 0, err
    own = json.loads(out)["results"][0]
    (tmp_path / "hand").mkdir()
    _, by_hand_paths = files(tmp_path / "hand", inv, [scaled_by_hand(a, 0.5), scaled_by_hand(b, 1.2)])
    code, out, err = cli_run(plan_args(inv_path, by_hand_paths, "--out", tmp_path / "hand" / "out", "--json"), capsys)
    assert code == 0, err
    by_hand = json.loads(out)["results"][0]
    assert own["status"] == by_hand["status"] == "optimal"
    for key in ("wan_mbit", "server_cores", "edge_cores", "latency_term_ms"):
        assert own[key] == pytest.approx(by_hand[key]), key
    assert own["links"] == pytest.approx(by_hand["links"])
    # B reduces on the Pi (1.2 Mbit/s), A's half-rate raw stream goes up (5): neither scale alone would plan this
    assert own["jobs"]["job-B"]["wan_mbit"] == pytest.approx(1.2) and own["jobs"]["job-A"]["wan_mbit"] == pytest.approx(
        5.0
    )
    for job, scale in (("job-A", 0.5), ("job-B", 1.2)):
        mine, theirs = load_plan(tmp_path / "own" / job), load_plan(tmp_path / "hand" / "out" / job)
        assert mine.assignment == theirs.assignment
        assert (mine.rate_scale, theirs.rate_scale) == (scale, 1.0)
    # a global scale for the rest: B at its own 1.2, A at the fleet's 0.5 — the same plan again
    code, out, err = cli_run(
        plan_args(
            inv_path, paths, "--out", tmp_path / "mixed", "--json", "--rate-scale", "0.5", "--rate-scale", "job-B=1.2"
        ),
        capsys,
    )
    assert code == 0, err
    assert json.loads(out)["results"][0]["wan_mbit"] == pytest.approx(own["wan_mbit"])


@pytest.mark.parametrize(
    ("scales", "message"),
    [
        (["job-C=2"], "--rate-scale: job-C=2: no job 'job-C' is planned here (the jobs: job-A, job-B)"),
        (["job-A=fast"], "Invalid value for '--rate-scale': 'job-A=fast': the scale must be a number above 0"),
        (["job-A=0"], "Invalid value for '--rate-scale': 'job-A=0': the scale must be a number above 0"),
        (["=2"], "Invalid value for '--rate-scale': '=2': no job name before '='"),
        (["1.5", "2"], "--rate-scale: the fleet's scale is given twice (1.5 and 2)"),
        (["job-A=1", "job-A=2"], "--rate-scale: job 'job-A' is given twice (1 and 2)"),
        (["job-A=2", "--max-rate"], "--max-rate: finds the scale of the rates itself: drop --rate-scale"),
    ],
)
def test_a_bad_per_job_rate_scale_is_one_line_exit_2(scales, message, tmp_path, capsys):
    inv_path, paths = files(tmp_path, *contested())
    extra = [a for s in scales for a in ((s,) if s.startswith("--") else ("--rate-scale", s))]
    code, out, err = cli_run(plan_args(inv_path, paths, "--out", tmp_path / "o", *extra), capsys)
    assert code == 2 and message in err and err.strip().count("\n") == 0, err
    code, out, err = cli_run(
        ["plan", "--inventory", inv_path, "--profile", paths[0], "--out", tmp_path / "one", "--rate-scale", "job-A=2"],
        capsys,
    )
    assert code == 2 and "with one --profile give --rate-scale X" in err and err.strip().count("\n") == 0, err


def test_a_job_with_its_jobs_entry_is_resubmitted_as_that_entry_says(tmp_path, capsys):
    """``job:`` describes one job's submission; another job of the fleet with a ``jobs:`` entry gets that entry in its
    redeploy.sh (as apply resubmits it) and no warning that it would be resubmitted as ``job:``'s; one without an
    entry keeps the warning."""
    doc = yaml.safe_load(Path("inventory/edge-lab.yaml").read_text())
    doc.pop("jobs", None)  # the shipped inventory has entries for its example jobs: this one starts without
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(doc, sort_keys=False))
    doc["jobs"] = [
        {
            "name": "camera-meter-join",
            "entry_class": "placement.lab.BranchingJob",
            "program_args": ["--job-name", "camera-meter-join", "--camera-rate", "350"],
        }
    ]
    entry = tmp_path / "entry.yaml"
    entry.write_text(yaml.safe_dump(doc, sort_keys=False))
    profiles = EXAMPLES[2:]
    code, _, err = cli_run(["plan", "--inventory", str(plain), *profiles, "--out", tmp_path / "a"], capsys)
    assert code == 0, err
    assert "job.name: is 'iot-sensors' but the profile is of job 'camera-meter-join'" in err
    code, _, err = cli_run(["plan", "--inventory", str(entry), *profiles, "--out", tmp_path / "b"], capsys)
    assert code == 0, err
    assert "would resubmit" not in err
    script = (tmp_path / "b" / "camera-meter-join" / "redeploy.sh").read_text()
    assert "placement.lab.BranchingJob" in script and "--camera-rate" in script and "IotSensorJob" not in script
    assert "placement.lab.IotSensorJob" in (tmp_path / "b" / "iot-sensors" / "redeploy.sh").read_text()
