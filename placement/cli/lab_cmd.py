"""``placement lab``: a real Flink edge lab on this machine (namespaces, shaped veths, cgroups)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from placement.cli.params import echo_json, json_option, quiet_option

# what a reader of --json checks before it relies on the keys
LAB_STATUS_FORMAT = "placement.lab-status/v1"
LAB_MEASURE_FORMAT = "placement.lab-measure/v1"

WORKDIR = click.option(
    "--work-dir",
    "work_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="/tmp/placement-lab",
    show_default=True,
    help="state, logs and the lab inventory",
)
# `--workdir`, the old spelling, still works (scripts written for it) without a second entry in --help: click
# normalises option names through this before it matches them
OLD_SPELLINGS = {"workdir": "work-dir"}


def _console() -> Console:
    return Console(width=None if sys.stdout.isatty() else 140)


@click.group(context_settings={"token_normalize_func": lambda name: OLD_SPELLINGS.get(name, name)})
def lab() -> None:
    """Run the whole chain for real on one machine: JobManager and server TaskManager in the root namespace, one
    TaskManager per edge host in its own network namespace behind an htb-shaped veth, CPU-throttled by a cgroup."""


@lab.command("up")
@click.option(
    "--inventory",
    "inventory_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="inventory with one server and edge hosts (lab.yaml of `placement examples`)",
)
@WORKDIR
@click.option("--timeout", type=float, default=300.0, show_default=True, help="seconds to wait for the TaskManagers")
@click.option(
    "--mode",
    type=click.Choice(["custom", "vanilla"]),
    default="custom",
    show_default=True,
    help="custom: stock Flink + the scheduler extension, jobs placed unmodified by `placement apply`; "
    "vanilla: stock Flink only, jobs place themselves with the Placement helper (--placement)",
)
@click.option(
    "--flink-version",
    "flink_version",
    metavar="X.Y[.Z]",
    help="the Flink release to run (1.19.x to 2.3.x; a line such as 1.20: its newest release), fetched once "
    "into the cache with pip; default: the inventory's flink.version, else this machine's own Flink",
)
@click.option(
    "--wan-profile",
    "wan_profiles",
    multiple=True,
    metavar="[HOST=]PROFILE",
    help="emulate a WAN profile by name (lte, 3g, satellite, ...: `placement examples` lists them) instead of the "
    "inventory's link figures: PROFILE for every edge host, HOST=PROFILE for one (repeatable; a host's own wins)",
)
@quiet_option("no notes or emulation lines: errors and the one-line result only")
def up_cmd(
    inventory_path: str,
    work_dir: Path,
    timeout: float,
    mode: str,
    flink_version: str | None,
    wan_profiles: tuple[str, ...],
    quiet: bool,
) -> None:
    """Start the lab (idempotent: a lab that is up already in this mode, Flink version and links is left as it is)."""
    from placement.errors import BadInput
    from placement.lab.runner import up

    if not Path(inventory_path).is_file():
        raise BadInput("no such file", source=inventory_path, field="--inventory")
    profiles = _wan_profiles(inventory_path, wan_profiles)
    result = up(
        inventory_path,
        work_dir,
        timeout=timeout,
        mode=mode,  # type: ignore[arg-type]
        flink_version=flink_version,
        profiles=profiles,
    )
    state = result.state
    version = f", Flink {state['flink_version']}" if state.get("flink_version") else ""
    said = ("lab already up" if result.already_up else "lab up") + f" ({state.get('mode', 'vanilla')} mode): "
    said += f"REST {state['rest_url']}, lab inventory {state.get('lab_inventory')}{version}"
    if quiet:
        click.echo(said)
        return
    if result.restarted_for_mode:
        click.echo(f"note: the lab was up in {result.restarted_for_mode} mode; restarted in {mode} mode")
    if result.restarted_for_version:
        click.echo(
            f"note: the lab was up on Flink {result.restarted_for_version}; restarted on {state.get('flink_version')}"
        )
    click.echo(said)
    for h in state.get("hosts", []):
        if h.get("emulation") not in (None, "rate only"):
            row = {"profile": h.get("profile"), "link": {"emulation": h["emulation"], "wan": h.get("wan")}}
            click.echo(f"{h['name']}: {_emulation(row)}")
    for note in state.get("notes", []):
        click.echo(f"note: {note}")


def _wan_profiles(inventory_path: str, values: tuple[str, ...]) -> dict:
    """``--wan-profile`` values -> edge host -> its loaded WAN profile (one-line errors for unknown names)."""
    if not values:
        return {}
    from placement.inventory import load_inventory
    from placement.inventory.wan_profiles import load_profile
    from placement.lab.topology import wan_profile_choices

    edges = [h.name for h in load_inventory(inventory_path).edges]
    chosen = wan_profile_choices(values, edges)
    return {host: load_profile(name, field="--wan-profile") for host, name in chosen.items()}


def _emulation(h: dict) -> str:
    """The status table's cell for a link's delay, jitter and loss: which emulation runs, its figures, its health."""
    link = h.get("link") or {}
    kind = link.get("emulation", "rate only")
    w = link.get("wan") or {}
    figures = ", ".join(
        f"{label} {w[key]:g}{unit}"
        for key, label, unit in (
            ("delay_ms", "delay", " ms"),
            ("jitter_ms", "±", " ms"),
            ("loss_pct", "loss", " %"),
        )
        if w.get(key)
    )
    text = kind + (f": {figures}" if figures and kind != "rate only" else "")
    if h.get("profile"):
        text += f" (profile {h['profile']})"
    down = [d for d in ("uplink", "downlink") if d in link and not link[d]["running"]]
    if down:
        text += f" [red](line down: {', '.join(down)})[/]"
    return text


@lab.command("down")
@WORKDIR
@quiet_option("errors and the one-line result only (it prints no more)")
def down_cmd(work_dir: Path, quiet: bool) -> None:
    """Stop the JVMs and delay lines and remove every namespace, veth, cgroup and iptables rule of the lab (also
    leftovers of a crashed run)."""
    from placement.lab.runner import check_host, down

    check_host()
    removed = down(work_dir)
    what = ", ".join(f"{len(v)} {k}" for k, v in removed.items() if v) or "nothing left over"
    click.echo(f"lab down: removed {what}")


@lab.command("status")
@WORKDIR
@json_option("the status as JSON on stdout instead of tables")
@quiet_option("no table or notes: the one-line status (or the --json document) only; the exit code as without")
def status_cmd(work_dir: Path, as_json: bool, quiet: bool) -> None:
    """Hosts, TaskManagers registered, shaping and throttling."""
    from placement.lab.runner import status

    st = status(work_dir)
    if as_json:
        echo_json({"format": LAB_STATUS_FORMAT, **st}, default=str)
        return
    if st.get("status") is None:
        left = {k: v for k, v in st["leftovers"].items() if v}
        click.echo(f"no lab in {work_dir}" + (f"; leftovers: {left} (run `placement lab down`)" if left else ""))
        sys.exit(1)
    console = _console()
    version = f", Flink {st['flink_version']}" if st.get("flink_version") else ""
    console.print(
        f"lab {'[green]up[/]' if st['up'] else '[red]not healthy[/]'} ({st['status']}, {st['mode']} mode{version}), "
        f"REST {st['rest_url']}" + (f" — {st['rest_error']}" if st.get("rest_error") else "")
    )
    if quiet:
        sys.exit(0 if st["up"] else 1)
    table = Table()
    cols = ("host", "role", "address", "namespace", "TM", "uplink", "delay/jitter/loss", "not emulated", "TCP")
    for col in (*cols, "CPU quota", "throttled"):
        table.add_column(col)
    for h in st["hosts"]:
        quota = f"{h['cpu_quota_us'] / h['cpu_period_us']:.2f} cores" if h.get("cpu_quota_us") else "-"
        throttled = (
            f"{h.get('throttled_periods', 0)} periods, {h.get('throttled_s', 0):.1f}s" if h.get("cgroup") else "-"
        )
        shaped = f"htb {h['rate_mbit']:g} Mbit/s on {h['ns_if']}" if h.get("rate_mbit") else "-"
        if h.get("qdisc") is not None and "htb" not in (h.get("qdisc") or ""):
            shaped += " [red](qdisc missing)[/]"
        table.add_row(
            h["name"],
            h["role"],
            h["address"],
            h.get("namespace") or "(root)",
            "registered" if h["registered"] else "[red]missing[/]",
            shaped,
            _emulation(h) if h.get("namespace") else "-",
            ", ".join(h.get("not_emulated") or []) or "-",
            h.get("congestion_control") or "(default)",
            quota,
            throttled,
        )
    console.print(table)
    for note in st.get("notes", []):
        console.print(f"note: {note}")
    if not st["up"]:
        sys.exit(1)


def _latency_table(job) -> Table:
    """One row per sink and kind: markers per source vertex, then the sink's own event-time histogram."""
    t = Table(title=f"{job.name}: latency at the sinks (ms; p50 median of subtasks, p99 worst subtask)")
    for col in ("sink", "kind", "from", "p50", "p99", "histograms"):
        t.add_column(col, justify="left" if col in ("sink", "kind", "from") else "right")
    for lat in job.latency:
        t.add_row(
            lat.sink, lat.kind, lat.source or "(freshest record)", _ms(lat.p50_ms), _ms(lat.p99_ms), str(lat.histograms)
        )
    return t


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f}"  # None: no histogram had values yet (markers arrive after an interval)


@lab.command("measure")
@WORKDIR
@click.option(
    "--duration",
    type=click.FloatRange(min=0.5),
    default=10.0,
    show_default=True,
    help="seconds of the veth byte window",
)
@json_option("JSON on stdout instead of tables")
@quiet_option("no tables: one line of each uplink's Mbit/s (or the --json document) only")
def measure_cmd(work_dir: Path, duration: float, as_json: bool, quiet: bool) -> None:
    """WAN Mbit/s per uplink (veth counters), throughput, backpressure per vertex and where subtasks run, and the
    latency at each sink (Flink's latency markers per source, and the lab jobs' event-time histogram)."""
    from placement.lab.measure import measure

    m = measure(work_dir, duration)
    if as_json:
        echo_json({"format": LAB_MEASURE_FORMAT, **m.to_json()})
        return
    if quiet:
        uplinks = ", ".join(f"{lk.host} {lk.data_mbit:.3f}" for lk in m.links) or "no uplink"
        click.echo(f"WAN over {m.seconds:.1f} s, job data Mbit/s: {uplinks}")
        return
    console = _console()
    links = Table(title=f"WAN over {m.seconds:.1f} s (namespace-side veth tx)")
    for col in ("link", "interface", "bytes", "Mbit/s (wire)", "Mbit/s (job data)", "shaped at", "utilisation"):
        links.add_column(col, justify="left" if col in ("link", "interface") else "right")
    for lk in m.links:
        links.add_row(
            f"{lk.host} -> server",
            lk.interface,
            f"{lk.bytes:,}",
            f"{lk.mbit:.3f}",
            f"{lk.data_mbit:.3f}",
            f"{lk.rate_mbit:g}" if lk.rate_mbit else "-",
            f"{lk.utilisation:.0%}" if lk.utilisation is not None else "-",
        )
    console.print(links)
    if m.cpu:
        cpu = Table(title=f"CPU over {m.seconds:.1f} s (each host's TaskManager JVM: tasks, GC, netty, metrics)")
        for col in ("host", "cores here", "of it JIT compiler", "speed", "host cores", "without the JIT"):
            cpu.add_column(col, justify="left" if col == "host" else "right")
        for c in m.cpu:
            found = "" if c.processes == 1 else f" ({c.processes} TaskManagers)"
            cpu.add_row(
                c.host + found,
                f"{c.server_cores:.3f}",
                f"{c.compiler_server_cores:.3f}",
                f"{c.speed:g}" if c.speed else "-",
                f"{c.host_cores:.3f}" if c.host_cores is not None else "-",
                f"{c.steady_host_cores:.3f}" if c.steady_host_cores is not None else "-",
            )
        console.print(cpu)
    for job in m.jobs:
        t = Table(title=f"{job.name} ({job.job_id}): sources {job.source_records_per_s:,.0f} records/s")
        for col in ("vertex", "p", "in/s", "out/s", "busy ms/s", "backpressured ms/s", "runs on"):
            t.add_column(col, justify="left" if col in ("vertex", "runs on") else "right")
        for v in job.vertices:
            p = str(v.parallelism) if v.reporting >= v.parallelism else f"{v.parallelism} ({v.reporting} reporting)"
            t.add_row(
                v.name,
                p,
                f"{v.records_in_per_s:,.0f}",
                f"{v.records_out_per_s:,.0f}",
                f"{v.busy_ms_per_s:.0f}",
                f"{v.backpressured_ms_per_s:.0f}",
                ", ".join(f"{h}×{n}" for h, n in sorted(v.hosts.items())),
            )
        console.print(t)
        if job.latency:
            console.print(_latency_table(job))
    console.print(
        "wire: all bytes the edge namespace sent (headers, records, Flink RPC); job data: TCP payload of the "
        "edge TaskManager's data connections (what the plan predicts)"
    )
    if any(v.reporting < v.parallelism for j in m.jobs for v in j.vertices):
        console.print(
            "some subtasks sent no metrics (a saturated uplink delays the TaskManager's metric dump): "
            "their rates read 0, so those rows are lower bounds"
        )
    if not m.jobs:
        console.print("no running job")
