"""The placement problem as typed values: hosts, subtasks, channels — built from an inventory and a profile.

:func:`build_problem` is the only place that reads the inventory and profile models; everything downstream (solver,
baselines, writers) works on :class:`PlacementProblem`. It resolves the pins (where a source's data is born, the user's
pins and forbids) onto each :class:`Subtask`; :meth:`PlacementProblem.allowed_hosts` combines them with the server-only
defaults for sinks and stateful operators. The reachability rule (no data flows down into an edge host) depends on the
assignment and is enforced by the solver and checked by :func:`placement.costmodel.evaluate`.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from placement.costmodel import deliveries, demand, traffic, transport
from placement.errors import BadInput
from placement.flink.facts import DEFAULT_BUFFER_TIMEOUT_MS
from placement.inventory import Host, Inventory, Link, Policy
from placement.profile.format import (
    EdgeProfile,
    JobProfile,
    ShipStrategy,
    VertexProfile,
    copies,
    edge_output,
)

SubtaskKey = tuple[str, int]  # (vertex id, 0-based subtask index)
Assignment = Mapping[SubtaskKey, str]  # subtask -> host name


@dataclass(frozen=True)
class JobPolicy:
    """One job's rank and budget among jobs planned together (the inventory's ``jobs:`` entry, resolved onto the
    fleet's hosts by :func:`placement.costmodel.jobs.job_policies`)."""

    priority: int | None = None  # higher first; None: no priority (counted as 0 beside jobs that have one)
    uplink_shares: Mapping[str, float] = field(default_factory=dict)  # edge host -> share of its usable bandwidth
    min_rate_scale: float | None = None  # the least rate scale it keeps (--max-rate; a lower --rate-scale: refused)

    @property
    def empty(self) -> bool:
        return self.priority is None and not self.uplink_shares and self.min_rate_scale is None


@dataclass(frozen=True)
class RunningUse:
    """What a job that keeps running — planned before, not placed now (``plan --running``) — takes of one host and its
    uplink: fixed load, off the capacities every planner sees (:mod:`placement.costmodel.running`)."""

    job: str
    cores: float = 0.0  # in this host's cores, as its plan predicted them
    memory_mib: float = 0.0
    slots: int = 0  # already taken off HostSpec.slots; kept to say why the host has fewer
    mbit: float = 0.0  # on this host's uplink


@dataclass(frozen=True)
class HostSpec:
    name: str
    address: str
    role: str  # "server" | "edge"
    cores: float
    speed: float
    slots: int
    memory_mib: float
    uplink_mbit: float | None = None  # edge hosts: link bandwidth
    uplink_delay_ms: float = 0.0
    uplink_to: str | None = None
    uplink_burst_bytes: float = 0.0  # sent at once after an idle spell (a token-bucket shaper's burst; 0: physical)
    uplink_loss: float = 0.0  # a fraction of the packets sent
    # what the TCP connections from this host's TaskManager carry over the uplink under its loss and round trip
    # (costmodel.transport); None: no link, or one that carries its rate
    uplink_goodput_mbit: float | None = None
    uplink_loss_wait_ms: float = 0.0  # a packet's mean wait for retransmissions at that goodput
    uplink_credit_mbit: float | None = None  # what one remote input channel's credit lets cross it (None: no delay)
    congestion_control: str = transport.DEFAULT_CONGESTION_CONTROL
    allow_stateful: bool = False
    allow_sinks: bool = False
    # A pool of servers (placement.solver.server_pools) stands for several hosts at speed 1: one thread there may take
    # a core of its fastest member. None: the host's own speed.
    thread_speed: float | None = None
    # what its TaskManager JVM spends of its own, in this host's cores (costmodel.demand.baseline_cores): a constant,
    # since the host runs a TaskManager whatever is placed on it; the CPU rows take it off the usable cores
    baseline_cores: float = 0.0
    baseline_basis: str = "none"
    # κ_h: what one buffer a second delivered to another TaskManager costs its Netty server, in this host's cores, and
    # what the stream leaving it costs (costmodel.deliveries; 0 on servers): a constant beside the baseline
    netty_cores_per_delivery: float = 0.0
    netty_cores: float = 0.0
    running: tuple[RunningUse, ...] = ()  # jobs already running here, as fixed load (usable_* take it off)
    # edge hosts: while this host or its uplink is lost, its sources' data reaches the server another way (the
    # contingency charges it there, costmodel.degraded); False: it is lost with the host
    data_reroutes_on_loss: bool = False
    # the TaskManagers this host stands for: 1, or a pool's members (placement.solver.server_pools), each a TCP
    # connection from every edge host
    taskmanagers: int = 1

    @property
    def is_edge(self) -> bool:
        return self.role == "edge"

    @property
    def crossing_ms(self) -> float:
        """What a record crossing the uplink spends on the way besides being sent: the one-way delay and the mean
        wait for retransmissions the link's loss causes (every latency row reads this)."""
        return self.uplink_delay_ms + self.uplink_loss_wait_ms

    def running_total(self, what: str) -> float:
        """The running jobs' ``cores``, ``memory_mib``, ``slots`` or ``mbit`` here, together."""
        total: float = sum(getattr(r, what) for r in self.running)
        return total


@dataclass(frozen=True)
class Subtask:
    vertex_id: str
    vertex_name: str
    index: int
    parallelism: int
    stateful: bool
    is_source: bool
    is_sink: bool
    out_mbit: float  # what it emits over all its output edges (payload, every copy), Mbit/s
    records_in_per_s: float
    records_out_per_s: float
    server_cores: float  # CPU demand in server cores (see costmodel.demand)
    cpu_estimated: bool
    memory_mib: float
    birth: str | None = None  # sources: the host its data is born on (None: born at the server side)
    pinned_to: frozenset[str] | None = None  # user pin: only these hosts
    forbidden: frozenset[str] = frozenset()  # user forbid
    checkpoint_mbit: float = 0.0  # what its checkpoints upload (see costmodel.demand.checkpoint_mbit), Mbit/s

    @property
    def key(self) -> SubtaskKey:
        return (self.vertex_id, self.index)

    @property
    def label(self) -> str:
        """Flink's ``getTaskNameWithSubtaskIndex()`` without the attempt: ``Name (i/n)``, i 1-based."""
        return f"{self.vertex_name} ({self.index + 1}/{self.parallelism})"

    def cores_on(self, host: HostSpec) -> float:
        """``c(s, h) = c(s) / σ_h``."""
        return self.server_cores / host.speed


@dataclass(frozen=True)
class Channel:
    """A job edge U → V: its ship strategy, what each upstream subtask puts on it, and what every pair of subtasks
    sends over the wire (:mod:`.traffic`)."""

    source: str
    target: str
    strategy: ShipStrategy
    n_up: int
    n_down: int
    up_out_mbit: tuple[float, ...]  # o(u_i, e): payload u_i puts on this edge, one copy of each record
    path_weight: float  # share of source→sink paths that use this edge
    bytes_per_record: float = 0.0  # serialized size of one record on this edge (0: unknown)
    receiver_shares: tuple[float, ...] | None = None  # HASH: measured share of each downstream subtask (key skew)
    flushes_per_s: float | None = None  # network flushes/s of a busy channel; None: framing not charged
    buffer_timeout_ms: float = DEFAULT_BUFFER_TIMEOUT_MS  # execution.buffer-timeout (the flush wait, costmodel.latency)
    # per downstream subtask: the deliveries it was measured to get over the flush cycles the rule predicts
    # (costmodel.deliveries); None: the rule as it is
    delivery_ratio: tuple[float, ...] | None = None

    @property
    def all_to_all(self) -> bool:
        return self.strategy in traffic.ALL_TO_ALL

    @property
    def shares(self) -> tuple[float, ...] | None:
        """The measured receiver shares, when they fit this channel's downstream parallelism (a channel rebuilt at
        another parallelism spreads evenly: shares are per measured subtask, not per key group)."""
        if self.receiver_shares is not None and len(self.receiver_shares) == self.n_down:
            return self.receiver_shares
        return None

    def receivers(self, i: int) -> range:
        return traffic.receivers(self.strategy, i, self.n_up, self.n_down)

    def senders(self, j: int) -> range:
        return traffic.senders(self.strategy, j, self.n_up, self.n_down)

    def share(self, i: int, j: int) -> float:
        return traffic.share(self.strategy, i, j, self.n_up, self.n_down, self.shares)

    def flow_mbit(self, i: int, j: int) -> float:
        """Mbit/s on the wire from u_i to v_j: ``o(u_i, e)·share(i, j)`` plus the network framing of that channel."""
        payload = self.up_out_mbit[i] * self.share(i, j)
        if self.flushes_per_s is None:
            return payload
        return payload + traffic.framing_mbit(self.deliveries(i, j))

    def deliveries(self, i: int, j: int) -> float:
        """Buffers a second u_i delivers to v_j (:func:`.traffic.messages_per_s`): one network message each when the
        pair crosses TaskManagers, and the work of the sender's Netty server (:mod:`.deliveries`). A profile without
        a flush interval: Flink's default one."""
        ratios = self.ratios
        return traffic.messages_per_s(
            self.up_out_mbit[i] * self.share(i, j),
            self.bytes_per_record,
            self.flush_cycles_per_s,
            1.0 if ratios is None else ratios[j],
        )

    @property
    def ratios(self) -> tuple[float, ...] | None:
        """The measured delivery ratios, when they fit this channel's downstream parallelism (as :attr:`shares`)."""
        if self.delivery_ratio is not None and len(self.delivery_ratio) == self.n_down:
            return self.delivery_ratio
        return None

    def busiest_deliveries(self, i: int) -> float:
        """The most buffers a second u_i delivers to any one receiver — without building every pair where its receivers
        share alike (all-to-all without measured key shares: then the pair whose receiver got the most of its
        flush cycles)."""
        receivers = self.receivers(i)
        if len(receivers) > 1 and self.all_to_all and self.shares is None:
            ratios = self.ratios
            return self.deliveries(i, receivers[0] if ratios is None else max(receivers, key=lambda k: ratios[k]))
        return max((self.deliveries(i, j) for j in receivers), default=0.0)

    @property
    def flush_cycles_per_s(self) -> float:
        """How often a busy pair is flushed (a profile without a flush interval: Flink's default one)."""
        return (
            self.flushes_per_s if self.flushes_per_s is not None else traffic.flushes_per_s(DEFAULT_BUFFER_TIMEOUT_MS)
        )

    def pairs(self) -> Iterator[tuple[int, int, float]]:
        """(i, j, Mbit/s) for every pair that carries data."""
        for i in range(self.n_up):
            for j in self.receivers(i):
                yield i, j, self.flow_mbit(i, j)

    def _per_end(self, figure: Callable[[int, int], float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """``figure(i, j)`` summed over each upstream subtask's receivers and over each downstream subtask's senders."""
        sent = [0.0] * self.n_up
        received = [0.0] * self.n_down
        for i in range(self.n_up):
            for j in self.receivers(i):
                f = figure(i, j)
                sent[i] += f
                received[j] += f
        return tuple(sent), tuple(received)

    @cached_property
    def _flows(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return self._per_end(self.flow_mbit)

    def sent_mbit(self, i: int) -> float:
        """Mbit/s upstream subtask i sends over this channel, to all its receivers together."""
        return self._flows[0][i]

    def received_mbit(self, j: int) -> float:
        """Mbit/s downstream subtask j receives over this channel."""
        return self._flows[1][j]

    @cached_property
    def _deliveries(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return self._per_end(self.deliveries)

    def received_deliveries(self, j: int) -> float:
        """Buffers a second downstream subtask j gets over this channel."""
        return self._deliveries[1][j]


@dataclass(frozen=True)
class PlanOptions:
    rate_scale: float = 1.0  # plan for this multiple of the measured rates
    # custom: the scheduler extension places every subtask anywhere; vanilla: the Placement helper's lanes (below)
    placement_mode: str = "custom"


@dataclass(frozen=True)
class PlacementProblem:
    hosts: tuple[HostSpec, ...]
    subtasks: tuple[Subtask, ...]
    channels: tuple[Channel, ...]
    vertex_order: tuple[str, ...]  # topological
    vertex_names: Mapping[str, str]
    policy: Policy
    slot_sharing: bool = True
    rate_scale: float = 1.0
    warnings: tuple[str, ...] = field(default=())
    # the warnings about valid input that was probably not meant (pins naming no vertex of the job, when they look
    # like typos): `plan` says them on stderr even with --json, and --strict refuses them; also in ``warnings``
    input_warnings: tuple[str, ...] = field(default=())
    whole_vertices: frozenset[str] = frozenset()  # vertex ids whose subtasks must share one host (vanilla mode)
    # several jobs in one problem (placement.costmodel.jobs): vertex id -> its job. Empty for one job. Jobs never share
    # a task slot, so with slot sharing a host's slots are counted per job (slots_needed)
    vertex_job: Mapping[str, str] = field(default_factory=dict)
    # policy.max_latency_ms resolved: (source vertex id, sink vertex id) -> ms every path between them must meet
    latency_bounds: Mapping[tuple[str, str], float] = field(default_factory=dict)
    # several jobs: job name -> its priority and budget (only jobs whose inventory entry sets any); empty: equals
    job_policies: Mapping[str, JobPolicy] = field(default_factory=dict)

    @cached_property
    def host_by_name(self) -> dict[str, HostSpec]:
        return {h.name: h for h in self.hosts}

    @cached_property
    def subtask_by_key(self) -> dict[SubtaskKey, Subtask]:
        return {s.key: s for s in self.subtasks}

    def allowed_hosts(self, s: Subtask) -> frozenset[str]:
        """Hosts the rules allow for ``s`` (reachability aside):

        * a source runs where its data is born (unpinned sources: on a server);
        * sinks and stateful operators run on servers unless the host allows them (``allow_sinks``/``allow_stateful``);
        * a user pin replaces that default; a user forbid removes hosts.
        """
        if s.is_source:
            allowed = {s.birth} if s.birth else {h.name for h in self.servers}
        else:
            allowed = {h.name for h in self.hosts if self.rules_allow_on(s, h)}
        if s.pinned_to is not None:
            allowed = set(s.pinned_to)
        return frozenset(allowed - s.forbidden)

    def allows(self, s: Subtask, host: str) -> bool:
        """``host in allowed_hosts(s)`` without building the set (a fleet has 10 000 hosts)."""
        if host in s.forbidden:
            return False
        if s.pinned_to is not None:
            return host in s.pinned_to
        if s.is_source:
            return host == s.birth if s.birth else not self.host_by_name[host].is_edge
        return self.rules_allow_on(s, self.host_by_name[host])

    @staticmethod
    def rules_allow_on(s: Subtask, h: HostSpec) -> bool:
        """Server-only defaults: sinks and stateful operators stay off edge hosts that do not allow them."""
        if not h.is_edge:
            return True
        return (not s.stateful or h.allow_stateful) and (not s.is_sink or h.allow_sinks)

    @cached_property
    def by_vertex(self) -> dict[str, list[Subtask]]:
        out: dict[str, list[Subtask]] = {v: [] for v in self.vertex_order}
        for s in self.subtasks:
            out[s.vertex_id].append(s)
        return out

    @cached_property
    def inputs(self) -> dict[str, list[Channel]]:
        out: dict[str, list[Channel]] = {v: [] for v in self.vertex_order}
        for c in self.channels:
            out[c.target].append(c)
        return out

    @property
    def servers(self) -> list[HostSpec]:
        return [h for h in self.hosts if not h.is_edge]

    @property
    def edges(self) -> list[HostSpec]:
        return [h for h in self.hosts if h.is_edge]

    def slots_needed(self, placed: list[Subtask]) -> int:
        """Task slots the subtasks ``placed`` on one host fill. With slot sharing (Flink's default) one slot holds one
        subtask of each vertex of one job, so a job needs as many as its most numerous vertex there, and jobs add up
        (a slot never holds two jobs' subtasks): ``Σ_jobs max_v n(v)``. Without slot sharing: one per subtask."""
        if not self.slot_sharing:
            return len(placed)
        return self.slots_of_counts(Counter(s.vertex_id for s in placed))

    def slots_of_counts(self, per_vertex: Mapping[str, int]) -> int:
        """:meth:`slots_needed` from the number of subtasks of each vertex on the host."""
        if not self.slot_sharing:
            return sum(per_vertex.values())
        per_job: dict[str, int] = {}
        for vid, n in per_vertex.items():
            job = self.vertex_job.get(vid, "")
            per_job[job] = max(per_job.get(job, 0), n)
        return sum(per_job.values())

    def usable_cores(self, h: HostSpec) -> float:
        """What the subtasks may use: ``cores·ρ`` less the TaskManager's own baseline, its Netty server's work for the
        stream that leaves the host and the jobs already running there (every CPU row reads this)."""
        return max(
            0.0,
            h.cores * self.policy.cpu_utilisation_target - h.baseline_cores - h.netty_cores - h.running_total("cores"),
        )

    def link_mbit(self, h: HostSpec) -> float:
        """What the uplink carries for Flink in all: its bandwidth under the headroom, or less where one TCP flow's
        goodput under loss and round trip is lower and the uplink has only one (the goodput is an average already: no
        headroom on it). Where several receiving TaskManagers each have a flow, the flows are the pair rows'
        (:meth:`pair_bound`) and the uplink's figure is its rate's."""
        rate = (h.uplink_mbit or 0.0) * self.policy.wan_headroom
        return rate if self.pair_bound(h) else self.one_flow_mbit(h)

    def one_flow_mbit(self, h: HostSpec) -> float:
        """The uplink as one TCP flow: its rate under the headroom or one flow's goodput, the smaller — what a model
        that writes no rows per TaskManager pair counts on (a safe under-estimate with several receivers)."""
        rate = (h.uplink_mbit or 0.0) * self.policy.wan_headroom
        return rate if h.uplink_goodput_mbit is None else min(rate, h.uplink_goodput_mbit)

    @cached_property
    def receiving_taskmanagers(self) -> int:
        """The TaskManagers an edge host's data can reach: the servers' (nothing flows down into an edge host)."""
        return sum(h.taskmanagers for h in self.servers)

    def pair_bound(self, h: HostSpec) -> bool:
        """Does one TCP flow bind each TaskManager pair of ``h``'s uplink, below the uplink's rate, with more than one
        pair? With one receiving TaskManager the pair is the uplink, and :meth:`link_mbit` has its flow."""
        return self.tcp_bound(h) and self.receiving_taskmanagers > 1

    def pair_mbit(self, h: HostSpec, to: HostSpec) -> float:
        """What the connections from ``h``'s TaskManager to ``to``'s carry (one flow each, ``to`` a pool: one per
        member), less what running jobs send over the uplink: they may use this pair."""
        goodput = h.uplink_goodput_mbit if h.uplink_goodput_mbit is not None else math.inf
        return max(0.0, goodput * to.taskmanagers - h.running_total("mbit"))

    def tcp_bound(self, h: HostSpec) -> bool:
        """Does one TCP flow's goodput, not the link's rate, bound what the uplink carries?"""
        return h.uplink_goodput_mbit is not None and h.uplink_goodput_mbit < (h.uplink_mbit or 0.0) * (
            self.policy.wan_headroom
        )

    def uplink_note(self, h: HostSpec) -> str:
        """:meth:`link_bound_note` for the uplink as a whole: "" where its flows are the pairs' (its rate binds it)."""
        return "" if self.pair_bound(h) else self.link_bound_note(h)

    def link_bound_note(self, h: HostSpec) -> str:
        """Why the uplink carries less than its rate, for a shortage's message ("" when its rate bounds it): the
        TCP flow under the link's loss and round trip, and what another congestion control would carry."""
        if not self.tcp_bound(h):
            return ""
        rtt = 2 * h.uplink_delay_ms
        others = []
        for cc in transport.CONGESTION_CONTROLS:
            if cc != h.congestion_control and (h.uplink_mbit or 0.0) > 0:
                path = transport.Path(h.uplink_mbit or 0.0, rtt, h.uplink_loss, cc)
                others.append(f"{cc} {transport.flow_goodput_mbit(path):.3g}")
        return (
            f"; one TCP flow ({h.congestion_control}) carries that at {h.uplink_loss:.2%} loss and a {rtt:g} ms round "
            f"trip — {', '.join(others)} (hosts[].congestion_control)"
        )

    def usable_mbit(self, h: HostSpec) -> float:
        """The uplink's :meth:`link_mbit`, less what jobs already running send over it."""
        return max(0.0, self.link_mbit(h) - h.running_total("mbit"))

    def budget_mbit(self, h: HostSpec, share: float) -> float:
        """A job's uplink budget: ``share`` of the link's :meth:`link_mbit` (what jobs already running send is not
        counted against it — a share is of the link, not of what they leave)."""
        return share * self.link_mbit(h)

    def priority_of(self, job: str) -> int:
        """A job's priority; 0 for a job without one (as the objective ranks it beside jobs that have one)."""
        policy = self.job_policies.get(job)
        return policy.priority or 0 if policy else 0

    @cached_property
    def priority_classes(self) -> tuple[tuple[int, frozenset[str]], ...]:
        """(priority, its jobs), highest first; () when no job has a priority (one class: today's objective). Jobs
        without one are priority 0."""
        if not any(p.priority is not None for p in self.job_policies.values()):
            return ()
        jobs = dict.fromkeys(self.vertex_job.values())
        ranks: dict[int, set[str]] = {}
        for job in jobs:
            ranks.setdefault(self.priority_of(job), set()).add(job)
        if len(ranks) == 1:
            return ()  # every job of one rank: equals, as without priorities
        return tuple((p, frozenset(ranks[p])) for p in sorted(ranks, reverse=True))

    def usable_memory(self, h: HostSpec) -> float:
        return max(0.0, h.memory_mib * self.policy.memory_utilisation_target - h.running_total("memory_mib"))

    # One thread: a subtask is one task thread, so however many cores its host has it can use only one of them. It
    # keeps up with its input on ``h`` only if ``c(s)/σ_h ≤ ρ`` — one core under the utilisation target (the same as
    # ``records_in ≤ λ_v·σ_h·ρ`` of :mod:`.rates`). Every planner asks these, so they agree on what "fits" means.

    @property
    def usable_thread(self) -> float:
        """``ρ``: what one thread may use of one core of any host."""
        return self.policy.cpu_utilisation_target

    def keeps_up(self, s: Subtask, h: HostSpec) -> bool:
        """Can subtask ``s``'s one thread keep up with its input on host ``h``: ``c(s)/σ_h ≤ ρ``."""
        return thread_keeps_up(s.server_cores / (h.thread_speed or h.speed), self.usable_thread)

    def thread_shortfall(self, s: Subtask, h: HostSpec) -> str:
        """The sentence that says ``s`` cannot keep up on ``h`` (used wherever the rule is broken or binds)."""
        return thread_sentence(s.label, h.name, s.cores_on(h), self.usable_thread)


THREAD_EPS = 1e-6  # as evaluate's EPS: a subtask exactly at the target keeps up


def thread_keeps_up(cores_on_host: float, usable: float) -> bool:
    """One thread that needs ``cores_on_host`` of one core of its host keeps up when that is at most ``usable`` (``ρ``)
    — the rule :meth:`PlacementProblem.keeps_up` and the rescale model's instances share."""
    return cores_on_host <= usable + THREAD_EPS


def thread_sentence(label: str, host: str, cores: float, usable: float) -> str:
    """ "Parse (3/3) cannot keep up on rpi3: one thread would need 0.88 of a core, 0.80 usable" — with the digits
    that tell the two figures apart."""
    for d in range(2, 10):
        need, have = f"{cores:.{d}f}", f"{usable:.{d}f}"
        if need != have:
            break
    return f"{label} cannot keep up on {host}: one thread would need {need} of a core, {have} usable"


# ---- building ---------------------------------------------------------------------------------------------------


def _uplink_path(h: Host, link: Link) -> transport.Path:
    """The uplink as TCP sees it: the link's one-way delay each way, its loss, the sending host's algorithm."""
    return transport.Path(
        bandwidth_mbit=link.bandwidth,
        rtt_ms=2 * link.delay,
        loss=link.loss / 100,
        congestion_control=h.congestion_control or transport.DEFAULT_CONGESTION_CONTROL,
    )


@dataclass(frozen=True)
class _UplinkTransport:
    loss: float = 0.0
    goodput_mbit: float | None = None
    loss_wait_ms: float = 0.0
    credit_mbit: float | None = None
    congestion_control: str = transport.DEFAULT_CONGESTION_CONTROL


def _transport(h: Host, link: Link | None, network: transport.FlinkNetwork) -> _UplinkTransport:
    """HostSpec's transport fields for edge host ``h``: no goodput cap where the link carries its rate."""
    if link is None:
        return _UplinkTransport()
    path = _uplink_path(h, link)
    goodput = transport.flow_goodput_mbit(path)
    return _UplinkTransport(
        loss=path.loss,
        goodput_mbit=goodput if goodput < link.bandwidth else None,
        loss_wait_ms=transport.loss_wait_ms(path, goodput),
        credit_mbit=transport.credit_cap_mbit(path.rtt_ms, network) if path.rtt_ms > 0 else None,
        congestion_control=path.congestion_control,
    )


def flink_network(inv: Inventory) -> transport.FlinkNetwork:
    n = inv.flink.network
    return transport.FlinkNetwork(
        buffers_per_channel=n.buffers_per_channel,
        floating_buffers_per_gate=n.floating_buffers_per_gate,
    )


def _hosts(inv: Inventory, profile: JobProfile | None = None) -> tuple[HostSpec, ...]:
    specs = []
    uplinks = {link.from_: link for link in inv.links}  # one pass: inv.uplink() scans the links (fleets: 10 000)
    network = flink_network(inv)
    for h in inv.hosts:
        link = uplinks[h.name] if h.role == "edge" else None
        baseline = _baseline(h, profile)
        tcp = _transport(h, link, network)
        specs.append(
            HostSpec(
                name=h.name,
                address=h.address,
                role=h.role,
                cores=float(h.cores or 0),
                speed=float(h.speed or 1),
                slots=int(h.task_slots or 1),
                memory_mib=h.memory_mib,
                uplink_mbit=link.bandwidth if link else None,
                uplink_delay_ms=link.delay if link else 0.0,
                uplink_to=link.to if link else None,
                uplink_burst_bytes=(link.burst or 0.0) if link else 0.0,
                allow_stateful=bool(h.allow_stateful),
                allow_sinks=bool(h.allow_sinks),
                data_reroutes_on_loss=bool(h.data_reroutes_on_loss),
                netty_cores_per_delivery=deliveries.host_cores_per_delivery(
                    h.role, float(h.speed or 1), h.netty_cores_per_delivery
                ),
                baseline_cores=baseline.cores,
                baseline_basis=baseline.basis,
                uplink_loss=tcp.loss,
                uplink_goodput_mbit=tcp.goodput_mbit,
                uplink_loss_wait_ms=tcp.loss_wait_ms,
                uplink_credit_mbit=tcp.credit_mbit,
                congestion_control=tcp.congestion_control,
            )
        )
    return tuple(specs)


def _baseline(h: Host, profile: JobProfile | None) -> demand.TaskManagerBaseline:
    if profile is None:
        given = h.taskmanager_baseline_cores
        return demand.TaskManagerBaseline(float(given or 0.0), "inventory" if given is not None else "none")
    return demand.baseline_cores(h.name, h.address, float(h.speed or 1), h.taskmanager_baseline_cores, profile)


def _match_vertex(profile: JobProfile, key: str) -> VertexProfile | None:
    for v in profile.vertices:
        if key in (v.name, v.id):
            return v
    return None


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _resolve_pins(
    inv: Inventory,
    profile: JobProfile,
    source: str,
    warnings: list[str],
    other_jobs: frozenset[str] = frozenset(),
) -> tuple[dict[str, list[str]], dict[str, set[str]], dict[str, set[str]]]:
    """Source births, user allow-lists and forbids per vertex id; pins naming no vertex of this job are reported,
    unless they name one of ``other_jobs``' (vertex names and ids of the jobs planned with it)."""
    unmatched: list[str] = []
    births: dict[str, list[str]] = {}
    allow: dict[str, set[str]] = {}
    forbid: dict[str, set[str]] = {}
    is_source = {v.id for v in profile.sources()}
    for section in ("sources", "operators", "forbid"):
        for key, hosts in getattr(inv.pins, section).items():
            v = _match_vertex(profile, key)
            if v is None:
                if key not in other_jobs:
                    unmatched.append(f"pins.{section}.{key}")
                continue
            hosts = _as_list(hosts)
            if section == "sources":
                if v.id not in is_source:
                    raise BadInput(
                        f"{v.name!r} is not a source of job {profile.job.name!r}",
                        source=source,
                        field=f"pins.sources.{key}",
                    )
                if len(hosts) not in (1, v.parallelism):
                    raise BadInput(
                        f"lists {len(hosts)} hosts but {v.name!r} has parallelism {v.parallelism}",
                        source=source,
                        field=f"pins.sources.{key}",
                    )
                births[v.id] = hosts * v.parallelism if len(hosts) == 1 else hosts
            else:
                (allow if section == "operators" else forbid).setdefault(v.id, set()).update(hosts)
    warnings.extend(_unmatched_pin_notes(unmatched, profile, births))
    for vid in allow:  # born or not: an unborn source runs at the server side, a pin cannot move it to an edge host
        if vid in is_source:
            raise BadInput(
                "a source's host is where its data is born: pin it under pins.sources only",
                source=source,
                field=f"pins.operators.{profile.vertex(vid).name}",
            )
    return births, allow, forbid


def _unmatched_pin_notes(unmatched: list[str], profile: JobProfile, births: dict[str, list[str]]) -> list[str]:
    """Notes on pins naming no vertex of this job. A shared inventory pins several jobs' sources (the shipped
    edge-lab.yaml pins all three example jobs'), so an unmatched pin alone is no news; it is when it looks like a typo
    of one of this job's vertices, or when this job has a source left without a birth pin."""
    names = [v.name for v in profile.vertices]
    typos = {
        pin: close[0]
        for pin in unmatched
        if (close := difflib.get_close_matches(pin.split(".", 2)[2], names, n=1, cutoff=0.85))
    }
    notes = [
        f"{pin} names no vertex of job {profile.job.name!r} and is ignored; did you mean {name!r}?"
        for pin, name in typos.items()
    ]
    unborn = [v.name for v in profile.sources() if v.id not in births]
    others = [pin for pin in unmatched if pin not in typos]
    if others and (unborn or any(not p.startswith("pins.sources.") for p in others)):
        notes.append(
            f"{len(others)} pins name no vertex of job {profile.job.name!r} and are ignored: {', '.join(others)}"
            + (f" (sources without a birth pin, run at the server side: {', '.join(unborn)})" if unborn else "")
        )
    return notes


def _path_weights(profile: JobProfile) -> dict[tuple[str, str], float]:
    """Share of source→sink paths through each edge: ``P_in(U)·P_out(V)/P`` (dynamic programming, no enumeration)."""
    g = profile.graph()
    order = [v.id for v in profile.topological_vertices()]
    p_in = {v: 1.0 if g.in_degree(v) == 0 else 0.0 for v in order}
    for v in order:
        for w in g.successors[v]:
            p_in[w] += p_in[v]
    p_out = {v: 1.0 if g.out_degree(v) == 0 else 0.0 for v in order}
    for v in reversed(order):
        for w in g.successors[v]:
            p_out[v] += p_out[w]
    total = sum(p_out[v] for v in order if g.in_degree(v) == 0)
    return {(u, w): p_in[u] * p_out[w] / total for u, w in g.edges}


def _channels(
    profile: JobProfile, weights: Mapping[tuple[str, str], float], options: PlanOptions
) -> tuple[Channel, ...]:
    """Every job edge, its flush cycles corrected by what the profile measured of them (:mod:`.deliveries`)."""
    channels = [_channel(profile, e, weights[(e.source, e.target)], options) for e in profile.edges]
    if not any(s.buffers_in_per_s is not None for v in profile.vertices for s in v.subtasks):
        return tuple(channels)
    at_profile = (
        channels
        if options.rate_scale == 1.0
        else [_channel(profile, e, weights[(e.source, e.target)], PlanOptions()) for e in profile.edges]
    )
    flushed: dict[str, list[float]] = {v.id: [0.0] * v.parallelism for v in profile.vertices}
    full: dict[str, list[float]] = {v.id: [0.0] * v.parallelism for v in profile.vertices}
    for ch in at_profile:
        only_full = replace(ch, delivery_ratio=(0.0,) * ch.n_down)  # the buffers sent full, whatever the flushes
        for j in range(ch.n_down):
            full[ch.target][j] += only_full.received_deliveries(j)
            flushed[ch.target][j] += ch.received_deliveries(j) - only_full.received_deliveries(j)
    ratios = deliveries.delivery_ratios(profile, flushed, full)
    return tuple(ch if ch.target not in ratios else replace(ch, delivery_ratio=ratios[ch.target]) for ch in channels)


def _channel(profile: JobProfile, e: EdgeProfile, path_weight: float, options: PlanOptions) -> Channel:
    """One job edge with what each upstream subtask puts on it: the profile's per-edge figures, or the fan-out rule
    for a profile without them (:func:`placement.profile.format.edge_output`)."""
    out = edge_output(profile, e)
    records, sent = sum(out.records_per_s), sum(out.bytes_per_s)
    return Channel(
        source=e.source,
        target=e.target,
        strategy=e.ship_strategy,
        n_up=profile.vertex(e.source).parallelism,
        n_down=profile.vertex(e.target).parallelism,
        up_out_mbit=tuple(traffic.output_mbit(b, 1.0, options.rate_scale) for b in out.bytes_per_s),
        path_weight=path_weight,
        bytes_per_record=sent / records if records > 0 else 0.0,
        receiver_shares=tuple(e.receiver_shares) if e.receiver_shares else None,
        flushes_per_s=None
        if profile.job.buffer_timeout_ms is None
        else traffic.flushes_per_s(profile.job.buffer_timeout_ms),
        buffer_timeout_ms=DEFAULT_BUFFER_TIMEOUT_MS
        if profile.job.buffer_timeout_ms is None
        else profile.job.buffer_timeout_ms,
    )


def _latency_bounds(policy: Policy, profile: JobProfile, warnings: list[str]) -> dict[tuple[str, str], float]:
    """``policy.max_latency_ms`` per (source, sink) pair of this job. A number bounds every path; a mapping's keys are
    ``"*"`` (every path), a sink (every path into it) or ``"<source> -> <sink>"`` (``→`` too), by name or id; the most
    specific key wins. Keys naming nothing of this job are noted (a shared inventory bounds several jobs)."""
    spec = policy.max_latency_ms
    if spec is None:
        return {}
    sources, sinks = profile.sources(), profile.sinks()
    if not isinstance(spec, dict):
        return {(s.id, t.id): float(spec) for s in sources for t in sinks}

    def find(name: str, among: Iterable[VertexProfile]) -> VertexProfile | None:
        return next((v for v in among if name.strip() in (v.name, v.id)), None)

    default = spec.get("*")
    by_sink: dict[str, float] = {}
    by_pair: dict[tuple[str, str], float] = {}
    unmatched: list[str] = []
    for key, ms in spec.items():
        if key == "*":
            continue
        parts = key.replace("→", "->").split("->")
        if len(parts) == 2 and (s := find(parts[0], sources)) and (t := find(parts[1], sinks)):
            by_pair[(s.id, t.id)] = float(ms)
        elif len(parts) == 1 and (t := find(key, sinks)):
            by_sink[t.id] = float(ms)
        else:
            unmatched.append(f"policy.max_latency_ms.{key}")
    if unmatched:
        warnings.append(
            f"{', '.join(unmatched)} name{'s' if len(unmatched) == 1 else ''} no sink or source -> sink of "
            f"job {profile.job.name!r} and {'is' if len(unmatched) == 1 else 'are'} ignored "
            f"(sinks: {', '.join(repr(t.name) for t in sinks)})"
        )
    out: dict[tuple[str, str], float] = {}
    for s in sources:
        for t in sinks:
            bound = by_pair.get((s.id, t.id), by_sink.get(t.id, default))
            if bound is not None:
                out[(s.id, t.id)] = bound
    return out


def build_problem(
    inv: Inventory,
    profile: JobProfile,
    options: PlanOptions = PlanOptions(),
    *,
    inventory_source: str = "inventory",
    policy: Policy | None = None,
    other_jobs: frozenset[str] = frozenset(),
) -> PlacementProblem:
    """Resolve inventory + profile into a :class:`PlacementProblem` (pure; raises BadInput on inconsistent pins).
    ``other_jobs``: the vertex names and ids of jobs planned together with this one, whose pins are no typo of it."""
    warnings: list[str] = []
    policy = policy or inv.policy
    hosts = _hosts(inv, profile)
    host_by_name = {h.name: h for h in hosts}
    births, allow, forbid = _resolve_pins(inv, profile, inventory_source, warnings, other_jobs)
    latency_bounds = _latency_bounds(policy, profile, warnings)
    input_warnings = tuple(warnings)  # so far only the pins' and the latency bounds' notes
    g = profile.graph()

    weights = _path_weights(profile)
    channels = _channels(profile, weights, options)
    emitted: dict[str, list[float]] = {v.id: [0.0] * v.parallelism for v in profile.vertices}
    for ch in channels:  # every copy a subtask puts on any of its edges
        for i in range(ch.n_up):
            emitted[ch.source][i] += ch.up_out_mbit[i] * copies(ch.strategy, ch.n_down)

    subtasks: list[Subtask] = []
    for v in profile.topological_vertices():
        is_source, is_sink = g.in_degree(v.id) == 0, g.out_degree(v.id) == 0
        for sp in v.subtasks:
            cpu = demand.server_cores(v, sp, options.rate_scale)
            out = emitted[v.id][sp.index]
            birth = births[v.id][sp.index] if v.id in births else None
            if birth is not None and birth in forbid.get(v.id, set()):
                raise BadInput(
                    f"source {v.name!r} is both born on and forbidden on {birth!r}",
                    source=inventory_source,
                    field=f"pins.forbid.{v.name}",
                )
            subtasks.append(
                Subtask(
                    vertex_id=v.id,
                    vertex_name=v.name,
                    index=sp.index,
                    parallelism=v.parallelism,
                    stateful=v.stateful,
                    is_source=is_source,
                    is_sink=is_sink,
                    out_mbit=out,
                    records_in_per_s=sp.records_in_per_s * options.rate_scale,
                    records_out_per_s=sp.records_out_per_s * options.rate_scale,
                    server_cores=cpu.server_cores,
                    cpu_estimated=cpu.estimated,
                    memory_mib=demand.memory_mib(v, policy.memory_per_subtask),
                    birth=birth,
                    pinned_to=frozenset(allow[v.id]) if v.id in allow else None,
                    forbidden=frozenset(forbid.get(v.id, ())),
                    checkpoint_mbit=demand.checkpoint_mbit(v, profile.job.checkpoint_interval_ms),
                )
            )
            if birth is not None and host_by_name[birth].role != "edge":
                warnings.append(f"source {v.name!r} subtask {sp.index} is born on server {birth!r}")
    leaving = deliveries.leaving_deliveries(channels, {s.key: s.birth for s in subtasks if s.birth is not None})
    hosts = tuple(replace(h, netty_cores=h.netty_cores_per_delivery * leaving.get(h.name, 0.0)) for h in hosts)
    return PlacementProblem(
        hosts=hosts,
        subtasks=tuple(subtasks),
        channels=channels,
        vertex_order=tuple(v.id for v in profile.topological_vertices()),
        vertex_names={v.id: v.name for v in profile.vertices},
        policy=policy,
        slot_sharing=inv.flink.slot_sharing,
        rate_scale=options.rate_scale,
        warnings=tuple(warnings),
        input_warnings=input_warnings,
        whole_vertices=vanilla_whole_vertices(profile) if options.placement_mode == "vanilla" else frozenset(),
        latency_bounds=latency_bounds,
    )


def vanilla_whole_vertices(profile: JobProfile) -> frozenset[str]:
    """The vertices vanilla placement cannot split over hosts.

    Vanilla Flink pins a whole operator to one slot sharing group; the lab jobs' Placement helper splits only a
    FORWARD chain that starts at a source, into one copy per lane. So a vertex may be split when it is a source, or
    its only input is a FORWARD edge from a vertex that may be split; every other vertex runs on one host. Custom mode
    (the scheduler extension) has no such limit."""
    inputs: dict[str, list[EdgeProfile]] = {v.id: [] for v in profile.vertices}
    for e in profile.edges:
        inputs[e.target].append(e)
    splittable: set[str] = set()
    for v in profile.topological_vertices():
        ins = inputs[v.id]
        if not ins or (len(ins) == 1 and ins[0].ship_strategy is ShipStrategy.FORWARD and ins[0].source in splittable):
            splittable.add(v.id)
    return frozenset(v.id for v in profile.vertices if v.id not in splittable)
