"""Plan directories for apply tests and benchmarks: what `placement plan --out` writes, for a mapping given by hand.

``write_plan_dir(out, inventory, mapping)`` writes plan.json, schedulercfg and vanilla/<host>.yaml for ``mapping``
(vertex name -> host of subtask 0, 1, ...). Vertex ids are made up from the names unless ``vertex_ids`` gives the
running job's (custom-mode apply finds vertices by id; :func:`running_vertex_ids` reads them from REST), so a test can
place a job it just submitted exactly as a planner would have.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from placement.flink.rest import FlinkRest
from placement.inventory import load_inventory
from placement.writers.planjson import (
    Objective,
    PlanDocument,
    SolverInfo,
    SourceRef,
    SubtaskAssignment,
    render_plan_json,
)
from placement.writers.schedulercfg import render_schedulercfg
from placement.writers.vanilla import render_taskmanager_configs


def made_up_id(vertex: str) -> str:
    return vertex.lower().replace(" ", "-").replace(":", "")


def write_plan_dir(
    out: Path,
    inventory_path: Path,
    mapping: Mapping[str, Sequence[str]],
    *,
    job: str,
    mode: str | None = None,
    vertex_ids: Mapping[str, str] | None = None,
    profile: Path | None = None,
) -> Path:
    inv = load_inventory(inventory_path)
    mode = mode or inv.flink.placement_mode
    assignment = []
    for vertex, hosts in mapping.items():
        vid = (vertex_ids or {}).get(vertex) or made_up_id(vertex)
        for i, host in enumerate(hosts):
            assignment.append(
                SubtaskAssignment(
                    vertex_id=vid,
                    vertex=vertex,
                    subtask=i,
                    parallelism=len(hosts),
                    label=f"{vertex} ({i + 1}/{len(hosts)})",
                    host=host,
                    address=inv.host(host).address,
                )
            )
    doc = PlanDocument(
        created_at="2026-11-21T20:00:00+00:00",
        tool="placement test",
        job=job,
        inventory=SourceRef(path=str(inventory_path), digest=inv.digest()),
        profile=SourceRef(path=str(profile or "(test mapping)"), digest="sha256:" + "0" * 64),
        placement_mode=mode,
        rate_scale=1.0,
        objective=Objective(wan_mbit=0, server_cores=0, edge_cores=0, latency_ms=0),
        solver=SolverInfo(name="test", status="given", objective_mode=None, gap=None, seconds=0.0, stages=[]),
        assignment=assignment,
        links=[],
        hosts=[],
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(render_plan_json(doc))
    order = list(dict.fromkeys(a.vertex_id for a in assignment))
    (out / "schedulercfg").write_text(render_schedulercfg(assignment, order))
    for rel, text in render_taskmanager_configs(doc, inv).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    return out


def running_vertex_ids(rest: FlinkRest, job_id: str) -> dict[str, str]:
    """vertex name -> job vertex id of a running job (one vertex per name: no vanilla lanes)."""
    return {v.name: v.id for v in rest.job(job_id).vertices}


def mapping_for(rest: FlinkRest, job_id: str, hosts_of: Callable[[str, int], Sequence[str]]) -> dict[str, list[str]]:
    """vertex name -> hosts, ``hosts_of(name, parallelism)`` choosing them for each vertex of the running job."""
    out = {}
    for v in rest.job(job_id).vertices:
        hosts = list(hosts_of(v.name, v.parallelism))
        assert len(hosts) == v.parallelism, (v.name, v.parallelism, hosts)
        out[v.name] = hosts
    return out


def write_fleet_dir(
    out: Path,
    inventory_path: Path,
    mappings: Mapping[str, Mapping[str, Sequence[str]]],
    *,
    link_mbit: Mapping[str, Mapping[str, float]] | None = None,
    mode: str | None = None,
    profiles: Mapping[str, Path] | None = None,
    vertex_ids: Mapping[str, str] | None = None,
) -> Path:
    """A fleet's OUT as `placement plan --profile a --profile b --out OUT` writes it: OUT/<job>/ (a plan directory per
    job, for ``mappings``: job -> its mapping) and OUT/fleet.json. ``link_mbit``: link name ("rpi1→server") -> job ->
    Mbit/s the plan puts on it (default: nothing on any link). ``profiles``: job -> the profile its plan names (default:
    none that exists, so apply cannot know what the running placement puts on a link). ``vertex_ids``: as for
    :func:`write_plan_dir` (every job runs the same program)."""
    from placement.writers.fleetjson import FleetDocument, FleetJob, LinkShare, render_fleet_json

    inv = load_inventory(inventory_path)
    jobs = []
    for job, mapping in mappings.items():
        profile = (profiles or {}).get(job)
        write_plan_dir(out / job, inventory_path, mapping, job=job, mode=mode, profile=profile, vertex_ids=vertex_ids)
        jobs.append(
            FleetJob(
                job=job,
                dir=job,
                profile=SourceRef(path=str(profile or "(test mapping)"), digest="sha256:" + "0" * 64),
                objective=Objective(wan_mbit=0, server_cores=0, edge_cores=0, latency_ms=0),
            )
        )
    links = []
    for link in inv.links:
        per_job = {job: (link_mbit or {}).get(link.name, {}).get(job, 0.0) for job in mappings}
        bandwidth = float(link.bandwidth)
        links.append(
            LinkShare(
                link=link.name,
                source=link.from_,
                to=link.to,
                mbit=sum(per_job.values()),
                bandwidth_mbit=bandwidth,
                usable_mbit=inv.policy.wan_headroom * bandwidth,
                utilisation=sum(per_job.values()) / bandwidth,
                jobs=per_job,
            )
        )
    doc = FleetDocument(
        created_at="2026-11-21T20:00:00+00:00",
        tool="placement test",
        inventory=SourceRef(path=str(inventory_path), digest=inv.digest()),
        jobs=jobs,
        objective=Objective(wan_mbit=0, server_cores=0, edge_cores=0, latency_ms=0),
        solver=SolverInfo(name="test", status="given", objective_mode=None, gap=None, seconds=0.0, stages=[]),
        links=links,
        hosts=[],
    )
    (out / "fleet.json").write_text(render_fleet_json(doc))
    return out
