"""Random layered jobs and edge clusters with realistic figures, for benchmarks.

A cluster has ``hosts`` hosts, about 5 % of them servers (at least one), the rest Raspberry Pi 4B edge hosts behind
20–100 Mbit/s links; sources emit 500–4000 records/s of 100–400 bytes per subtask. A job is layered: source vertices
born on distinct Pis (one subtask per Pi), then layers of operators joined by FORWARD (same parallelism) or
HASH/REBALANCE edges; per-record CPU costs of 2–40 µs on a server core, selectivities 0.05–1.2, 40–600 bytes per record,
20 % of operators stateful.
"""

from __future__ import annotations

import random

from placement.inventory import Inventory
from placement.profile.format import JobProfile


def cluster(hosts: int, seed: int) -> Inventory:
    rng = random.Random(seed)
    n_servers = max(1, round(hosts * 0.05))
    spec = [
        {
            "name": f"server{k}",
            "address": f"10.0.0.{k + 1}",
            "role": "server",
            "cores": 16,
            "memory": "64GiB",
            "task_slots": 64,
        }
        for k in range(n_servers)
    ]
    links = []
    for k in range(hosts - n_servers):
        spec.append({"name": f"pi{k}", "address": f"10.1.{k // 250}.{k % 250 + 1}", "role": "edge", "model": "rpi4b"})
        links.append(
            {
                "from": f"pi{k}",
                "to": f"server{k % n_servers}",
                "bandwidth": f"{rng.choice([20, 50, 100])}mbit",
                "delay": f"{rng.choice([10, 30, 50, 80])}ms",
            }
        )
    return Inventory.model_validate(
        {"name": f"random-{hosts}", "hosts": spec, "links": links, "flink": {"rest_url": "http://10.0.0.1:8081"}}
    )


def job(subtasks: int, inv: Inventory, seed: int) -> tuple[JobProfile, dict[str, list[str]]]:
    """A job of about ``subtasks`` subtasks and the birth pins of its sources."""
    rng = random.Random(seed)
    pis = [h.name for h in inv.edges]
    vertices, edges, births = [], [], {}
    # about one source subtask per Pi, handed out round-robin so no Pi is born more data than its neighbours
    n_sources = max(1, min(len(pis), subtasks // 50))
    source_par = max(1, min(len(pis) // n_sources, subtasks // (4 * n_sources)))
    birth_order = rng.sample(pis, len(pis))
    next_birth = 0
    total, layer, vid = 0, [], 0

    def add_vertex(name, par, rin, rout, stateful, busy_us, bpr):
        nonlocal vid, total
        vid += 1
        subs = []
        for i in range(par):
            skew = rng.uniform(0.8, 1.2)
            busy = min(950.0, (rin or rout) * skew * busy_us / 1000)
            subs.append(
                {
                    "index": i,
                    "records_in_per_s": rin * skew,
                    "records_out_per_s": rout * skew,
                    "busy_ms_per_s": busy,
                    "host_speed": 1.0,
                }
            )
        vertices.append(
            {
                "id": f"v{vid}",
                "name": name,
                "parallelism": par,
                "stateful": stateful,
                "state_bytes": 50e6 if stateful else 0.0,
                "bytes_per_record_out": bpr,
                "subtasks": subs,
            }
        )
        total += par
        return vertices[-1]

    for s in range(n_sources):
        rate = rng.uniform(500, 4000)
        v = add_vertex(f"Source: S{s}", source_par, 0, rate, False, rng.uniform(2, 10), rng.uniform(100, 400))
        births[v["name"]] = [birth_order[(next_birth + i) % len(pis)] for i in range(source_par)]
        next_birth += source_par
        layer.append(v)
    depth = 0
    while total < subtasks:
        depth += 1
        nxt = []
        for up in layer:
            if total >= subtasks:
                break
            out_rate = sum(s["records_out_per_s"] for s in up["subtasks"]) / up["parallelism"]
            # near the sources most edges are FORWARD (parse/filter/project chains), deeper they are all-to-all
            forward = rng.random() < (0.85 if depth <= 2 else 0.4) and not up["stateful"]
            par = up["parallelism"] if forward else max(1, min(up["parallelism"], rng.choice([1, 2, 4, 8, 16, 32])))
            rin = out_rate * up["parallelism"] / par
            sel = rng.uniform(0.05, 1.2) if rng.random() < 0.8 else rng.uniform(1.0, 2.0)  # some operators inflate
            stateful = (not forward) and rng.random() < 0.5
            v = add_vertex(
                f"Op {depth}.{len(nxt)}", par, rin, rin * sel, stateful, rng.uniform(2, 40), rng.uniform(40, 400)
            )
            edges.append(
                {
                    "source": up["id"],
                    "target": v["id"],
                    "ship_strategy": "FORWARD" if forward else rng.choice(["HASH", "REBALANCE"]),
                }
            )
            nxt.append(v)
        layer = nxt or layer
    sink = add_vertex("Sink: Out", 1, 100, 0, False, 1, 0)
    produced = {e["source"] for e in edges}
    for v in vertices[:-1]:
        if v["id"] not in produced:
            edges.append({"source": v["id"], "target": sink["id"], "ship_strategy": "REBALANCE"})
    profile = JobProfile.model_validate(
        {"job": {"name": f"random-{subtasks}", "origin": "synthetic"}, "vertices": vertices, "edges": edges}
    )
    return profile, births


def instance(subtasks: int, hosts: int, seed: int = 1) -> tuple[Inventory, JobProfile]:
    inv = cluster(hosts, seed)
    profile, births = job(subtasks, inv, seed)
    inv = inv.model_copy(update={"pins": inv.pins.model_copy(update={"sources": births})})
    return inv, profile


def edge_rescalable(inv: Inventory, profile: JobProfile) -> tuple[Inventory, JobProfile]:
    """The same job with every source born on one Pi (its first birth host) and the FORWARD edges out of the sources
    turned into REBALANCE: the operators after a source may then run — at a parallelism of their own — on its Pi,
    which is where a rescale has choices to make (``placement plan --rescale`` rows of solver_scaling.py). Plan it
    with each source's target at ``1/parallelism`` of its measured rate to keep what one Pi is born as generated."""
    births = {name: [hosts[0]] * len(hosts) for name, hosts in inv.pins.sources.items()}
    doc = profile.model_dump(mode="json")
    sources = {v["id"] for v in doc["vertices"]} - {e["target"] for e in doc["edges"]}
    for e in doc["edges"]:
        if e["source"] in sources and e["ship_strategy"] == "FORWARD":
            e["ship_strategy"] = "REBALANCE"
    inv = inv.model_copy(update={"pins": inv.pins.model_copy(update={"sources": births})})
    return inv, JobProfile.model_validate(doc)
