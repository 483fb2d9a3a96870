"""The inventory: hosts, WAN links, the Flink cluster, source pins and planning policy.

One YAML file drives every stage (plan, apply, netem, ansible, lab). See ``inventory/README.md`` for the format.
Models are validated with pydantic; :func:`load_inventory` turns every problem into a one-line error naming the file
and field. Derived figures (a Raspberry Pi's cores, memory and speed) are filled from :data:`HOST_MODELS` unless the
host overrides them.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from placement.flink.versions import release_problem
from placement.inventory.failure_detection import FailureDetection
from placement.inventory.network import FlinkNetworkSettings
from placement.loading import (
    FieldError,
    Strict,
    canonical_digest,
    drop_unset,
    empty_dict,
    empty_list,
    load_model,
    read_document,
)
from placement.units import Bytes, MiB, Millis, Percent, RateMbit, bytes_rate_note, is_bytes_rate

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"  # also a Flink external-resource name and a resource-id: no dots, no spaces


class HostModel(BaseModel):
    """Defaults a host model gives (``speed`` is per-core throughput relative to a server core)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    cores: float | None
    memory_mib: float | None
    speed: float
    description: str
    taskmanager_baseline_cores: float | None = None  # an idle TaskManager's own CPU on it, where known


HOST_MODELS: dict[str, HostModel] = {
    # Cortex-A72 @ 1.5 GHz: about a third of a current x86 server core on Flink's record-at-a-time work.
    "rpi4b": HostModel(cores=4, memory_mib=4096, speed=0.3, description="Raspberry Pi 4 Model B, 4 GiB"),
    "rpi4b-8g": HostModel(cores=4, memory_mib=8192, speed=0.3, description="Raspberry Pi 4 Model B, 8 GiB"),
    "rpi5": HostModel(cores=4, memory_mib=8192, speed=0.5, description="Raspberry Pi 5, 8 GiB"),
    "generic": HostModel(cores=None, memory_mib=None, speed=1.0, description="any host; give cores and memory"),
}


class SshSettings(Strict):
    """How to reach a host over SSH. Keys only; no passwords are ever read from the inventory."""

    user: str | None = None
    port: int = Field(22, ge=1, le=65535)
    key: str | None = Field(None, description="private key path; the SSH agent is used when absent")
    known_hosts: str | None = Field(None, description="known_hosts file; default ~/.ssh/known_hosts")
    sudo: bool = Field(False, description="commands that need root are run with sudo")


class Host(Strict):
    name: str = Field(pattern=NAME_PATTERN, max_length=63)
    address: str
    role: Literal["server", "edge"]
    model: str = "generic"
    cores: float | None = Field(None, gt=0)
    memory: MiB | None = Field(None, description="MiB after parsing; '4GiB' accepted")
    task_slots: int | None = Field(None, ge=1)
    speed: float | None = Field(None, gt=0, le=100)
    interface: str | None = Field(None, pattern=r"^[A-Za-z0-9_.@-]{1,15}$")
    arch: Literal["x86_64", "aarch64"] | None = None
    ssh: SshSettings | None = None
    congestion_control: Literal["cubic", "reno", "bbr"] | None = Field(
        None,
        description="the TCP congestion control this host sends with (sysctl net.ipv4.tcp_congestion_control); "
        "default cubic, Raspberry Pi OS's",
    )
    allow_stateful: bool | None = Field(None, description="may stateful operators run here (default: servers only)")
    allow_sinks: bool | None = Field(None, description="may sinks run here (default: servers only)")
    data_reroutes_on_loss: bool | None = Field(
        None,
        description="edge hosts: while this host or its uplink is lost, its sources' data still reaches the "
        "server another way (a second gateway, a direct path), so the contingency plan charges it there; default: the "
        "data is lost with the host",
    )
    taskmanager_baseline_cores: float | None = Field(
        None,
        ge=0,
        description="CPU its TaskManager JVM uses of its own (GC, netty, metrics, heartbeats), in cores of "
        "this host; used where the profile measured no TaskManager here (default: the host model's, if any)",
    )
    netty_cores_per_delivery: float | None = Field(
        None,
        ge=0,
        le=1,
        description="edge hosts: what its TaskManager's Netty server spends per buffer a second its "
        "subtasks deliver to another TaskManager, in cores of this host (default: the cost model's measured figure "
        "over this host's speed; placement.costmodel.deliveries)",
    )
    cpu_time_core_speed: float | None = Field(
        None,
        gt=0,
        le=100,
        description="speed of the cores its processes' measured CPU time is counted in (default: "
        "this host's own speed); a lab host that is a CPU quota on a faster machine counts that machine's (1.0)",
    )

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        # ';' separates fields in schedulercfg; whitespace would break tc filters and ssh.
        if not v or re.search(r"[\s;]", v):
            raise ValueError(f"{v!r} is not a host address (no spaces or ';')")
        if re.fullmatch(r"[0-9]+(\.[0-9]+){3}", v):  # looks like IPv4: then it must be one (no DNS name is all digits)
            try:
                ipaddress.IPv4Address(v)
            except ValueError:
                raise ValueError(f"{v!r} is not an IPv4 address (four numbers 0-255, no leading zeros)") from None
        return v

    @model_validator(mode="after")
    def _fill_from_model(self) -> Host:
        if self.model not in HOST_MODELS:
            raise FieldError("model", f"unknown host model {self.model!r} (known: {', '.join(sorted(HOST_MODELS))})")
        m = HOST_MODELS[self.model]
        if self.cores is None:
            if m.cores is None:
                raise FieldError("cores", f"host {self.name!r} of model {self.model!r} needs 'cores'")
            self.cores = m.cores
        if self.memory is None:
            if m.memory_mib is None:
                raise FieldError("memory", f"host {self.name!r} of model {self.model!r} needs 'memory'")
            self.memory = m.memory_mib
        if self.speed is None:
            self.speed = m.speed
        if self.task_slots is None:
            self.task_slots = max(1, int(self.cores))
        if self.arch is None:
            self.arch = "aarch64" if self.model.startswith("rpi") else "x86_64"
        if self.allow_stateful is None:
            self.allow_stateful = self.role == "server"
        if self.allow_sinks is None:
            self.allow_sinks = self.role == "server"
        if self.taskmanager_baseline_cores is None:
            self.taskmanager_baseline_cores = m.taskmanager_baseline_cores
        return self

    @property
    def memory_mib(self) -> float:
        return float(self.memory or 0)


class Link(Strict):
    """A WAN link from an edge host up to a server: shaped on the edge host's egress towards the server."""

    # the one aliased field of the inventory: read as ``from`` from a file, built as ``Link(from_=...)`` in code
    model_config = Strict.model_config | {"populate_by_name": True}

    from_: str = Field(alias="from")
    to: str
    bandwidth: RateMbit = Field(description="Mbit/s after parsing; '50mbit' accepted")
    delay: Millis = Field(0.0, description="one-way delay, ms")
    jitter: Millis = Field(0.0, description="ms")
    loss: Percent = Field(0.0, description="percent")
    correlation: Percent = Field(0.0, description="percent; netem correlation for jitter and loss")
    burst: Bytes | None = Field(
        None,
        ge=0,
        description="bytes the link sends at once after an idle spell: a token-bucket shaper's burst "
        "(placement netem and the lab shape with htb: 10 ms of the rate, at least 3200 B); unset or 0: every byte at "
        "the link's rate, as a physical uplink sends it",
    )
    profile: str | None = Field(None, description="a named WAN profile from netem/ whose figures this link takes")

    @model_validator(mode="before")
    @classmethod
    def _figures_from_profile(cls, data: object) -> object:
        """A link naming a WAN profile takes the figures it leaves out from that profile (``profile: lte`` alone is
        a link of LTE's bandwidth, delay, jitter, loss and correlation): what ``placement netem`` shapes, planned."""
        if not isinstance(data, dict) or not isinstance(data.get("profile"), str):
            return data
        from placement.errors import BadInput
        from placement.inventory.wan_profiles import load_profile

        figures = ("bandwidth", "delay", "jitter", "loss", "correlation")
        try:
            wan = load_profile(data["profile"])
        except BadInput as exc:
            if "bandwidth" in data:  # the link's own figures plan; netem names the profile when it needs it
                return data
            raise FieldError(
                "profile", f"{exc.message}: a link without its own bandwidth takes its profile's"
            ) from None
        return {**{f: getattr(wan, f) for f in figures}, **data}

    @property
    def name(self) -> str:
        return f"{self.from_}→{self.to}"


class JobSettings(Strict):
    """The job to redeploy: what the redeploy script and `placement apply` resubmit."""

    name: str | None = None
    jar: str | None = Field(None, description="path of the job jar on the machine that runs apply")
    entry_class: str | None = None
    program_args: list[str] = Field(default_factory=empty_list)


class JobBudget(Strict):
    """What one job may take of the fleet it shares (issue 24): planned as constraints of the joint model."""

    uplinks: dict[str, float] = Field(
        default_factory=empty_dict,
        description="edge host (or '*': every uplink not named) -> the share 0..1 of that link's "
        "usable bandwidth (bandwidth × policy.wan_headroom) this job's own traffic may take",
    )
    min_rate_scale: float | None = Field(
        None,
        gt=0,
        description="the least scale of its profiled source rates it must keep: `plan --max-rate` scales "
        "the other jobs down before it, and a --rate-scale below it is refused",
    )

    @field_validator("uplinks")
    @classmethod
    def _shares(cls, v: dict[str, float]) -> dict[str, float]:
        for host, share in v.items():
            if not 0 <= share <= 1:
                raise ValueError(f"the share of uplink {host!r} must be within 0..1, got {share:g}")
        return v


class FleetJobSettings(JobSettings):
    """One entry of ``jobs:``: what apply resubmits for it, and how it ranks and what it may take when it is planned
    together with the others (``priority``, ``budget``; both optional: unset, the jobs are planned as equals)."""

    priority: int | None = Field(
        None,
        description="higher first: its WAN (then its latency) is optimised before a lower-priority job's; jobs "
        "without one count as 0 when any job has one",
    )
    budget: JobBudget | None = None


class FlinkCluster(Strict):
    rest_url: str = Field(pattern=r"^https?://[^\s/]+(:\d+)?/?$")
    home: str = "/opt/flink"
    version: str | None = Field(
        None,
        description="pin: the exact Flink release the cluster runs (what the Ansible role installs, what apply "
        "checks the JobManager against); default: what the JobManager reports (REST /config)",
    )
    jobmanager: str | None = Field(None, description="host running the JobManager (default: the first server)")
    placement_mode: Literal["custom", "vanilla"] = "custom"
    scheduler_dir: str | None = Field(
        None,
        description="JobManager host: the scheduler extension's dir (one schedulercfg per job, taskmanagers.cfg);"
        " default <home>/placement/scheduler, or the directory of an older inventory's schedulercfg_path",
    )
    schedulercfg_path: str | None = Field(
        None, description="obsolete (the patched-Flink era's single file): only its directory is used, as scheduler_dir"
    )
    savepoint_dir: str = "file:///tmp/flink-savepoints"
    slot_sharing: bool = Field(True, description="subtasks of different vertices share a slot (Flink's default)")
    archive_url: str | None = Field(None, description="Flink distribution tarball for ansible")
    archive_sha512: str | None = None
    network: FlinkNetworkSettings = Field(
        default_factory=FlinkNetworkSettings,
        description="TCP connections and buffers per channel (placement.inventory.network): what bounds a lossy or "
        "long link besides its rate, and what every writer of a Flink config sets",
    )
    failure_detection: FailureDetection = Field(
        default_factory=FailureDetection,
        description="heartbeats, slot requests, restarts and rejoining, with edge "
        "defaults (placement.inventory.failure_detection): what every writer of a Flink config sets",
    )

    @field_validator("version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is None:
            return None
        problem = release_problem(v)
        if problem:
            raise ValueError(problem)
        return v.strip()

    @property
    def scheduler_directory(self) -> str:
        """Where the scheduler extension on the JobManager host reads each job's schedulercfg."""
        if self.scheduler_dir:
            return self.scheduler_dir.rstrip("/") or "/"
        if self.schedulercfg_path:
            return posixpath.dirname(self.schedulercfg_path.rstrip("/")) or "/"
        return posixpath.join(self.home.rstrip("/") or "/", "placement", "scheduler")


class Pins(Strict):
    """Where data is born and what the user insists on. Keys are vertex names (or ids) from the profile."""

    sources: dict[str, str | list[str]] = Field(
        default_factory=empty_dict,
        description="source vertex -> host of every subtask, or a list giving subtask i's host",
    )
    operators: dict[str, str | list[str]] = Field(default_factory=empty_dict, description="vertex -> allowed host(s)")
    forbid: dict[str, str | list[str]] = Field(default_factory=empty_dict, description="vertex -> forbidden host(s)")


class ParallelismBounds(Strict):
    """What ``placement plan --rescale`` may choose for one vertex (Flink's own limits apply as well)."""

    min: int | None = Field(None, ge=1)
    max: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> ParallelismBounds:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise FieldError("min", f"min {self.min} is above max {self.max}")
        return self


class Weights(Strict):
    wan: float = Field(1.0, ge=0)
    server_cpu: float = Field(1.0, ge=0)
    latency: float = Field(0.001, ge=0)


class Policy(Strict):
    """Planning policy: utilisation targets, headroom and the objective."""

    cpu_utilisation_target: float = Field(0.8, gt=0, le=1, description="usable share of a host's cores")
    wan_headroom: float = Field(0.9, gt=0, le=1, description="usable share of a link's bandwidth")
    memory_per_subtask: MiB = Field(256.0, description="MiB a subtask needs besides its state")
    memory_utilisation_target: float = Field(0.8, gt=0, le=1)
    objective: Literal["lexicographic", "weighted"] = "lexicographic"
    weights: Weights = Field(default_factory=Weights)
    lexicographic_tolerance: float = Field(1e-6, ge=0, le=0.5, description="relative slack kept on earlier stages")
    max_latency_ms: Millis | dict[str, Millis] | None = Field(
        None,
        description="bound on every source→sink path's predicted latency (costmodel.latency), or per path: "
        "{'<sink>': ms, '<source> -> <sink>': ms, '*': ms} (the most specific key wins); null: unbounded",
    )

    @field_validator("max_latency_ms")
    @classmethod
    def _positive_bounds(cls, v):
        for key, ms in ({"": v} if not isinstance(v, dict) else v).items():
            if ms is not None and not ms > 0:
                raise ValueError(f"a latency bound must be > 0 ms{f' (key {key!r})' if key else ''}, got {ms:g}")
        return v


class Inventory(Strict):
    version: Literal[1] = 1
    name: str = "inventory"
    ssh: SshSettings = Field(default_factory=SshSettings, description="defaults for every host's ssh settings")
    hosts: list[Host] = Field(min_length=1)
    links: list[Link] = Field(default_factory=empty_list)
    flink: FlinkCluster
    job: JobSettings = Field(default_factory=JobSettings)
    jobs: list[FleetJobSettings] = Field(
        default_factory=empty_list,
        description="several jobs on this cluster (issue 24), each by its name: what `placement "
        "apply --plan FLEET` resubmits for it (jar and entry_class default to job:'s); "
        "a job named in job: needs no entry",
    )
    pins: Pins = Field(default_factory=Pins)
    parallelism: dict[str, ParallelismBounds] = Field(
        default_factory=empty_dict,
        description="vertex name (or id) -> {min, max}: bounds for `placement plan --rescale`",
    )
    policy: Policy = Field(default_factory=Policy)

    @model_validator(mode="after")
    def _job_names(self) -> Inventory:
        seen: set[str] = set()
        for i, j in enumerate(self.jobs):
            if not j.name:
                raise FieldError(f"jobs[{i}].name", "each job needs its name (the running job's, as Flink shows it)")
            if j.name in seen:
                raise FieldError(f"jobs[{i}].name", f"duplicate job name {j.name!r}")
            seen.add(j.name)
        return self

    @model_validator(mode="after")
    def _budget_hosts(self) -> Inventory:
        edges = {h.name for h in self.hosts if h.role == "edge"}
        for i, j in enumerate(self.jobs):
            for host in j.budget.uplinks if j.budget else {}:
                if host != "*" and host not in edges:
                    raise FieldError(
                        f"jobs[{i}].budget.uplinks.{host}",
                        f"{host!r} is no edge host (an uplink is named by its edge host, or '*')",
                    )
        return self

    def fleet_job(self, name: str) -> FleetJobSettings | None:
        """The ``jobs:`` entry named ``name`` (its priority and budget), or None."""
        return next((j for j in self.jobs if j.name == name), None)

    def job_named(self, name: str) -> JobSettings | None:
        """What apply resubmits for the job called ``name``: its ``jobs:`` entry (jar and entry class from ``job:``
        where unset), or ``job:`` when that names it; None when neither does."""
        for j in self.jobs:
            if j.name == name:
                return j.model_copy(
                    update={"jar": j.jar or self.job.jar, "entry_class": j.entry_class or self.job.entry_class}
                )
        return self.job if self.job.name == name else None

    def for_job(self, name: str) -> Inventory:
        """The inventory as one job's submission reads it (apply, redeploy.sh): that job's ``jobs:`` entry in
        ``job:``'s place where one names it, so one job of a fleet is resubmitted with its own program, not the one
        ``job:`` describes; itself otherwise."""
        settings = self.job_named(name) if self.jobs else None
        return self if settings is None else self.model_copy(update={"job": settings})

    @model_validator(mode="after")
    def _cross_checks(self) -> Inventory:
        names: dict[str, int] = {}
        for i, h in enumerate(self.hosts):
            if h.name in names:
                raise FieldError(f"hosts[{i}].name", f"duplicate host name {h.name!r}")
            names[h.name] = i
        addresses: dict[str, int] = {}
        for i, h in enumerate(self.hosts):
            if h.address in addresses:  # schedulercfg, the TaskManager table and tc filters tell hosts by address
                first = self.hosts[addresses[h.address]]
                raise FieldError(
                    f"hosts[{i}].address",
                    f"{h.address!r} is also host {first.name!r}'s address "
                    f"(hosts[{addresses[h.address]}]): each host needs its own, schedulercfg and tc "
                    "filters tell hosts by address",
                )
            addresses[h.address] = i
        if not any(h.role == "server" for h in self.hosts):
            raise FieldError("hosts", "at least one host must have role 'server'")
        seen_uplink: dict[str, int] = {}
        for i, link in enumerate(self.links):
            for end, value in (("from", link.from_), ("to", link.to)):
                if value not in names:
                    raise FieldError(f"links[{i}].{end}", f"unknown host {value!r}")
            if self.hosts[names[link.from_]].role != "edge":  # by index: fleets have 10 000 links
                raise FieldError(f"links[{i}].from", f"{link.from_!r} is not an edge host; links go edge→server")
            if self.hosts[names[link.to]].role != "server":
                raise FieldError(f"links[{i}].to", f"{link.to!r} is not a server; links go edge→server")
            if link.from_ in seen_uplink:
                raise FieldError(
                    f"links[{i}].from",
                    f"edge host {link.from_!r} already has an uplink (links[{seen_uplink[link.from_]}])",
                )
            seen_uplink[link.from_] = i
        for i, h in enumerate(self.hosts):
            if h.role == "edge" and h.name not in seen_uplink:
                raise FieldError(f"hosts[{i}]", f"edge host {h.name!r} has no link to a server")
        if self.flink.jobmanager is not None and self.flink.jobmanager not in names:
            raise FieldError("flink.jobmanager", f"unknown host {self.flink.jobmanager!r}")
        for section in ("sources", "operators", "forbid"):
            for vertex, hosts in getattr(self.pins, section).items():
                for host in [hosts] if isinstance(hosts, str) else hosts:
                    if host not in names:
                        raise FieldError(f"pins.{section}.{vertex}", f"unknown host {host!r}")
        return self

    # ---- lookups -------------------------------------------------------------------------------------------------

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def host_of_taskmanager(self, taskmanager_id: str | None, host: str | None) -> Host | None:
        """The host a TaskManager runs on: the one named as its resource id, else the one whose name or address is
        its host, else the host part of a default resource id ("10.0.0.5:41231-6a4f1c"); None: no match."""
        tm, addr = taskmanager_id or "", host or ""
        for wanted, keys in ((tm, ("name",)), (addr, ("name", "address")), (tm.split(":")[0], ("name", "address"))):
            if wanted:
                for h in self.hosts:
                    if any(getattr(h, k) == wanted for k in keys):
                        return h
        return None

    @property
    def servers(self) -> list[Host]:
        return [h for h in self.hosts if h.role == "server"]

    @property
    def edges(self) -> list[Host]:
        return [h for h in self.hosts if h.role == "edge"]

    @property
    def jobmanager_host(self) -> Host:
        return self.host(self.flink.jobmanager) if self.flink.jobmanager else self.servers[0]

    def uplink(self, edge_host: str) -> Link:
        for link in self.links:
            if link.from_ == edge_host:
                return link
        raise KeyError(edge_host)

    def ssh_for(self, host: Host) -> SshSettings:
        """The host's ssh settings with the inventory-wide defaults filled in."""
        if host.ssh is None:
            return self.ssh
        merged = self.ssh.model_dump()
        merged.update(host.ssh.model_dump(exclude_unset=True))
        return SshSettings.model_validate(merged)

    def digest(self) -> str:
        """sha256 of the validated inventory's canonical JSON: formatting and comments do not change it."""
        data = self.model_dump(mode="json", by_alias=True)
        for h in data.get("hosts", []):  # added by issue 23: an inventory without them hashes as before
            drop_unset(
                h,
                "taskmanager_baseline_cores",
                "cpu_time_core_speed",
                "netty_cores_per_delivery",
                "data_reroutes_on_loss",
                "congestion_control",
            )  # and issue 43's and 45's
        drop_unset(data.get("policy", {}), "max_latency_ms")  # issue 25: an unbounded inventory hashes as before
        for link in data.get("links", []):  # and one whose links state no burst
            drop_unset(link, "burst")
        if not data.get("jobs"):  # issue 24: an inventory of one job hashes as before
            data.pop("jobs", None)
        for j in data.get("jobs", []):  # issue 24's priorities and budgets: a jobs list without them hashes as before
            drop_unset(j, "priority", "budget")
        flink = data.get("flink", {})  # failure detection: an inventory that keeps the defaults hashes as before
        if flink.get("failure_detection") == FailureDetection().model_dump(mode="json", by_alias=True):
            flink.pop("failure_detection")
        if flink.get("network") == FlinkNetworkSettings().model_dump(mode="json"):  # and Flink's network defaults
            flink.pop("network")
        return canonical_digest(data)


def link_rate_warnings(path: str | Path) -> list[str]:
    """One warning per link bandwidth written in tc's bytes-per-second units (``50mbps`` is 400 Mbit/s, what tc
    means, rarely what a person writing it does), read from the file as written (the model holds Mbit/s): what
    ``placement plan`` and ``placement netem apply`` both say."""
    doc = read_document(path)
    notes = []
    for i, link in enumerate((doc.get("links") or []) if isinstance(doc, dict) else []):
        bandwidth = link.get("bandwidth") if isinstance(link, dict) else None
        if is_bytes_rate(bandwidth):
            notes.append(bytes_rate_note(f"{path}: links[{i}].bandwidth", bandwidth))
    return notes


def load_inventory(path: str | Path) -> Inventory:
    """Load and validate an inventory file (YAML or JSON)."""
    return load_model(path, Inventory, finite="")
