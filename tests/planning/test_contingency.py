"""Contingency placements (issue 43): for each edge host, where the subtasks run while it or its uplink is lost.

The degraded state's figures are checked by hand on a small job; the contingencies against a brute force over every
assignment of the degraded problem (:mod:`brute`, which shares nothing with the ILP) on small random instances of one
to three jobs planned together: optimal for each degraded state, and none that the brute force finds nothing for."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml
from brute import brute_force
from multi_job_factories import problems, random_instance
from planning_factories import cli_run, close, inventory, profile, vertex

from placement.costmodel import build_problem, evaluate
from placement.costmodel.degraded import degraded_problem, surviving_shares
from placement.costmodel.jobs import combine
from placement.errors import BadInput
from placement.solver import solve
from placement.solver.contingency import plan_contingencies, plan_contingency


def two_pi_job(**host):
    """Sources born on rpi1 and rpi2 (FORWARD to Parse on each), HASH into a server-side Count, then a Sink."""
    inv = inventory([{"name": "rpi1", **host}, {"name": "rpi2"}], pins={"sources": {"Source: S": ["rpi1", "rpi2"]}})
    prof = profile(
        [
            vertex("Source: S", 2, rin=0, rout=1000, busy=20, bpr=500),
            vertex("Parse", 2, rin=1000, rout=500, busy=200, bpr=100),
            vertex("Count", 2, rin=500, rout=10, busy=100, bpr=50, stateful=True),
            vertex("Sink: T", 1, rin=20, rout=0, busy=10),
        ],
        [("Source: S", "Parse", "FORWARD"), ("Parse", "Count", "HASH"), ("Count", "Sink: T", "REBALANCE")],
    )
    return build_problem(inv, prof)


def test_the_lost_hosts_data_stops_and_what_it_fed_shrinks_by_its_share():
    pr = two_pi_job()
    alive = surviving_shares(pr, "rpi1")
    assert alive[("source-s", 0)] == 0.0 and alive[("source-s", 1)] == 1.0
    assert alive[("parse", 0)] == 0.0 and alive[("parse", 1)] == 1.0
    assert close(alive[("count", 0)], 0.5) and close(alive[("count", 1)], 0.5)  # HASH: half of each from each Pi
    assert close(alive[("sink-t", 0)], 0.5)
    degraded = degraded_problem(pr, "rpi1")
    assert [h.name for h in degraded.hosts] == ["server", "rpi2"]
    source0 = degraded.subtask_by_key[("source-s", 0)]
    assert source0.birth is None and degraded.allowed_hosts(source0) == {"server"}
    count0 = degraded.subtask_by_key[("count", 0)]
    assert close(count0.server_cores, pr.subtask_by_key[("count", 0)].server_cores / 2)
    assert close(count0.records_in_per_s, 250)  # 500 records/s into each Count before, half of them from rpi1


def test_the_contingency_keeps_the_surviving_pi_as_planned_and_its_uplink_figures():
    pr = two_pi_job()
    main = solve(pr)
    assert main.status == "optimal"
    c = plan_contingency(pr, main.assignment, "rpi1")
    assert c.result.status == "optimal" and c.feasible and c.shortfall == ""
    assert {k: v for k, v in c.moves.items()} == {("source-s", 0): ("rpi1", "server"), ("parse", 0): ("rpi1", "server")}
    rpi2 = c.result.cost.link("rpi2").mbit
    assert close(rpi2, main.cost.link("rpi2").mbit)
    assert close(c.result.cost.wan_mbit, rpi2)  # rpi1's uplink carries nothing: the host and its link are gone


def test_data_that_reroutes_to_the_server_is_charged_there():
    dropped = plan_contingency(pr := two_pi_job(), solve(pr).assignment, "rpi1")
    rerouted_pr = two_pi_job(data_reroutes_on_loss=True)
    rerouted = plan_contingency(rerouted_pr, solve(rerouted_pr).assignment, "rpi1")
    parse = rerouted.problem.subtask_by_key[("parse", 0)]
    assert close(parse.server_cores, rerouted_pr.subtask_by_key[("parse", 0)].server_cores)
    assert rerouted.result.cost.server_cores > dropped.result.cost.server_cores + 0.1


def test_a_state_nothing_fits_is_named_with_what_is_short():
    # rpi1's data reroutes to a server of half a core: its Source and Parse there too overload it
    pr = two_pi_job(data_reroutes_on_loss=True)
    pr = replace(pr, hosts=tuple(replace(h, cores=0.5) if not h.is_edge else h for h in pr.hosts))
    main = solve(pr)
    assert main.status == "optimal"
    c = plan_contingency(pr, main.assignment, "rpi1")
    assert not c.feasible and c.result.status == "infeasible"
    assert c.shortfall.startswith("if rpi1 is lost, host server needs "), c.shortfall
    assert "cores, has 0.5" in c.shortfall


def test_only_an_edge_host_is_planned_for():
    pr = two_pi_job()
    with pytest.raises(BadInput, match="'server' is not an edge host"):
        degraded_problem(pr, "server")


def _check(seed: int) -> list[str]:
    inv, profiles = random_instance(seed)
    joint = combine(problems(inv, profiles)).problem
    main = solve(joint)
    if main.assignment is None:
        return []
    outcomes = []
    for c in plan_contingencies(joint, main.assignment):
        best, _feasible, _leaves = brute_force(c.problem)
        if best is None:
            assert not c.feasible and c.shortfall, f"seed {seed}, {c.lost}: the brute force finds no plan"
            outcomes.append("infeasible")
            continue
        assert c.result.status == "optimal", f"seed {seed}, {c.lost}: {c.result.status} {c.result.reason}"
        assert c.lost not in set(c.result.assignment.values())
        cost = evaluate(c.problem, c.result.assignment)  # the degraded state breaks no capacity
        assert cost.feasible, (seed, c.lost, cost.violations)
        key = (cost.wan_mbit, cost.server_cores, cost.latency_ms)
        want = (best.wan_mbit, best.server_cores, best.latency_ms)
        assert all(close(a, b, 1e-4) for a, b in zip(key, want)), f"seed {seed}, {c.lost}: {key} ≠ brute force {want}"
        outcomes.append("optimal")
    return outcomes


@pytest.mark.parametrize("chunk", range(4))
def test_each_contingency_is_the_brute_force_optimum_of_its_degraded_state(chunk):
    outcomes = [o for seed in range(chunk * 15, (chunk + 1) * 15) for o in _check(seed)]
    assert outcomes.count("optimal") >= 10, outcomes


def _short_files(tmp_path):
    """Files of the two-Pi job whose rpi1 data reroutes to a server of half a core: rpi1's loss leaves no fit."""
    inv = inventory(
        [{"name": "rpi1", "data_reroutes_on_loss": True}, {"name": "rpi2"}],
        server={"cores": 0.5, "task_slots": 4},
        pins={"sources": {"Source: S": ["rpi1", "rpi2"]}},
    )
    prof = profile(
        [
            vertex("Source: S", 2, rin=0, rout=1000, busy=20, bpr=500),
            vertex("Parse", 2, rin=1000, rout=500, busy=200, bpr=100),
            vertex("Count", 2, rin=500, rout=10, busy=100, bpr=50, stateful=True),
            vertex("Sink: T", 1, rin=20, rout=0, busy=10),
        ],
        [("Source: S", "Parse", "FORWARD"), ("Parse", "Count", "HASH"), ("Count", "Sink: T", "REBALANCE")],
    )
    inv_path, prof_path = tmp_path / "inv.yaml", tmp_path / "tiny.json"
    inv_path.write_text(yaml.safe_dump(inv.model_dump(mode="json", by_alias=True)))
    prof_path.write_text(json.dumps(prof.model_dump(mode="json")))
    return ["plan", "--inventory", inv_path, "--profile", prof_path]


def test_plan_names_the_state_nothing_fits_and_require_contingency_refuses_it(tmp_path, capsys):
    args = _short_files(tmp_path)
    code, out, err = cli_run([*args, "--out", tmp_path / "plan"], capsys)
    assert code == 0, err
    assert "rpi1 │ infeasible │ host server needs" in out  # the contingency table names what is short
    cfg = (tmp_path / "plan" / "schedulercfg").read_text()
    assert "# no contingency for rpi1 (10.0.1.1): if rpi1 is lost, host server needs" in cfg
    assert "[lost 10.0.1.2]" in cfg and "[lost 10.0.1.1]" not in cfg
    doc = json.loads((tmp_path / "plan" / "plan.json").read_text())
    assert [(c["lost"], c["status"]) for c in doc["contingencies"]] == [("rpi1", "infeasible"), ("rpi2", "optimal")]
    code, out, err = cli_run([*args, "--out", tmp_path / "required", "--require-contingency"], capsys)
    assert code == 3 and not (tmp_path / "required").exists()
    assert err.strip().startswith("error: --require-contingency: if rpi1 is lost, host server needs ")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    code, out, err = cli_run([*args, "--out", tmp_path / "none", "--no-contingency", "--json"], capsys)
    assert code == 0 and "contingencies" not in json.loads(out)
    assert "[lost" not in (tmp_path / "none" / "schedulercfg").read_text()


def test_vanilla_mode_says_what_happens_when_a_pi_is_lost_and_plans_no_contingency(tmp_path, capsys):
    code, out, err = cli_run(
        [
            "plan",
            "--inventory",
            "inventory/edge-lab.yaml",
            "--profile",
            "examples/profiles/iot-sensors.json",
            "--out",
            tmp_path / "p",
            "--mode",
            "vanilla",
        ],
        capsys,
    )
    assert code == 0, err
    assert "vanilla mode has no contingency" in " ".join(out.split())
    assert "contingencies" not in json.loads((tmp_path / "p" / "plan.json").read_text())
