"""Hard placement instances: the shapes that make placement hard, on fleets that are tight but feasible.

Unlike :mod:`random_jobs` (mostly independent source-lane chains on alike Pis), a job here is a mix of motifs, each
repeated over a window of Pis (one subtask per Pi, births rotating so every Pi carries several lanes):

* **lane with fan-out and a broadcast** — ``Source → Parse → Filter → Enrich`` (FORWARD), then Enrich fans out to
  ``Features → Window`` (a stateful pre-aggregate, allowed on the Pis that ``allow_stateful``), ``Alerts`` and
  ``Rules``, which also reads a BROADCAST rule stream born at the server side (so it can only run on a server); HASH
  into a keyed aggregate on the servers. Enrich inflates records: the WAN optimum wants to cut before it, CPU after.
* **local join** — two sources born on the same Pis, decoded on their own and fused by a two-input operator that may
  stay on the Pi; a heavy ``Detect`` pinned (``pins.operators``) to the fast Pis and the servers.
* **cross-Pi union** — two sources whose subtask ``i`` is born on neighbouring Pis: the union reads from two Pis, so
  it runs on a server; the cleaning step before it is forbidden (``pins.forbid``) on the slowest Pis.

The fleet mixes Pis of four speeds (0.15 to 0.5 of a server core, 1 to 8 GiB), servers of different sizes and speeds,
and links from 1 Mbit/s to 300 Mbit/s. Capacities are cut to a *witness plan* (a random prefix of each lane kept on its
Pi where its CPU and memory fit): every link gets just what the witness needs when its drawn bandwidth is less, the
servers just what the witness leaves them (+ a few per cent). So every instance is feasible, and tight: links force
work onto Pis whose CPU cannot take all of it, and the servers cannot take everything either.

    inv, profile = instance(subtasks=2000, hosts=200, seed=1)            # about 5 % servers
    inv, profile = instance(subtasks=100_000, hosts=10_004, servers=4)   # a city fleet
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

from placement.costmodel import build_problem, evaluate
from placement.inventory import Inventory
from placement.profile.format import JobProfile

# (model, cores, memory MiB, speed): a 2 GiB board with a Pi 3-class CPU (generic), Pi 4B 4 GiB and 8 GiB, Pi 5
PI_CLASSES = (
    ("generic", 4, 2048, 0.15),
    ("rpi4b", None, None, None),
    ("rpi4b-8g", None, None, None),
    ("rpi5", None, None, None),
)
PI_WEIGHTS = (0.2, 0.4, 0.15, 0.25)
BANDWIDTHS_MBIT = (1, 2, 5, 10, 20, 50, 100, 300)
DELAYS_MS = (5, 20, 50, 100, 150)
SERVER_SPEEDS = (0.8, 1.0, 1.25)
OPERATOR_CPU = 3.0  # per-record costs below × this: enough that a fair share of Pis cannot keep all their work
CHECKPOINT_INTERVAL_MS = 60_000.0
BUFFER_TIMEOUT_MS = 100.0


POLICY = {"memory_per_subtask": "128MiB"}  # small TaskManager heaps: a 1 GiB board holds the sources born on it


def _inventory(spec: list[dict], links: list[dict], pins: dict, name: str) -> Inventory:
    return Inventory.model_validate(
        {
            "name": name,
            "hosts": spec,
            "links": links,
            "pins": pins,
            "policy": POLICY,
            "flink": {"rest_url": "http://10.0.0.1:8081"},
        }
    )


def cluster(hosts: int, seed: int, servers: int | None = None) -> tuple[list[dict], list[dict]]:
    """Host and link documents: ``servers`` servers (default 5 % of the hosts, at least 2), the rest Pis."""
    rng = random.Random(seed)
    n_servers = servers if servers is not None else max(2, round(hosts * 0.05))
    spec = [
        {
            "name": f"server{k}",
            "address": f"10.0.0.{k + 1}",
            "role": "server",
            "speed": rng.choice(SERVER_SPEEDS),
            "cores": 8,
            "memory": "16GiB",
            "task_slots": 8,
        }
        for k in range(n_servers)
    ]  # sized to the witness later
    links = []
    for k in range(hosts - n_servers):
        model, cores, memory, speed = rng.choices(PI_CLASSES, PI_WEIGHTS)[0]
        host = {
            "name": f"pi{k}",
            "address": f"10.{1 + k // 62500}.{k // 250 % 250}.{k % 250 + 1}",
            "role": "edge",
            "model": model,
        }
        if cores is not None:
            host.update(cores=cores, memory=f"{memory}MiB", speed=speed)
        if rng.random() < 0.3:
            host["allow_stateful"] = True
        spec.append(host)
        links.append(
            {
                "from": host["name"],
                "to": f"server{rng.randrange(n_servers)}",
                "bandwidth": f"{rng.choice(BANDWIDTHS_MBIT)}mbit",
                "delay": f"{rng.choice(DELAYS_MS)}ms",
            }
        )
    return spec, links


class _JobBuilder:
    """Vertices and edges of a profile; per-subtask figures drawn around each motif's means."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.vertices: list[dict] = []
        self.edges: list[dict] = []
        self.total = 0

    def vertex(
        self,
        name: str,
        rin: list[float],
        sel: float,
        busy_us: float,
        bpr: float,
        *,
        stateful=False,
        state_mb: float = 0.0,
    ) -> dict:
        subs = []
        for i, r in enumerate(rin):
            skew = self.rng.uniform(0.85, 1.15)
            rout = r * sel * skew
            busy = min(950.0, max(r, rout) * busy_us * self.rng.uniform(0.8, 1.25) / 1000)
            subs.append(
                {
                    "index": i,
                    "records_in_per_s": 0.0 if not self.vertices_in(name) else r,
                    "records_out_per_s": rout,
                    "busy_ms_per_s": busy,
                    "host_speed": 1.0,
                }
            )
        v = {
            "id": f"v{len(self.vertices)}",
            "name": name,
            "parallelism": len(rin),
            "stateful": stateful,
            "state_bytes": state_mb * 1e6,
            "bytes_per_record_out": bpr,
            "subtasks": subs,
        }
        self.vertices.append(v)
        self.total += len(rin)
        return v

    @staticmethod
    def vertices_in(name: str) -> bool:
        return not name.startswith("Source:")

    def source(self, name: str, p: int, rate: float, bpr: float, busy_us: float) -> dict:
        rates = [rate * self.rng.uniform(0.5, 1.5) for _ in range(p)]
        return self.vertex(name, rates, 1.0, busy_us, bpr)

    def follow(
        self,
        name: str,
        ups: list[tuple[dict, str]],
        sel: float,
        busy_us: float,
        bpr_factor: float,
        *,
        p: int | None = None,
        stateful=False,
        state_mb=0.0,
    ) -> dict:
        """A vertex fed by ``ups`` ((vertex, strategy) pairs); FORWARD inputs keep their parallelism."""
        p = p or ups[0][0]["parallelism"]
        rin = [0.0] * p
        for up, strategy in ups:
            outs = [s["records_out_per_s"] for s in up["subtasks"]]
            if strategy == "FORWARD":
                rin = [a + b for a, b in zip(rin, outs)]
            elif strategy == "BROADCAST":
                rin = [a + sum(outs) for a in rin]
            else:
                rin = [a + sum(outs) / p for a in rin]
        bpr = max(20.0, ups[0][0]["bytes_per_record_out"] * bpr_factor)
        v = self.vertex(name, rin, sel, busy_us * OPERATOR_CPU, bpr, stateful=stateful, state_mb=state_mb)
        for up, strategy in ups:
            self.edges.append({"source": up["id"], "target": v["id"], "ship_strategy": strategy})
        return v


MOTIFS = ("lane", "join", "union")


def job(
    subtasks: int, pis: list[dict], servers: list[str], seed: int, motifs: tuple[str, ...] = MOTIFS
) -> tuple[JobProfile, dict]:
    """A job of about ``subtasks`` subtasks on these Pis, and its pins (births, operator pins, forbids); the motifs
    are used in turn in the order given."""
    rng = random.Random(seed * 7919 + 1)
    b = _JobBuilder(rng)
    names = [p["name"] for p in pis]
    fast = [p["name"] for p in pis if p["model"] == "rpi5"]
    slow = [p["name"] for p in pis if p["model"] == "generic"]
    births: dict[str, list[str]] = {}
    operators: dict[str, list[str]] = {}
    forbid: dict[str, list[str]] = {}
    tails: list[dict] = []
    offset = 0
    per_pi = {"lane": 8, "join": 6, "union": 5}
    motif = 0
    while b.total < subtasks:
        kind = motifs[motif % len(motifs)]
        left = subtasks - b.total
        p = max(1, min(len(names), round(len(names) * rng.uniform(0.4, 1.0)), math.ceil(left / per_pi[kind])))
        window = [names[(offset + i) % len(names)] for i in range(p)]
        offset += p
        q = max(1, min(16, p // 8 or 1))
        k = motif
        if kind == "lane":
            src = b.source(f"Source: Sensors{k}", p, rng.uniform(1000, 8000), rng.uniform(100, 500), rng.uniform(3, 8))
            births[src["name"]] = window
            parse = b.follow(f"Parse{k}", [(src, "FORWARD")], 1.0, rng.uniform(8, 25), rng.uniform(0.5, 1.5))
            filt = b.follow(f"Filter{k}", [(parse, "FORWARD")], rng.uniform(0.2, 0.9), rng.uniform(2, 6), 1.0)
            enrich = b.follow(f"Enrich{k}", [(filt, "FORWARD")], 1.0, rng.uniform(15, 60), rng.uniform(1.3, 3.0))
            feats = b.follow(
                f"Features{k}", [(enrich, "FORWARD")], rng.uniform(0.1, 0.5), rng.uniform(10, 40), rng.uniform(0.2, 0.6)
            )
            window_op = b.follow(
                f"Window{k}",
                [(feats, "FORWARD")],
                rng.uniform(0.01, 0.1),
                rng.uniform(5, 20),
                0.5,
                stateful=True,
                state_mb=rng.uniform(1, 20) * p,
            )
            alerts = b.follow(f"Alerts{k}", [(enrich, "FORWARD")], rng.uniform(0.005, 0.05), rng.uniform(2, 6), 0.5)
            rules_src = b.source(f"Source: Rules{k}", 1, rng.uniform(1, 20), rng.uniform(200, 2000), 5)
            rules = b.follow(
                f"Rules{k}",
                [(enrich, "FORWARD"), (rules_src, "BROADCAST")],
                rng.uniform(0.05, 0.3),
                rng.uniform(10, 30),
                0.8,
            )
            tails.append(
                b.follow(
                    f"Aggregate{k}",
                    [(window_op, "HASH"), (rules, "HASH")],
                    0.2,
                    rng.uniform(5, 15),
                    1.0,
                    p=q,
                    stateful=True,
                    state_mb=rng.uniform(50, 500),
                )
            )
            tails.append(alerts)
        elif kind == "join":
            cam = b.source(f"Source: Camera{k}", p, rng.uniform(50, 400), rng.uniform(2000, 20000), 10)
            env = b.source(f"Source: Env{k}", p, rng.uniform(500, 3000), rng.uniform(50, 200), 3)
            births[cam["name"]] = births[env["name"]] = window
            dec = b.follow(f"Decode{k}", [(cam, "FORWARD")], 1.0, rng.uniform(200, 900), rng.uniform(0.3, 0.8))
            norm = b.follow(f"Normalize{k}", [(env, "FORWARD")], 1.0, rng.uniform(5, 15), 1.0)
            fuse = b.follow(f"Fuse{k}", [(dec, "FORWARD"), (norm, "FORWARD")], 0.5, rng.uniform(10, 30), 0.6)
            detect = b.follow(f"Detect{k}", [(fuse, "FORWARD")], rng.uniform(0.02, 0.2), rng.uniform(300, 1200), 0.3)
            operators[detect["name"]] = fast + servers
            tails.append(
                b.follow(
                    f"Track{k}",
                    [(detect, "HASH")],
                    0.5,
                    rng.uniform(10, 30),
                    1.0,
                    p=q,
                    stateful=True,
                    state_mb=rng.uniform(20, 200),
                )
            )
        else:
            a = b.source(f"Source: Meters{k}", p, rng.uniform(500, 5000), rng.uniform(80, 300), 4)
            c = b.source(f"Source: Grid{k}", p, rng.uniform(500, 5000), rng.uniform(80, 300), 4)
            births[a["name"]] = window
            births[c["name"]] = window[1:] + window[:1]  # subtask i of the second stream lives on the next Pi
            clean_a = b.follow(f"CleanA{k}", [(a, "FORWARD")], rng.uniform(0.3, 0.9), rng.uniform(5, 20), 0.7)
            clean_b = b.follow(f"CleanB{k}", [(c, "FORWARD")], rng.uniform(0.3, 0.9), rng.uniform(5, 20), 0.7)
            forbid[clean_b["name"]] = slow
            union = b.follow(f"Union{k}", [(clean_a, "FORWARD"), (clean_b, "FORWARD")], 1.0, rng.uniform(2, 5), 1.0)
            tails.append(
                b.follow(
                    f"Balance{k}",
                    [(union, "HASH")],
                    0.1,
                    rng.uniform(10, 30),
                    1.0,
                    p=q,
                    stateful=True,
                    state_mb=rng.uniform(20, 200),
                )
            )
        motif += 1
    b.follow("Sink: Out", [(t, "REBALANCE") for t in tails], 0.0, 2, 1.0, p=1)
    profile = JobProfile.model_validate(
        {
            "job": {
                "name": f"hard-{subtasks}",
                "origin": "synthetic",
                "checkpoint_interval_ms": CHECKPOINT_INTERVAL_MS,
                "buffer_timeout_ms": BUFFER_TIMEOUT_MS,
            },
            "vertices": b.vertices,
            "edges": b.edges,
        }
    )
    pins = {
        "sources": births,
        "operators": {k: v for k, v in operators.items() if v},
        "forbid": {k: v for k, v in forbid.items() if v},
    }
    return profile, pins


def _witness(problem, rng: random.Random) -> dict:
    """A plan that keeps a random prefix of each lane on its Pi where the Pi's CPU and memory allow (the rest, and
    whatever the rules keep off the Pi, on the first server)."""
    server = problem.servers[0].name
    assignment = {}
    cpu: dict[str, float] = defaultdict(float)
    memory: dict[str, float] = defaultdict(float)
    depth = {}  # subtask -> how many more FORWARD steps of its lane stay on its Pi (drawn per source subtask)
    for s in problem.subtasks:  # the sources first: they are where their data is born, whatever comes after
        if s.birth is not None:
            assignment[s.key] = s.birth
            h = problem.host_by_name[s.birth]
            cpu[h.name] += s.cores_on(h)
            memory[h.name] += s.memory_mib
            depth[s.key] = rng.randint(0, 4)
    for vid in problem.vertex_order:
        for s in problem.by_vertex[vid]:
            if s.birth is not None:
                continue
            senders = {assignment[(ch.source, i)] for ch in problem.inputs[vid] for i in ch.senders(s.index)}
            budget = [depth.get((ch.source, i), 0) for ch in problem.inputs[vid] for i in ch.senders(s.index)]
            host = senders.pop() if len(senders) == 1 else None
            h = problem.host_by_name.get(host) if host else None
            if (
                h is not None
                and h.is_edge
                and min(budget, default=0) > 0
                and problem.allows(s, host)
                and problem.keeps_up(s, h)  # one thread: at most one core of the Pi
                and cpu[host] + s.cores_on(h) <= problem.usable_cores(h)
                and memory[host] + s.memory_mib <= problem.usable_memory(h)
            ):
                assignment[s.key] = host
                cpu[host] += s.cores_on(h)
                memory[host] += s.memory_mib
                depth[s.key] = min(budget) - 1
            else:
                assignment[s.key] = server
    return assignment


def _fit_births(spec: list[dict], problem) -> None:
    """A Pi whose sources alone overflow its memory or CPU gets just enough more (the job must be placeable)."""
    cores: dict[str, float] = defaultdict(float)
    memory: dict[str, float] = defaultdict(float)
    for s in problem.subtasks:
        if s.birth is not None:
            cores[s.birth] += s.server_cores
            memory[s.birth] += s.memory_mib
    policy = problem.policy
    for host in spec:
        h = problem.host_by_name[host["name"]]
        if memory[h.name] > problem.usable_memory(h):
            host["memory"] = f"{math.ceil(memory[h.name] * 1.1 / policy.memory_utilisation_target)}MiB"
        if cores[h.name] / h.speed > problem.usable_cores(h):
            host["cores"] = math.ceil(cores[h.name] / h.speed * 1.1 / policy.cpu_utilisation_target)
        thread = max((s.server_cores for s in problem.subtasks if s.birth == h.name), default=0.0)
        if thread / h.speed > problem.usable_thread:  # a source's one thread cannot keep up: a faster Pi
            host["speed"] = round(thread * 1.05 / problem.usable_thread, 3)
            host["cores"] = max(
                host.get("cores") or h.cores,
                math.ceil(cores[h.name] / host["speed"] * 1.1 / policy.cpu_utilisation_target),
            )
            host.setdefault("memory", f"{h.memory_mib:.0f}MiB")


def _size_servers(spec: list[dict], problem, assignment: dict, rng: random.Random) -> None:
    """Give the servers what the witness puts on them plus 3–15 %, split in random shares (different sizes), and
    move the witness's server subtasks onto them first-fit decreasing (enlarging until it packs)."""
    servers = [h for h in spec if h["role"] == "server"]
    on_server = [s for s in problem.subtasks if not problem.host_by_name[assignment[s.key]].is_edge]
    demand = sum(s.server_cores for s in on_server)
    memory = sum(s.memory_mib for s in on_server)
    per_vertex = Counter(s.vertex_id for s in on_server)
    shares = [rng.uniform(0.5, 2.0) for _ in servers]
    total = sum(shares)
    slack = rng.uniform(1.03, 1.15)
    policy = problem.policy
    thread = max((s.server_cores for s in on_server), default=0.0) / policy.cpu_utilisation_target
    fastest = max(servers, key=lambda h: h["speed"])
    if thread > fastest["speed"]:  # the heaviest subtask's one thread keeps up on the fastest server
        fastest["speed"] = next((x for x in sorted(SERVER_SPEEDS) if x >= thread), round(thread * 1.05, 3))
    for _attempt in range(50):
        for h, share in zip(servers, shares):
            w = share / total
            h["cores"] = max(1.0, round(demand * w * slack / (policy.cpu_utilisation_target * h["speed"]), 2))
            h["memory"] = f"{max(1024, math.ceil(memory * w * slack / policy.memory_utilisation_target))}MiB"
            h["task_slots"] = max(2, math.ceil(max(per_vertex.values(), default=1) * w * slack))
        if _packs(on_server, servers, problem, assignment):
            return
        slack *= 1.05
    raise RuntimeError("could not size the servers for the witness plan")


def _packs(on_server, servers, problem, assignment) -> bool:
    cores = {h["name"]: h["cores"] * problem.policy.cpu_utilisation_target for h in servers}
    memory = {h["name"]: float(h["memory"][:-3]) * problem.policy.memory_utilisation_target for h in servers}
    slots = {h["name"]: Counter() for h in servers}
    speed = {h["name"]: h["speed"] for h in servers}
    for s in sorted(on_server, key=lambda s: -s.server_cores):
        fits = [
            h
            for h in cores
            if cores[h] >= s.server_cores / speed[h] - 1e-9
            and memory[h] >= s.memory_mib - 1e-9
            and s.server_cores / speed[h] <= problem.usable_thread  # its one thread keeps up there
            and slots[h][s.vertex_id] < next(x["task_slots"] for x in servers if x["name"] == h)
        ]
        if not fits:
            return False
        h = max(fits, key=lambda name: cores[name])
        cores[h] -= s.server_cores / speed[h]
        memory[h] -= s.memory_mib
        slots[h][s.vertex_id] += 1
        assignment[s.key] = h
    return True


def instance(
    subtasks: int, hosts: int, seed: int = 1, servers: int | None = None, motifs: tuple[str, ...] = MOTIFS
) -> tuple[Inventory, JobProfile]:
    """A feasible, tight hard instance of about ``subtasks`` subtasks on ``hosts`` hosts (see the module doc)."""
    rng = random.Random(seed)
    spec, links = cluster(hosts, seed, servers)
    pis = [h for h in spec if h["role"] == "edge"]
    server_names = [h["name"] for h in spec if h["role"] == "server"]
    profile, pins = job(subtasks, pis, server_names, seed, motifs)
    draft = _inventory(spec, links, pins, f"hard-{hosts}")
    problem = build_problem(draft, profile)
    _fit_births(spec, problem)
    problem = build_problem(_inventory(spec, links, pins, f"hard-{hosts}"), profile)
    assignment = _witness(problem, rng)
    _size_servers(spec, problem, assignment, rng)
    sized = _inventory(spec, links, pins, f"hard-{hosts}")
    cost = evaluate(build_problem(sized, profile), assignment)
    policy = problem.policy
    loads = {load.host: load.mbit for load in cost.links}
    for link in links:  # a link narrower than the witness needs gets just enough (+1–10 %)
        need = loads[link["from"]] / policy.wan_headroom * rng.uniform(1.01, 1.10)
        if float(link["bandwidth"][:-4]) < need:
            link["bandwidth"] = f"{need:.3f}mbit"
    inv = _inventory(spec, links, pins, f"hard-{hosts}")
    broken = evaluate(build_problem(inv, profile), assignment).violations
    if broken:
        raise RuntimeError(f"the witness plan of hard instance {subtasks}x{hosts} seed {seed} breaks: {broken[0]}")
    return inv, profile
