"""The lab's topology plan: pure, typed, tested without root.

From an inventory (``inventory/lab.yaml``) this decides, per host, what ``placement lab up`` makes:

* the **server side** lives in the root namespace on a veth pair used as a dummy interface (``pllabsrv`` ↔
  ``pllabsrvp``, this kernel has no ``dummy`` driver) holding the server address ``10.203.0.1``; the JobManager RPC
  and the server TaskManager bind to it, REST listens on 127.0.0.1;
* each **edge host** ``i`` (1-based, inventory order) gets namespace ``pl-lab-<host>`` joined to the root namespace by
  veth ``pllab<i>h`` (root side, ``10.203.<i>.1/30``) ↔ ``pllab<i>n`` (namespace side, ``10.203.<i>.2/30``), a route to
  the server address via the root side, and its uplink shaped on ``pllab<i>n`` towards ``10.203.0.0/16`` (the server
  address *and* the root-side veth address, which the server TaskManager's data connections to the edge come from)
  with :mod:`placement.netem.tc` (htb rate = the link's bandwidth). Delay, jitter and loss (the link's, or a named
  WAN profile's: ``lab up --wan-profile``) are emulated with ``tc netem`` where the kernel has ``sch_netem``, else by
  the user-space delay line (:mod:`placement.netem.delayline`), one process per direction: the uplink's packets held at
  the server side's ingress, the downlink's at the edge namespace's, each by the one-way delay, so a round trip takes
  twice the delay as on a real link; loss on the uplink. Neither available: rate only, and the plan says what is not
  emulated;
* each edge TaskManager runs in cgroup ``/sys/fs/cgroup/cpu/pl-lab-<host>`` (cgroup v1 cpu controller) with
  ``cpu.cfs_period_us = 100000`` and ``cpu.cfs_quota_us = period × cores × speed × scale``: a Raspberry Pi 4B
  (4 cores at 0.3 of a server core) is worth 1.2 server cores. ``scale`` = min(1, budget / Σ edge cores × speed) with
  budget = half of this machine's cores, so the edges never take more than half the machine and the JobManager and
  server TaskManager keep the rest; when ``scale < 1`` the plan says so (the lab's Pis are then slower than real ones,
  by that factor) and the lab inventory written by ``up`` records the effective speed.

Every TaskManager is named after its host and declares an external resource of that name (:func:`cluster_spec`);
in custom mode the JobManager runs from the lab's own Flink home with the scheduler extension's keys, and
:func:`lab_inventory` writes the running inventory (mode, Flink home, scheduler dir, the lab's SSH key and
known_hosts) that ``placement apply`` uses like any other.

Everything is named with the prefix ``pl-lab``/``pllab`` and addressed in 10.203.0.0/16 so ``lab down`` finds
leftovers of a crashed run by name alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from placement.errors import BadInput
from placement.inventory import Inventory
from placement.inventory.failure_detection import FailureDetection, flink_config
from placement.inventory.network import flink_config as network_config
from placement.inventory.wan_profiles import WanProfile
from placement.lab.flink import ClusterSpec, TaskManagerSpec
from placement.lab.home import scheduler_dir
from placement.netem.line_schedule import LineFigures
from placement.netem.tc import Shape, burst_bytes
from placement.scheduler.naming import (
    jobmanager_config,
    taskmanager_config,
    taskmanager_resource_name,
)

Mode = Literal["custom", "vanilla"]

NS_PREFIX = "pl-lab-"
IF_PREFIX = "pllab"
CGROUP_ROOT = Path("/sys/fs/cgroup/cpu")
SERVER_IF = "pllabsrv"
SERVER_PEER_IF = "pllabsrvp"
SERVER_ADDRESS = "10.203.0.1"
LAB_NETWORK = "10.203.0.0/16"  # what an edge's uplink shaping matches: every lab address on the server side
EDGE_DATA_PORT = 6121  # edge TaskManagers' data port (each in its own namespace): the job's records leave from it
SERVER_CGROUP = CGROUP_ROOT / f"{NS_PREFIX}server"  # JobManager and server TaskManager: no quota, found by name
CFS_PERIOD_US = 100_000
MIN_QUOTA_US = 1_000  # the kernel refuses less than 1 ms per period
EDGE_SHARE_OF_MACHINE = 0.5
MAX_EDGES = 250  # 10.203.<i>.0/30 with i in 1..250

Emulation = Literal["tc netem", "user-space delay line", "rate only"]
NETEM: Emulation = "tc netem"
DELAY_LINE: Emulation = "user-space delay line"
RATE_ONLY: Emulation = "rate only"


@dataclass(frozen=True)
class Emulators:
    """What this machine can emulate a link's delay, jitter and loss with (``runner`` probes it)."""

    netem: bool = False
    delay_line: bool = False

    def choose(self, figures: LineFigures) -> Emulation:
        if not figures.any:
            return RATE_ONLY
        if self.netem:
            return NETEM
        return DELAY_LINE if self.delay_line else RATE_ONLY


@dataclass(frozen=True)
class CpuLimit:
    cgroup: Path
    period_us: int
    quota_us: int

    @property
    def cores(self) -> float:
        return self.quota_us / self.period_us


@dataclass(frozen=True)
class LabHost:
    """One inventory host as the lab makes it."""

    name: str
    role: str
    address: str  # the address its TaskManager binds to and the lab inventory lists
    slots: int
    namespace: str | None = None
    host_if: str | None = None  # root-side veth
    ns_if: str | None = None  # namespace-side veth (shaped, its tx_bytes are the uplink's WAN bytes)
    host_addr: str | None = None
    cpu: CpuLimit | None = None
    shapes: tuple[Shape, ...] = ()
    not_emulated: tuple[str, ...] = ()  # "delay 50ms", ... what this machine cannot do
    effective_speed: float | None = None
    index: int = 0  # 1-based among the edges: names its interfaces, addresses and delay-line queues
    wan: LineFigures = field(
        default_factory=LineFigures
    )  # the uplink's one-way delay, jitter, loss (the downlink: delay and jitter)
    emulation: Emulation = RATE_ONLY
    profile: str | None = None  # the WAN profile whose figures the link takes (lab up --wan-profile)
    rate_mbit: float | None = None


@dataclass(frozen=True)
class LabPlan:
    name: str
    work_dir: Path
    hosts: tuple[LabHost, ...]
    machine_cores: int
    cpu_scale: float
    notes: tuple[str, ...] = field(default=())
    # the Flink keys of the inventory's flink.failure_detection (placement.inventory.failure_detection.flink_config)
    failure_detection: Mapping[str, object] = field(default_factory=lambda: flink_config(FailureDetection()))
    # the Flink keys of the inventory's flink.network that differ from Flink's (placement.inventory.network)
    network: Mapping[str, object] = field(default_factory=dict)

    @property
    def edges(self) -> tuple[LabHost, ...]:
        return tuple(h for h in self.hosts if h.role == "edge")

    def host(self, name: str) -> LabHost:
        return next(h for h in self.hosts if h.name == name)


def cgroup_wrapper(cgroup: Path) -> tuple[str, ...]:
    """argv prefix that moves the process into ``cgroup`` and then execs the rest (children inherit it)."""
    return ("sh", "-c", f'echo $$ > {cgroup / "cgroup.procs"} && exec "$@"', "sh")


def _missing(wan: LineFigures) -> tuple[str, ...]:
    return tuple(
        f"{what} {value:g}{unit}"
        for what, value, unit in (
            ("delay", wan.delay_ms, "ms"),
            ("jitter", wan.jitter_ms, "ms"),
            ("loss", wan.loss_pct, "%"),
        )
        if value > 0
    )


def link_figures(inv: Inventory, host: str, profile: WanProfile | None) -> tuple[float, LineFigures]:
    """The uplink's rate (Mbit/s) and its delay, jitter and loss: the profile's when one is given, else the link's."""
    src = profile if profile is not None else inv.uplink(host)
    return float(src.bandwidth), LineFigures(
        float(src.delay), float(src.jitter), float(src.loss), float(src.correlation)
    )


def wan_profile_choices(values: Sequence[str], edges: Sequence[str]) -> dict[str, str]:
    """``--wan-profile`` values -> edge host -> profile name: ``lte`` for every edge host, ``rpi1=lte`` for one (it
    wins over a name for all, whatever the order); one-line BadInput for a value that is neither."""
    every: str | None = None
    per_host: dict[str, str] = {}
    for value in values:
        host, sep, name = value.rpartition("=")
        if not name.strip() or (sep and not host.strip()):
            raise BadInput(f"{value!r} is not PROFILE or HOST=PROFILE (e.g. lte or rpi1=lte)", field="--wan-profile")
        if not sep:
            every = name.strip()
        elif host.strip() not in edges:
            known = ", ".join(edges) or "none"
            raise BadInput(f"{host.strip()!r} is not an edge host of the inventory ({known})", field="--wan-profile")
        else:
            per_host[host.strip()] = name.strip()
    chosen: dict[str, str] = {}
    for edge in edges:
        profile = per_host.get(edge, every)
        if profile is not None:
            chosen[edge] = profile
    return chosen


def plan_lab(
    inv: Inventory,
    work_dir: Path,
    *,
    machine_cores: int | None = None,
    source: str | None = None,
    emulators: Emulators = Emulators(),
    profiles: Mapping[str, WanProfile] | None = None,
) -> LabPlan:
    """The lab for ``inv``: namespaces, veths, addresses, shapes, link emulation and CPU quotas per host.
    ``profiles`` (host -> WAN profile) replace those hosts' link figures."""
    profiles = dict(profiles or {})
    unknown = sorted(set(profiles) - {h.name for h in inv.edges})
    if unknown:
        raise BadInput(f"{', '.join(unknown)}: not an edge host of the inventory", source=source, field="--wan-profile")
    machine_cores = machine_cores or os.cpu_count() or 1
    servers = inv.servers
    if len(servers) != 1:
        raise BadInput(
            f"the lab runs exactly one server host, the inventory has {len(servers)}", source=source, field="hosts"
        )
    edges = inv.edges
    if len(edges) > MAX_EDGES:
        raise BadInput(f"at most {MAX_EDGES} edge hosts in the lab", source=source, field="hosts")
    for i, h in enumerate(inv.hosts):
        if len(NS_PREFIX + h.name) > 40:
            raise BadInput(
                f"host name {h.name!r} too long for a lab namespace", source=source, field=f"hosts[{i}].name"
            )

    demand = sum(float(h.cores or 1) * float(h.speed or 1) for h in edges)
    budget = machine_cores * EDGE_SHARE_OF_MACHINE
    scale = min(1.0, budget / demand) if demand > 0 else 1.0
    notes: list[str] = []
    if scale < 1.0:
        notes.append(
            f"edge hosts ask for {demand:.2f} server cores, the lab gives them {budget:g} (half of {machine_cores} "
            f"cores): every edge quota is scaled by {scale:.3f}"
        )

    server = servers[0]
    hosts: list[LabHost] = [
        LabHost(
            server.name, "server", SERVER_ADDRESS, int(server.task_slots or 1), effective_speed=float(server.speed or 1)
        )
    ]  # no quota: this machine's own cores
    for i, h in enumerate(edges, start=1):
        profile = profiles.get(h.name)
        rate, wan = link_figures(inv, h.name, profile)
        emulation = emulators.choose(wan)
        host_addr, ns_addr = f"10.203.{i}.1", f"10.203.{i}.2"
        cores = float(h.cores or 1) * float(h.speed or 1) * scale
        quota = max(MIN_QUOTA_US, round(cores * CFS_PERIOD_US))
        missing = _missing(wan) if emulation == RATE_ONLY else ()
        uplink = Shape(dest=LAB_NETWORK, rate_mbit=rate)
        if emulation == NETEM:
            uplink = Shape(LAB_NETWORK, rate, wan.delay_ms, wan.jitter_ms, wan.loss_pct, wan.correlation_pct)
        hosts.append(
            LabHost(
                name=h.name,
                role="edge",
                address=ns_addr,
                slots=int(h.task_slots or 1),
                namespace=f"{NS_PREFIX}{h.name}",
                host_if=f"{IF_PREFIX}{i}h",
                ns_if=f"{IF_PREFIX}{i}n",
                host_addr=host_addr,
                cpu=CpuLimit(CGROUP_ROOT / f"{NS_PREFIX}{h.name}", CFS_PERIOD_US, quota),
                shapes=(uplink,),
                not_emulated=missing,
                effective_speed=float(h.speed or 1) * scale,
                index=i,
                wan=wan,
                emulation=emulation,
                profile=profile.name if profile is not None else None,
                rate_mbit=rate,
            )
        )
        if missing:
            notes.append(
                f"{h.name}: {', '.join(missing)} not emulated (no sch_netem in this kernel and no user-space delay "
                "line: iptables, NFQUEUE or the netfilterqueue package missing); rate only"
            )
    return LabPlan(
        inv.name,
        Path(work_dir),
        tuple(hosts),
        machine_cores,
        scale,
        tuple(notes),
        failure_detection=flink_config(inv.flink.failure_detection),
        network=network_config(inv.flink.network),
    )


# Flink's latency tracking on for every lab job (`lab measure` shows it beside the jobs' event-time latency). Each
# receiving operator keeps a histogram per source (granularity "operator", Flink's default) of the last
# `metrics.latency.history-size` markers: 240 markers 250 ms apart are the last 60 s, so what `lab measure` reads after
# a placement's settle (60 s in the benchmarks) is that placement's steady state, not the restart an apply began
# with (Flink's default 128 at one a second reached two minutes back and once showed a 1.5 s restart spike as p99).
# Four markers a second per source subtask and output channel cost nothing measurable (a marker is a few bytes); the
# metric dumps grow by 11 values per (operator subtask, source), fetched only on REST requests, which `lab measure`
# keeps out of its byte window.
LATENCY_INTERVAL_MS = 250
LATENCY_HISTORY = 240
LAB_METRICS: dict[str, object] = {
    "metrics.latency.interval": LATENCY_INTERVAL_MS,
    "metrics.latency.history-size": LATENCY_HISTORY,
}


def cluster_spec(plan: LabPlan, *, flink_home: Path | None = None, mode: Mode = "custom") -> ClusterSpec:
    """The Flink cluster: JobManager and server TM on the server address, each edge TM in its namespace and cgroup.

    Every TaskManager is named after its host (``taskmanager.resource-id``) and declares an external resource of
    that name. ``custom``: one unit per slot (a placed slot requests one unit:
    :func:`placement.scheduler.taskmanager_config`), and the JobManager gets the extension's keys, its conf dir being
    ``<flink home>/conf``. ``vanilla``: at least 16 units (the lab jobs' per-host slot sharing groups,
    deploy/jobs/README.md)."""
    tms = []
    for h in plan.hosts:
        wrapper: tuple[str, ...] = ()
        extra: dict[str, object] = {}
        if h.role == "edge":
            assert h.cpu is not None and h.namespace is not None
            wrapper = (*cgroup_wrapper(h.cpu.cgroup), "ip", "netns", "exec", h.namespace)
            extra = {"taskmanager.data.port": EDGE_DATA_PORT}
        if mode == "custom":
            keys = taskmanager_config(h.name, h.slots)
            resource = taskmanager_resource_name(h.name)
            amount = int(keys[f"external-resource.{resource}.amount"])  # type: ignore[call-overload]
        else:
            resource, amount = h.name, max(h.slots, 16)
        tms.append(
            TaskManagerSpec(
                h.name,
                slots=h.slots,
                address=h.address,
                external_resource=resource,
                external_resource_amount=amount,
                wrapper=wrapper,
                extra_config=extra,
            )
        )
    jm_extra: dict[str, object] = {}
    jm_conf_dir = None
    if flink_home is not None:
        jm_conf_dir = Path(flink_home) / "conf"
        if mode == "custom":
            jm_extra = jobmanager_config(str(scheduler_dir(Path(flink_home))))
    return ClusterSpec(
        work_dir=plan.work_dir / "flink",
        taskmanagers=tuple(tms),
        jobmanager_address=SERVER_ADDRESS,
        rest_address="127.0.0.1",
        flink_home=flink_home,
        jobmanager_extra_config=jm_extra,
        jobmanager_conf_dir=jm_conf_dir,
        extra_config=LAB_METRICS,
        failure_detection=dict(plan.failure_detection),
        network=dict(plan.network),
    )


def _profile_figures(h: LabHost) -> dict[str, object]:
    return {
        "profile": h.profile,
        "bandwidth": h.rate_mbit,
        "delay": h.wan.delay_ms,
        "jitter": h.wan.jitter_ms,
        "loss": h.wan.loss_pct,
        "correlation": h.wan.correlation_pct,
    }


@dataclass(frozen=True)
class LabAccess:
    """How the running lab is reached: REST, SSH (key, known_hosts), its Flink home and placement mode."""

    rest_url: str
    mode: Mode
    flink_home: Path
    ssh_user: str
    ssh_key: Path
    known_hosts: Path
    flink_version: str | None = None  # the release the lab runs (its inventory pins it)


def lab_inventory(inv: Inventory, plan: LabPlan, access: LabAccess) -> dict[str, Any]:
    """The inventory of what runs: real addresses, interfaces, effective speeds, the REST URL, the placement mode,
    the lab's Flink home, version and scheduler dir, and the SSH key and known_hosts that reach the edge hosts' sshd."""
    data = inv.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["name"] = f"{inv.name}-running"
    data["ssh"] = {
        **dict(data.get("ssh") or {}),
        "user": access.ssh_user,
        "key": str(access.ssh_key),
        "known_hosts": str(access.known_hosts),
    }
    for host in data["hosts"]:
        lh = plan.host(host["name"])
        host["address"] = lh.address
        host.pop("ssh", None)  # the lab's own sshd and key, not the shipped inventory's
        if lh.role == "edge":
            host["interface"] = lh.ns_if
            host["speed"] = round(lh.effective_speed or host.get("speed", 1.0), 4)
            # its TaskManager is a CPU quota on this machine: the CPU time it measures counts this machine's cores
            host["cpu_time_core_speed"] = 1.0
    for link in data["links"]:
        edge = next((h for h in plan.edges if h.name == link["from"]), None)
        if edge is not None and edge.profile is not None:  # what the lab emulates is what the plan must see
            link.update(_profile_figures(edge))
        # the lab's uplinks are htb classes (netem.tc): their burst leaves at once, which the expected latency counts
        link["burst"] = burst_bytes(float(link["bandwidth"]))
    flink = dict(data["flink"])
    flink.pop("schedulercfg_path", None)
    flink.update(
        rest_url=access.rest_url,
        placement_mode=access.mode,
        jobmanager=plan.hosts[0].name,
        home=str(access.flink_home),
        scheduler_dir=str(scheduler_dir(access.flink_home)),
        savepoint_dir=(plan.work_dir / "savepoints").as_uri(),
    )
    if access.flink_version:  # what runs: apply checks the JobManager against it
        flink["version"] = access.flink_version
    data["flink"] = flink
    return data
