"""Tiny inventories and profiles built in code, plus a brute-force optimum to hold the ILP to."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from placement.costmodel import PlacementProblem, build_problem, evaluate
from placement.inventory import Inventory
from placement.profile.format import JobProfile


def inventory(
    edges: Sequence[dict] = ({"name": "rpi1"},),
    server: dict | None = None,
    policy: dict | None = None,
    pins: dict | None = None,
    slot_sharing: bool = True,
) -> Inventory:
    """One server and the given edge hosts (each a dict of Host fields; ``bandwidth``/``delay``/``burst``/``loss`` go to
    its uplink). Their Netty server costs nothing per buffer unless a test says so (``netty_cores_per_delivery``): the
    figures these tiny problems are checked against by hand are the other families'; tests/planning/test_netty_cpu.py
    holds every planner to the Netty term."""
    hosts = [
        {"name": "server", "address": "10.0.0.1", "role": "server", "cores": 8, "memory": "16GiB", **(server or {})}
    ]
    links = []
    for n, e in enumerate(edges):
        e = dict(e)
        bw, delay, burst = e.pop("bandwidth", "50mbit"), e.pop("delay", "50ms"), e.pop("burst", None)
        loss = e.pop("loss", None)
        hosts.append(
            {"address": f"10.0.1.{n + 1}", "role": "edge", "model": "rpi4b", "netty_cores_per_delivery": 0.0, **e}
        )
        links.append(
            {"from": e["name"], "to": "server", "bandwidth": bw, "delay": delay}
            | ({"burst": burst} if burst is not None else {})
            | ({"loss": loss} if loss is not None else {})
        )
    return Inventory.model_validate(
        {
            "hosts": hosts,
            "links": links,
            "pins": pins or {},
            "policy": policy or {},
            "flink": {"rest_url": "http://10.0.0.1:8081", "slot_sharing": slot_sharing},
        }
    )


def vertex(
    name: str,
    parallelism: int = 1,
    *,
    rin: float = 1000,
    rout: float = 1000,
    busy: float = 100,
    bpr: float = 100,
    stateful: bool = False,
    state: float = 0.0,
) -> dict:
    """A vertex dict whose subtasks all have the same figures (rates per subtask)."""
    return {
        "id": name.lower().replace(" ", "-").replace(":", ""),
        "name": name,
        "parallelism": parallelism,
        "stateful": stateful,
        "state_bytes": state,
        "bytes_per_record_out": bpr,
        "subtasks": [
            {"index": i, "records_in_per_s": rin, "records_out_per_s": rout, "busy_ms_per_s": busy}
            for i in range(parallelism)
        ],
    }


def profile(vertices: Sequence[dict], edges: Sequence[tuple[str, str, str]]) -> JobProfile:
    """edges: (source name, target name, ship strategy)."""
    ids = {v["name"]: v["id"] for v in vertices}
    return JobProfile.model_validate(
        {
            "job": {"name": "tiny", "origin": "synthetic"},
            "vertices": list(vertices),
            "edges": [{"source": ids[a], "target": ids[b], "ship_strategy": s} for a, b, s in edges],
        }
    )


def problem(inv: Inventory, prof: JobProfile) -> PlacementProblem:
    return build_problem(inv, prof)


def lexicographic_key(cost) -> tuple[float, float, float]:
    return (round(cost.wan_mbit, 6), round(cost.server_cores, 6), round(cost.latency_ms, 6))


def brute_force(pr: PlacementProblem):
    """(best cost, number of feasible assignments) over every assignment of every subtask to every host."""
    keys = [s.key for s in pr.subtasks]
    hosts = [h.name for h in pr.hosts]
    assert len(hosts) ** len(keys) <= 300_000, "instance too big to enumerate"
    best, feasible = None, 0
    for combo in itertools.product(hosts, repeat=len(keys)):
        cost = evaluate(pr, dict(zip(keys, combo)))
        if not cost.feasible:
            continue
        feasible += 1
        if best is None or lexicographic_key(cost) < lexicographic_key(best):
            best = cost
    return best, feasible


def close(a: float, b: float, rel: float = 1e-5) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


def cli_run(argv: list, capsys) -> tuple[int, str, str]:
    """``placement`` with ``argv`` in-process: (exit code, stdout, stderr)."""
    import pytest

    from placement.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err
