"""The pure side of a rescaling apply (custom mode): when the plan's parallelism differs from the running job's,
preflight checks what it can before the stop and the planner resubmits through the JobGraph submitter on the
JobManager host -- the job's jar and the submitter uploaded there first, the roll back at the previous parallelism
through the submitter too. Vanilla mode refuses a rescaled plan in one line. No cluster: the view is what preflight
would have read (the real thing: test_apply_rescale_lab.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from apply_support import JOB_ARGS, PLACED, write_plan_dir
from test_apply_planner import custom_view, inventory, tm, view

from placement.apply import read_jars
from placement.apply.model import SubmitJob, SubmitJobGraph, SubmitterView, UploadFile
from placement.apply.planner import plan_apply
from placement.apply.preflight import check, submitter_probe_argv, upload_candidates
from placement.apply.request import load_request
from placement.errors import BadInput, PlacementError
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.submitter import (
    MAIN_CLASS,
    SubmitterJar,
    job_id_from,
    submitter_jar_name,
)
from placement.writers.planjson import RescaleInfo, load_plan, render_plan_json

IDS = {v: f"{i + 1:032x}" for i, v in enumerate(PLACED)}  # 32-hex job vertex ids, as Flink's
CHAIN = ("Source: Sensors", "Parse", "Filter", "Enrich")
# the source chain 2 -> 3 (its third instance on rpi1), the window and its sink 2 -> 1
RESCALED = {**{v: [*PLACED[v], "rpi1"] for v in CHAIN}, "Window Aggregate": ["server"], "Sink: Readings": ["server"]}
SUBMITTER = f"/opt/flink/placement/submitter/{submitter_jar_name('2.3.0')}"


def rescaled_request(tmp_path: Path, mapping=RESCALED, mode: str = "custom", **kw):
    inv = inventory(tmp_path, mode)
    plan_dir = write_plan_dir(tmp_path / f"plan-{mode}", inv, mapping, vertex_ids=IDS, mode=mode)
    doc = load_plan(plan_dir)
    changed = {v: [len(PLACED[v]), len(h)] for v, h in mapping.items() if len(h) != len(PLACED[v])}
    doc = doc.model_copy(
        update={
            "rescale": RescaleInfo(
                profiled_parallelism={IDS[v]: len(PLACED[v]) for v in PLACED},
                target_records_per_s={IDS["Source: Sensors"]: 600.0},
                changed=changed,
            )
        }
    )
    (plan_dir / "plan.json").write_text(render_plan_json(doc))
    return load_request(plan_dir, inv, **kw)


def graph_view(
    *, installed: bool = False, job_jar: bool = False, java_error: str | None = None, max_parallelism: int = 128, **kw
):
    sub = SubmitterView(
        submitter_path=SUBMITTER,
        submitter_installed=installed,
        job_jar_path="/opt/flink/placement/jars/0123456789abcdef-job.jar",
        job_jar_installed=job_jar,
        java_home=None,
        java_error=java_error,
    )
    return custom_view(PLACED, ids=IDS, submitter=sub, max_parallelism={i: max_parallelism for i in IDS.values()}, **kw)


def built(tmp_path: Path) -> SubmitterJar:
    jar = tmp_path / submitter_jar_name("2.3.0")
    jar.write_bytes(b"PK-submitter")
    return SubmitterJar(jar, "d", "2.3.0")


def test_a_rescaled_plan_is_resubmitted_through_the_submitter_on_the_jobmanager_host(tmp_path):
    req = rescaled_request(tmp_path)
    v = graph_view()
    assert check(req, v) == []
    plan = plan_apply(req, v, holder="t", jars=read_jars(req, v, submitter=built(tmp_path)))
    kinds = [(s.phase, s.action.kind) for s in plan.steps]
    assert kinds == [
        ("prepare", "lock"),
        ("prepare", "upload"),
        ("prepare", "upload"),
        ("stop", "stop"),
        ("install", "upload"),
        ("install", "upload"),
        ("redeploy", "submit-graph"),
        ("redeploy", "wait"),
        ("verify", "verify"),
        ("verify", "watch"),
        ("finish", "record"),
        ("finish", "unlock"),
    ]
    # before the stop: the submitter and the job's jar onto the JobManager host (no REST upload: not needed)
    submitter, job_jar = plan.steps[1].action, plan.steps[2].action
    assert isinstance(submitter, UploadFile) and submitter.host == "server" and submitter.path == SUBMITTER
    assert submitter.content == b"PK-submitter"
    assert isinstance(job_jar, UploadFile) and job_jar.content == req.jar_path.read_bytes()
    # the resubmission: every planned vertex at its planned parallelism, from the savepoint, the job's own arguments
    graph = plan.steps[6].action
    assert isinstance(graph, SubmitJobGraph) and graph.host == "server"
    argv = graph.call.argv("file:/sp/savepoint-1")
    assert argv[argv.index("-cp") + 1] == f"{SUBMITTER}:/opt/flink/lib/*" and MAIN_CLASS in argv
    overrides = dict(item.split(":") for item in argv[argv.index("--parallelism-overrides") + 1].split(","))
    assert overrides == {IDS[v]: str(len(h)) for v, h in RESCALED.items()}
    assert argv[argv.index("--savepoint") + 1] == "file:/sp/savepoint-1" and "--allow-non-restored-state" not in argv
    assert argv[argv.index("--jar") + 1] == job_jar.path and argv[argv.index("--conf-dir") + 1] == "/opt/flink/conf"
    assert argv[argv.index("--entry-class") + 1] == IOT_SENSOR_JOB
    assert argv[argv.index("--") + 1 :] == JOB_ARGS and argv[argv.index("--rest-url") + 1] == "http://127.0.0.1:8081"
    assert "<savepoint>" in graph.describe() and graph.describe().startswith("ssh server: java ")
    assert any("'Parse' plan 3 vs running 2" in n for n in plan.notes)
    # verify: every new subtask index on its planned TaskManager
    verify = next(s.action for s in plan.steps if s.action.kind == "verify")
    assert [(s.subtask, s.parallelism, s.host) for s in verify.subtasks if s.vertex == "Filter"] == [
        (0, 3, "rpi1"),
        (1, 3, "rpi1"),
        (2, 3, "rpi1"),
    ]
    # recorded: the overrides (the next apply keeps using the submitter for this job) and the previous parallelism
    record = next(s.action.record for s in plan.steps if s.action.kind == "record")
    assert record["parallelism_overrides"] == {IDS[v]: len(h) for v, h in RESCALED.items()}
    assert record["previous"]["parallelism"] == {v: 2 for v in PLACED}
    # roll back: the files back, then the previous job at its previous parallelism through the submitter
    back = plan.rollback[-2].action
    assert isinstance(back, SubmitJobGraph) and not any(isinstance(s.action, SubmitJob) for s in plan.rollback)
    assert dict(back.call.overrides) == {IDS[v]: 2 for v in PLACED} and back.call.program_args == tuple(JOB_ARGS)
    assert plan.rollback[-1].action.kind == "wait"


def test_jars_already_on_the_jobmanager_host_are_not_uploaded_again(tmp_path):
    plan = plan_apply(rescaled_request(tmp_path), graph_view(installed=True, job_jar=True), holder="t")
    assert [s.action.kind for s in plan.steps if s.phase == "prepare"] == ["lock"]


def test_preflight_refuses_before_the_stop_what_the_cluster_cannot_run(tmp_path):
    req = rescaled_request(tmp_path)
    # above the max parallelism the running job has (REST maxParallelism)
    assert [p.message for p in check(req, graph_view(max_parallelism=2))] == [
        f"'{v}': the plan's parallelism 3 is above its max parallelism 2 (Flink refuses such a job: plan again within "
        "it)"
        for v in CHAIN
    ]
    # no Java on the JobManager host
    messages = [p.message for p in check(req, graph_view(java_error="sh: 1: java: not found"))]
    assert (
        len(messages) == 1
        and "through the JobGraph submitter on the JobManager host server, but `java` on the SSH "
        "session's PATH does not run there (sh: 1: java: not found); set env.java.home"
        in messages[0]
    )
    # not enough slots for the new totals: rpi1 gets 3 subtasks of each chain vertex
    small = graph_view(taskmanagers={"server": tm("server", 4), "rpi1": tm("rpi1", 2)})
    assert [p.message for p in check(req, small)] == ["TaskManager rpi1: 2 slot(s) free, the plan needs 3"]
    # the plan's schedulercfg must cover every new subtask index (checked when the request is read)
    cfg = req.plan_dir / "schedulercfg"
    cfg.write_text("".join(line for line in cfg.read_text().splitlines(keepends=True) if "(3/3)" not in line))
    with pytest.raises(BadInput, match=r"no line for 'Source: Sensors \(3/3\)', 'Parse \(3/3\)'"):
        load_request(req.plan_dir, req.inventory_path)


def test_vanilla_mode_refuses_a_rescaled_plan_in_one_line(tmp_path):
    req = rescaled_request(tmp_path, mode="vanilla")
    messages = [p.message for p in check(req, view(PLACED))]
    assert messages == [
        (
            "the plan changes parallelism (Source: Sensors 2→3, Parse 2→3, Filter 2→3, Enrich 2→3, "
            "Window Aggregate 2→1, Sink: Readings 2→1), which vanilla mode cannot apply: it resubmits by a "
            "REST jar run, which keeps the job's own parallelism; plan it for custom mode "
            "(placement plan --rescale --mode custom)"
        )
    ]


def test_a_job_an_earlier_apply_rescaled_stays_on_the_submitter_even_when_the_plan_keeps_its_parallelism(tmp_path):
    req = rescaled_request(tmp_path, mapping={**PLACED, "Enrich": ["server", "server"]})  # moves, keeps parallelism
    plain = plan_apply(req, custom_view(PLACED, ids=IDS), holder="t")
    assert any(isinstance(s.action, SubmitJob) for s in plain.steps)  # a jar run keeps what a jar run started
    record = {"job_id": "j1", "plan": "sha256:x", "program_args": JOB_ARGS, "parallelism_overrides": {IDS["Parse"]: 2}}
    again = plan_apply(req, graph_view(installed=True, job_jar=True, state_record=record), holder="t")
    graph = next(s.action for s in again.steps if isinstance(s.action, SubmitJobGraph))
    assert dict(graph.call.overrides) == {IDS[v]: 2 for v in PLACED}
    assert any("kept as an earlier apply set it" in n for n in again.notes)


def test_the_probe_finds_jars_by_pattern_and_tells_whether_java_runs(tmp_path):
    """The one read-only command preflight runs on the JobManager host, run here for real."""
    upload = tmp_path / "flink-web-5f0c" / "flink-web-upload"
    upload.mkdir(parents=True)
    (upload / "abc_my job.jar").write_bytes(b"PK")
    submitter = tmp_path / "submitter.jar"
    [pattern] = upload_candidates({"web.tmpdir": str(tmp_path)}, "abc_my job.jar")
    argv = submitter_probe_argv(str(submitter), [pattern], "java")
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [f"have {upload / 'abc_my job.jar'}"]  # no submitter there yet; java runs
    submitter.write_bytes(b"PK")
    out = subprocess.run(
        submitter_probe_argv(str(submitter), [pattern], str(tmp_path / "no-jdk" / "java")),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[:2] == [f"have {submitter}", f"have {upload / 'abc_my job.jar'}"]
    assert len(out) == 3 and out[2].startswith("java-error ") and "no-jdk/java" in out[2]
    assert upload_candidates({"web.upload.dir": "/srv/up"}, "x.jar") == [
        "/srv/up/x.jar",
        "/srv/up/flink-web-upload/x.jar",
    ]


def test_the_submitters_answer_is_a_job_id_or_one_line():
    assert job_id_from("noise\nJOBID " + "a" * 32 + "\n") == "a" * 32
    with pytest.raises(
        PlacementError, match=r"^the JobGraph submitter failed: vertex 'Parse' \(.*\): parallelism 300 is above"
    ):
        job_id_from("", "error: vertex 'Parse' (00ff): parallelism 300 is above its max parallelism 128\n", 1)
    with pytest.raises(PlacementError, match=r"^the JobGraph submitter failed: exit 127$"):
        job_id_from("", "", 127)
