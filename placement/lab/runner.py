"""The thin executor of a :class:`~placement.lab.topology.LabPlan`: ``up``, ``down``, ``status``.

``up`` writes ``<work_dir>/lab.json`` *before* it creates anything (every namespace, interface and cgroup it is about
to make), then the pids once the JVMs run; ``down`` removes what that file lists and then scans for leftovers by
prefix (namespaces ``pl-lab-*``, interfaces ``pllab*``, cgroups ``/sys/fs/cgroup/cpu/pl-lab-*``, and every process
inside those namespaces/cgroups -- ``up`` starts the JobManager and server TaskManager in ``pl-lab-server``, a cgroup
without a quota, so they are found whatever work dir they ran from -- or whose Java command line names the work dir;
the delay lines by their ``--label pl-lab-*`` and their iptables rules by comment, :mod:`placement.lab.wan`), so a lab
whose launcher was killed with ``kill -9`` half-way is still removed completely.

``up --flink-version`` picks the Flink release (default: the inventory's ``flink.version`` pin, else this machine's own;
another one is fetched once into the cache); the lab state and the lab inventory record it. ``up --mode custom`` (the
default) runs stock Flink with the scheduler extension in the lab's own Flink home
(:mod:`placement.lab.home`); ``--mode vanilla`` runs stock Flink without it (jobs place themselves with the Placement
helper). Either way every edge namespace gets an sshd (:mod:`placement.lab.sshd`) so ``placement apply`` reaches the
lab's hosts over SSH with verified host keys, like real ones; the lab inventory says which mode runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from placement.errors import BadInput, PlacementError
from placement.flink.distribution import flink_home_for, release_for
from placement.flink.home import FlinkHome, find_flink_home
from placement.flink.rest import FlinkRest
from placement.flink.versions import version_problem
from placement.inventory import Inventory, load_inventory
from placement.inventory.wan_profiles import WanProfile
from placement.lab import congestion, stopping, wan
from placement.lab import sshd as lab_sshd
from placement.lab import topology as topo
from placement.lab.cores import create_cgroup
from placement.lab.flink import start_cluster, stop_from_state
from placement.lab.home import make_lab_home, scheduler_dir
from placement.netem.tc import apply_commands
from placement.netns import (
    VethPair,
    create_namespace,
    create_veth,
    list_namespaces,
    netns_available,
    ns_exec,
    run,
)
from placement.remote import LocalExecutor
from placement.scheduler import (
    TASKMANAGERS_FILENAME,
    extension_active,
    render_taskmanagers,
)

DEFAULT_WORK_DIR = Path("/tmp/placement-lab")
STATE_FILE = "lab.json"
LAB_INVENTORY = "lab-inventory.yaml"


class LabUnavailable(PlacementError):
    """No root, no namespaces or no cgroup v1 cpu controller here."""


def check_host() -> None:
    reason = netns_available()
    if reason:
        raise LabUnavailable(f"placement lab needs root and network namespaces: {reason}")
    if not (topo.CGROUP_ROOT / "cpu.cfs_quota_us").is_file():
        raise LabUnavailable(f"placement lab needs the cgroup v1 cpu controller at {topo.CGROUP_ROOT}")
    reason = lab_sshd.sshd_unavailable()
    if reason:
        raise LabUnavailable(f"placement lab: {reason}")


def state_path(work_dir: Path) -> Path:
    return Path(work_dir) / STATE_FILE


def read_state(work_dir: Path) -> dict | None:
    path = state_path(work_dir)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError:
        return {}


def _write_state(work_dir: Path, state: dict) -> None:
    path = state_path(work_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, default=str))
    os.replace(tmp, path)


def _plan_state(plan: topo.LabPlan, inventory_path: str) -> dict:
    return {
        "status": "starting",
        "inventory": str(Path(inventory_path).resolve()),
        "work_dir": str(plan.work_dir),
        "launcher_pid": os.getpid(),
        "cpu_scale": plan.cpu_scale,
        "notes": list(plan.notes),
        "hosts": [
            {
                "name": h.name,
                "role": h.role,
                "address": h.address,
                "slots": h.slots,
                "namespace": h.namespace,
                "host_if": h.host_if,
                "ns_if": h.ns_if,
                "host_addr": h.host_addr,
                "cgroup": str(h.cpu.cgroup) if h.cpu else None,
                "cpu_quota_us": h.cpu.quota_us if h.cpu else None,
                "cpu_period_us": h.cpu.period_us if h.cpu else None,
                "rate_mbit": h.shapes[0].rate_mbit if h.shapes else None,
                "not_emulated": list(h.not_emulated),
                "emulation": h.emulation,
                "profile": h.profile,
                "wan": asdict(h.wan) if h.role == "edge" else None,
                **_queues(h),
                "speed": h.effective_speed,  # a host core is worth this many cores here (lab measure: host cores)
            }
            for h in plan.hosts
        ],
        "server_if": topo.SERVER_IF,
    }


def _queues(h: topo.LabHost) -> dict[str, int]:
    if h.emulation != topo.DELAY_LINE:
        return {}
    return {"uplink_queue": wan.uplink_rule(h).queue, "downlink_queue": wan.downlink_rule(h).queue}


# ---- up ------------------------------------------------------------------------------------------------------------


def _make_server_side() -> None:
    run(["ip", "link", "add", topo.SERVER_IF, "type", "veth", "peer", "name", topo.SERVER_PEER_IF])
    run(["ip", "addr", "add", f"{topo.SERVER_ADDRESS}/32", "dev", topo.SERVER_IF])
    run(["ip", "link", "set", topo.SERVER_PEER_IF, "up"])
    run(["ip", "link", "set", topo.SERVER_IF, "up"])


def _make_edge(h: topo.LabHost) -> None:
    assert h.namespace and h.host_if and h.ns_if and h.host_addr and h.cpu
    create_namespace(h.namespace)
    create_veth(VethPair(ns=h.namespace, host_if=h.host_if, ns_if=h.ns_if, host_addr=h.host_addr, ns_addr=h.address))
    run(ns_exec(h.namespace, ["ip", "route", "add", f"{topo.SERVER_ADDRESS}/32", "via", h.host_addr, "dev", h.ns_if]))
    executor = LocalExecutor(h.name, netns=h.namespace)
    for argv in apply_commands(h.ns_if, list(h.shapes), with_netem=h.emulation == topo.NETEM):
        executor.run(argv)
    create_cgroup(h.cpu)


def _emulate_links(plan: topo.LabPlan) -> dict[str, int]:
    """Delay, jitter and loss on every edge's link that has them (:mod:`placement.lab.wan`); the delay lines' pids."""
    pids: dict[str, int] = {}
    for h in plan.edges:
        pids |= wan.start_link(h, plan.work_dir / "delay-lines")
    return pids


def _join_cgroup(cgroup: Path) -> None:
    """Move this process into ``cgroup``; the JVMs started afterwards inherit it (edge TMs move on to their own)."""
    (cgroup / "cgroup.procs").write_text(str(os.getpid()))


def _leave_lab_cgroup() -> None:
    with contextlib.suppress(OSError):
        own = Path(f"/proc/{os.getpid()}/cgroup").read_text()
        if f":/{topo.NS_PREFIX}" in own:
            _join_cgroup(topo.CGROUP_ROOT)


def healthy(state: dict | None) -> bool:
    """The recorded lab is up: REST answers and every host's TaskManager is registered."""
    if not state or state.get("status") != "up":
        return False
    try:
        ids = {tm.id for tm in FlinkRest(state["rest_url"], timeout=5).taskmanagers()}
    except PlacementError:
        return False
    return {h["name"] for h in state["hosts"]} <= ids


def _same_links(state: dict, plan: topo.LabPlan) -> bool:
    """The lab that is up emulates the links ``plan`` asks for (a new ``--wan-profile`` restarts it)."""
    recorded = {h["name"]: (h.get("rate_mbit"), h.get("wan"), h.get("profile")) for h in state.get("hosts", [])}
    wanted = {h.name: (h.rate_mbit, asdict(h.wan), h.profile) for h in plan.edges}
    return all(recorded.get(name) == figures for name, figures in wanted.items())


@dataclass
class UpResult:
    state: dict
    already_up: bool
    restarted_for_mode: str | None = None  # the mode of a lab that was up and was replaced
    restarted_for_version: str | None = None  # the Flink version of a lab that was up and was replaced


def lab_flink_version(inv: Inventory, inventory_path: str, flink_version: str | None) -> tuple[str | None, str]:
    """The Flink release the lab runs and where that was said: ``flink_version`` (``--flink-version``), else the
    inventory's ``flink.version`` pin, else (None) this machine's own Flink. A release line (``1.20``) means its newest
    release (:func:`placement.flink.distribution.release_for`); an unsupported version is bad input (one line)."""
    if flink_version is None:
        return inv.flink.version, f"{inventory_path}: flink.version"  # validated by the inventory's loader
    problem = version_problem(flink_version)  # release_for says the same, but as a PlacementError (exit 1): bad input
    if problem:
        raise BadInput(problem, field="--flink-version")
    return release_for(flink_version), "--flink-version"  # a line (1.20): its newest release


def lab_flink_home(version: str | None, where: str) -> FlinkHome:
    """This machine's own Flink (the pyflink wheel or $FLINK_HOME) when ``version`` is None or that release, else
    the release fetched once into the cache (:func:`placement.flink.distribution.flink_home_for`)."""
    return find_flink_home() if version is None else flink_home_for(version, where=where)


def _start_sshds(plan: topo.LabPlan) -> tuple[Path, Path, dict[str, int]]:
    """An sshd in every edge namespace (the lab's key, host keys verified via the known_hosts it writes)."""
    key = lab_sshd.client_key(plan.work_dir)
    lines, pids = [], {}
    for h in plan.edges:
        assert h.namespace is not None
        pid, line = lab_sshd.start_sshd(plan.work_dir, h.name, h.namespace, h.address, key)
        pids[f"sshd {h.name}"] = pid
        lines.append(line)
    return key, lab_sshd.write_known_hosts(plan.work_dir, lines), pids


def _write_taskmanager_table(rest: FlinkRest, home: Path, plan: topo.LabPlan) -> None:
    """``taskmanagers.cfg`` in the scheduler dir (apply rewrites it with every schedulercfg; written here too so a
    hand-written schedulercfg works at once)."""
    table = render_taskmanagers(rest.taskmanagers(), {h.name: [h.address] for h in plan.hosts})
    target = scheduler_dir(home) / TASKMANAGERS_FILENAME
    tmp = target.with_suffix(".tmp")
    tmp.write_text(table)
    os.replace(tmp, target)


def up(
    inventory_path: str,
    work_dir: Path = DEFAULT_WORK_DIR,
    *,
    timeout: float = 300.0,
    mode: topo.Mode = "custom",
    flink_version: str | None = None,
    profiles: Mapping[str, WanProfile] | None = None,
) -> UpResult:
    """Start the lab in ``mode`` on Flink ``flink_version`` (:func:`lab_flink_home`), or find it already up so.
    ``profiles`` (edge host -> WAN profile) replace those links' figures. Anything made is removed again when starting
    fails; a lab up in the other mode or on another version is taken down and started again."""
    inv: Inventory = load_inventory(inventory_path)
    topo.plan_lab(inv, Path(work_dir).resolve(), source=inventory_path, profiles=profiles)  # bad input before probing
    version, where = lab_flink_version(inv, inventory_path, flink_version)
    check_host()
    congestion.check_available(inv, inventory_path)
    plan = topo.plan_lab(inv, Path(work_dir).resolve(), source=inventory_path, emulators=wan.probe(), profiles=profiles)
    source = lab_flink_home(version, where)  # fetched (once) before anything is made
    existing = read_state(work_dir)
    replaced = replaced_version = None
    if healthy(existing):
        assert existing is not None
        was_mode, was_version = existing.get("mode", "vanilla"), existing.get("flink_version")
        same_cluster = was_mode == mode and was_version in (None, source.version)  # None: a lab before versions
        if same_cluster and _same_links(existing, plan):
            return UpResult(existing, already_up=True)
        replaced = was_mode if was_mode != mode else None
        replaced_version = was_version if was_version != source.version else None
    down(work_dir)  # a half-dead lab of an earlier run, leftovers of a crash, a lab in the other mode or version

    plan.work_dir.mkdir(parents=True, exist_ok=True)
    state = _plan_state(plan, inventory_path)
    state["mode"] = mode
    state["flink_version"] = source.version
    _write_state(plan.work_dir, state)
    try:
        topo.SERVER_CGROUP.mkdir(exist_ok=True)  # no quota: only so that `down` finds the server-side JVMs by name
        _join_cgroup(topo.SERVER_CGROUP)
        _make_server_side()
        for h in plan.edges:
            _make_edge(h)
        congestion.put_into_effect(plan, congestion.wanted(inv))  # before any TaskManager opens a connection
        line_pids = _emulate_links(plan)
        state["processes"] = dict(line_pids)  # found by `down` if what follows fails
        _write_state(plan.work_dir, state)
        key, known_hosts, sshd_pids = _start_sshds(plan)
        from placement.lab.jobs import build_jobs_jar

        jar = build_jobs_jar(home=source)
        home = make_lab_home(plan.work_dir, source, with_extension=mode == "custom")
        cluster = start_cluster(
            topo.cluster_spec(plan, flink_home=home.path, mode=mode), timeout=timeout, die_with_parent=False
        )
        rest = FlinkRest(cluster.rest_url)
        if mode == "custom":
            _write_taskmanager_table(rest, home.path, plan)
            if extension_active(rest) is not True:
                raise PlacementError(
                    f"the lab's JobManager does not load the scheduler extension from {home.lib} "
                    f"(GET {cluster.rest_url}/jobmanager/environment: flink-dist comes first)"
                )
        state.update(
            status="up",
            rest_url=cluster.rest_url,
            jar=str(jar.path),
            flink_home=str(home.path),
            processes={p.name: p.pid for p in cluster.processes} | sshd_pids | line_pids,
        )
        access = topo.LabAccess(
            rest_url=cluster.rest_url,
            mode=mode,
            flink_home=home.path,
            ssh_user=lab_sshd.SSH_USER,
            ssh_key=key,
            known_hosts=known_hosts,
            flink_version=source.version,
        )
        lab_inv = topo.lab_inventory(inv, plan, access)
        lab_inv.setdefault("job", {})["jar"] = str(jar.path)
        (plan.work_dir / LAB_INVENTORY).write_text(
            f"# written by `placement lab up` ({mode} mode): what runs now (real addresses, REST URL, SSH key)\n"
            + yaml.safe_dump(lab_inv, sort_keys=False)
        )
        state["lab_inventory"] = str(plan.work_dir / LAB_INVENTORY)
        _write_state(plan.work_dir, state)
    except BaseException:
        down(plan.work_dir)
        raise
    finally:
        _leave_lab_cgroup()
    return UpResult(state, already_up=False, restarted_for_mode=replaced, restarted_for_version=replaced_version)


# ---- down ----------------------------------------------------------------------------------------------------------


def _kill_pids(pids: set[int], timeout: float = 15.0) -> None:
    stopping.stop(pids, timeout=timeout)


def lab_namespaces() -> list[str]:
    return [ns for ns in list_namespaces() if ns.startswith(topo.NS_PREFIX)]


def lab_links() -> list[str]:
    out = run(["ip", "-o", "link", "show"], check=False).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(": ")
        if len(parts) > 1:
            name = parts[1].split("@")[0]
            if name.startswith(topo.IF_PREFIX):
                names.append(name)
    return names


def lab_cgroups() -> list[Path]:
    """The lab's cgroups, nested ones (per-thread caps, :mod:`placement.lab.cores`) before their parent: the order
    ``rmdir`` needs."""
    if not topo.CGROUP_ROOT.is_dir():
        return []
    tops = [p for p in topo.CGROUP_ROOT.iterdir() if p.is_dir() and p.name.startswith(topo.NS_PREFIX)]
    nested = [Path(d) for top in tops for d, _, _ in os.walk(top, topdown=False)]
    return sorted(nested, key=lambda p: (-len(p.parts), p))


def lab_pids(work_dir: Path | None = None) -> set[int]:
    """Processes of a lab: inside its namespaces or cgroups, or with the work dir on their command line."""
    pids: set[int] = set()
    for ns in lab_namespaces():
        out = run(["ip", "netns", "pids", ns], check=False).stdout
        pids |= {int(p) for p in out.split() if p.isdigit()}
    for cg in lab_cgroups():
        with contextlib.suppress(OSError):
            pids |= {int(p) for p in (cg / "cgroup.procs").read_text().split()}
    if work_dir is not None:
        needle = str(Path(work_dir).resolve()).encode()
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                cmd = (proc / "cmdline").read_bytes()
                if needle in cmd and b"java" in cmd:
                    pids.add(int(proc.name))
    pids |= wan.lab_line_pids()
    pids.discard(os.getpid())
    return pids


def leftovers(work_dir: Path | None = DEFAULT_WORK_DIR) -> dict[str, list[str]]:
    """What a lab left on this machine (empty lists = clean)."""
    return {
        "namespaces": lab_namespaces(),
        "links": lab_links(),
        "cgroups": [str(p) for p in lab_cgroups()],
        "pids": sorted(str(p) for p in lab_pids(work_dir)),
        "iptables rules": wan.lab_rules(),
    }


def down(work_dir: Path = DEFAULT_WORK_DIR) -> dict[str, list[str]]:
    """Remove the lab of ``work_dir`` and every leftover of any lab by prefix; returns what it removed."""
    work_dir = Path(work_dir).resolve()
    _leave_lab_cgroup()
    removed = leftovers(work_dir)
    stop_from_state(work_dir / "flink", timeout=15)
    wan.clear_rules()  # first: a link whose line has stopped would drop its packets
    _kill_pids(lab_pids(work_dir))
    for ns in lab_namespaces():
        run(["ip", "netns", "delete", ns], check=False)
    for link in lab_links():
        run(["ip", "link", "delete", link], check=False)
    for cg in lab_cgroups():
        for _ in range(50):  # rmdir fails while a (dying) task is still in it
            try:
                cg.rmdir()
                break
            except OSError:
                _kill_pids({int(p) for p in (cg / "cgroup.procs").read_text().split() if p.strip()}, timeout=2)
                time.sleep(0.2)
    state_path(work_dir).unlink(missing_ok=True)
    left = leftovers(work_dir)
    if any(left.values()):
        raise PlacementError(f"lab down could not remove: {json.dumps({k: v for k, v in left.items() if v})}")
    return removed


# ---- status --------------------------------------------------------------------------------------------------------


def status(work_dir: Path = DEFAULT_WORK_DIR) -> dict:
    """Hosts, registered TaskManagers, shaping and throttling of the lab (from its state file and the kernel)."""
    state = read_state(work_dir)
    if state is None:
        return {"up": False, "work_dir": str(work_dir), "leftovers": leftovers(work_dir)}
    registered: dict[str, str] = {}
    rest_error = None
    if state.get("rest_url"):
        try:
            registered = {tm.id: tm.path for tm in FlinkRest(state["rest_url"], timeout=5).taskmanagers()}
        except PlacementError as exc:
            rest_error = str(exc)
    hosts = []
    for h in state["hosts"]:
        row = dict(h, registered=h["name"] in registered)
        if h.get("namespace"):
            row["link"] = wan.link_status(h, state.get("processes") or {})
            row["qdisc"] = run(
                ns_exec(h["namespace"], ["tc", "qdisc", "show", "dev", h["ns_if"]]), check=False
            ).stdout.strip()
            row["classes"] = run(
                ns_exec(h["namespace"], ["tc", "class", "show", "dev", h["ns_if"]]), check=False
            ).stdout.strip()
            row["tx_bytes"] = veth_tx_bytes(h["namespace"], h["ns_if"])
        row["congestion_control"] = congestion.host_status(h, state["hosts"])
        if h.get("cgroup"):
            with contextlib.suppress(OSError):
                stat = dict(line.split() for line in (Path(h["cgroup"]) / "cpu.stat").read_text().splitlines())
                row["throttled_periods"] = int(stat.get("nr_throttled", 0))
                row["throttled_s"] = int(stat.get("throttled_time", 0)) / 1e9
        hosts.append(row)
    return {
        "up": healthy(state),
        "status": state.get("status"),
        "mode": state.get("mode", "vanilla"),
        "flink_version": state.get("flink_version"),
        "flink_home": state.get("flink_home"),
        "work_dir": str(work_dir),
        "rest_url": state.get("rest_url"),
        "rest_error": rest_error,
        "cpu_scale": state.get("cpu_scale"),
        "notes": state.get("notes", []),
        "lab_inventory": state.get("lab_inventory"),
        "hosts": hosts,
    }


def veth_tx_bytes(namespace: str, interface: str) -> int | None:
    proc = run(ns_exec(namespace, ["cat", f"/sys/class/net/{interface}/statistics/tx_bytes"]), check=False)
    return int(proc.stdout) if proc.returncode == 0 and proc.stdout.strip().isdigit() else None
