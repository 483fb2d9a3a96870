"""Issue 23: a host's TaskManager baseline takes CPU capacity in every CPU row: the ILP's
(tests/profile/test_tm_cpu.py), ``--max-rate``'s and ``--rescale``'s. The figures follow by hand from ρ = 0.8 and the
profiles below."""

from __future__ import annotations

import json

import pytest
from planning_factories import cli_run, inventory, profile, vertex

from placement.costmodel import build_problem
from placement.costmodel.model import PlanOptions
from placement.solver.capacity import max_scale


def cpu_bound(baseline: float | None):
    """A source born on rpi1 (1 core, speed 0.3) charged 60 ms/s of a server core: 0.2 of rpi1's core at scale 1;
    plenty of bandwidth, so rpi1's CPU row is what binds."""
    extra = {} if baseline is None else {"taskmanager_baseline_cores": baseline}
    inv = inventory(
        [{"name": "rpi1", "cores": 1, "bandwidth": "1000mbit", **extra}], pins={"sources": {"Source: S": "rpi1"}}
    )
    prof = profile(
        [vertex("Source: S", rin=0, rout=1000, busy=60, bpr=10), vertex("Sink: T", rout=0, busy=10)],
        [("Source: S", "Sink: T", "FORWARD")],
    )
    return inv, prof


@pytest.mark.parametrize("baseline,scale", [(None, 0.8 / 0.2), (0.3, (0.8 - 0.3) / 0.2)])
def test_max_rate_leaves_the_taskmanagers_baseline_free(baseline, scale):
    inv, prof = cpu_bound(baseline)
    c = max_scale(lambda k: build_problem(inv, prof, PlanOptions(rate_scale=k)))
    assert c.status == "bounded" and c.scale == pytest.approx(scale, rel=1e-3)


def two_pis(baseline: float | None, pis: int = 2):
    extra = {} if baseline is None else {"taskmanager_baseline_cores": baseline}
    names = [f"rpi{i + 1}" for i in range(pis)]
    inv = inventory(
        [{"name": n, "cores": 1, "bandwidth": "1000mbit", **extra} for n in names],
        pins={"sources": {"Source: S": names}},
        server={"cores": 4, "task_slots": 16},
    )
    prof = profile(
        [
            vertex("Source: S", pis, rin=0, rout=300, busy=30, bpr=10),
            vertex("M", pis, rin=300, rout=300, busy=150, bpr=10),
            vertex("Sink: T", rout=0, busy=1),
        ],
        [("Source: S", "M", "FORWARD"), ("M", "Sink: T", "REBALANCE")],
    )
    return build_problem(inv, prof)


@pytest.mark.parametrize("baseline,where", [(None, "edge"), (0.5, "server")])
def test_exact_and_fleet_decomposition_keep_the_baseline_free(baseline, where):
    """Each mapper subtask needs 0.5 of a Pi core beside its source's 0.1: it fits on the Pi (0.8 usable) without a
    baseline, and not beside a baseline of 0.5 (0.3 usable): exact model and fleet decomposition alike."""
    from placement.solver import solve
    from placement.solver.fleet import solve_decomposed

    pr = two_pis(baseline, pis=6)
    decomposed = solve_decomposed(pr)
    assert any("decomposed" in n for n in decomposed.notes)
    for result in (solve(pr), decomposed):
        assert result.status == "optimal" and result.cost.feasible
        roles = {pr.host_by_name[result.assignment[s.key]].role for s in pr.subtasks if s.vertex_name == "M"}
        assert roles == {where}
        for h in result.cost.hosts:
            assert h.cores_used <= pr.usable_cores(pr.host_by_name[h.host]) + 1e-6
            assert h.baseline_cores == (baseline or 0.0 if h.role == "edge" else 0.0)


def test_rescale_plans_within_the_capacity_the_baseline_leaves(tmp_path, capsys):
    """Sources born on two Pis at 300 records/s each (0.1 of a Pi core) feed a mapper that needs 0.5 of a Pi core
    per 300 records/s: without a baseline it fits beside the source on each Pi (0.6 <= 0.8 usable) and runs there (no
    server CPU); with 0.5 of each Pi's core its TaskManager's own, 0.3 are left and the mapper goes to the server."""
    results = {}
    for baseline in (None, 0.5):
        extra = {} if baseline is None else {"taskmanager_baseline_cores": baseline}
        inv = inventory(
            [
                {"name": n, "cores": 1, "bandwidth": "1000mbit", "allow_stateful": True, **extra}
                for n in ("rpi1", "rpi2")
            ],
            pins={"sources": {"Source: S": ["rpi1", "rpi2"]}},
            server={"cores": 4},
        )
        prof = profile(
            [
                vertex("Source: S", 2, rin=0, rout=100, busy=10, bpr=10),
                vertex("M", 2, rin=100, rout=100, busy=50, bpr=10),
                vertex("Sink: T", rout=0, busy=1),
            ],
            [("Source: S", "M", "FORWARD"), ("M", "Sink: T", "REBALANCE")],
        )
        paths = tmp_path / f"b{baseline}"
        paths.mkdir()
        (paths / "inv.json").write_text(json.dumps(inv.model_dump(mode="json", by_alias=True)))
        (paths / "prof.json").write_text(json.dumps(prof.dump()))
        code, _, err = cli_run(
            [
                "plan",
                "--inventory",
                paths / "inv.json",
                "--profile",
                paths / "prof.json",
                "--out",
                paths / "plan",
                "--rescale",
                "--target-rate",
                "Source: S=600",
            ],
            capsys,
        )
        assert code == 0, err
        plan = json.loads((paths / "plan" / "plan.json").read_text())
        hosts = {h["host"]: h for h in plan["hosts"]}
        usable = {h: (4 if h == "server" else 1) * 0.8 - (baseline or 0.0) * (h != "server") for h in hosts}
        for h, p in hosts.items():
            assert p["subtask_cores"] <= usable[h] + 1e-6
            assert p["predicted_cores"] == pytest.approx(p["subtask_cores"] + p["baseline_cores"])
            assert p["baseline_cores"] == pytest.approx((baseline or 0.0) if h != "server" else 0.0)
        results[baseline] = {a["host"] for a in plan["assignment"] if a["vertex"] == "M"}
    assert results[None] == {"rpi1", "rpi2"} and results[0.5] == {"server"}
