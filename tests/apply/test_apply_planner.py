"""The pure parts of apply: preflight checks and the planner, from a request and an observed cluster view.

No cluster here: the view is what preflight would have read (the SSH/REST reading itself is exercised against real
sshd + Flink in the other modules). These cover paths a shared test cluster cannot show: a TaskManager without its
external resource (config change + restart, only with --yes), free resources short, the no-op decision.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from apply_support import ALL_SERVER, JOB_ARGS, JOB_NAME, PLACED, write_plan_dir

from placement.apply import read_jars
from placement.apply.model import (
    ClusterView,
    HostConfigView,
    RestoreFile,
    SchedulerView,
    SshCommand,
    SubmitJob,
    TaskManagerView,
    UploadFile,
)
from placement.apply.planner import new_program_args, placement_matches, plan_apply
from placement.apply.preflight import (
    check,
    config_satisfies,
    describe_reads,
    jar_built_for,
    read_host_config,
    slots_needed,
)
from placement.apply.request import load_request
from placement.errors import BadInput
from placement.flink.config import flatten
from placement.flink.rest import TaskManagerInfo, VertexInfo
from placement.flink.versions import FlinkVersion
from placement.inventory.failure_detection import FailureDetection, flink_config
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.remote import LocalExecutor
from placement.scheduler import ExtensionJar

EDGE_FAILURE_DETECTION = flink_config(FailureDetection())  # the edge defaults, as every writer maps them


def inventory(
    tmp: Path,
    mode: str = "vanilla",
    *,
    version: str | None = None,
    home: str = "/opt/flink",
    failure_detection: dict | None = None,
    network: dict | None = None,
) -> Path:
    jar = tmp / "job.jar"
    jar.write_bytes(b"PK")
    doc = {
        "version": 1,
        "name": "pure",
        "hosts": [
            {"name": "server", "address": "10.204.9.2", "role": "server", "cores": 4, "memory": "4GiB"},
            {"name": "rpi1", "address": "10.204.9.6", "role": "edge", "model": "rpi4b"},
        ],
        "links": [{"from": "rpi1", "to": "server", "bandwidth": "50mbit"}],
        "flink": {
            "rest_url": "http://127.0.0.1:8081",
            "home": home,
            "placement_mode": mode,
            **({"version": version} if version else {}),
            **({"failure_detection": failure_detection} if failure_detection else {}),
            **({"network": network} if network else {}),
        },
        "job": {"name": JOB_NAME, "jar": str(jar), "entry_class": IOT_SENSOR_JOB, "program_args": JOB_ARGS},
    }
    path = tmp / "inv.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def tm(name: str, resource: float, *, slots: int = 4, used: float = 0.0) -> TaskManagerView:
    ext = {name: resource} if resource else {}
    free_ext = {name: resource - used} if resource else {}
    return TaskManagerView(
        name,
        slots,
        slots,
        {"cpuCores": 4.0, "taskHeapMemory": 192, "extendedResources": ext},
        {"cpuCores": 4.0, "taskHeapMemory": 192, "extendedResources": free_ext},
    )


def view(mapping: dict[str, list[str]], **kw) -> ClusterView:
    actual = dict(Counter((v, h) for v, hosts in mapping.items() for h in hosts))
    base = {
        "job_id": "j1",
        "job_name": JOB_NAME,
        "job_state": "RUNNING",
        "vertices": {v: len(h) for v, h in mapping.items()},
        "actual": actual,
        "taskmanagers": {"server": tm("server", 16), "rpi1": tm("rpi1", 16)},
        "other_jobs": (),
        "jar_ids": (),
        "state_record": None,
        "schedulercfg": None,
        "jobmanager_config": None,
    }
    return ClusterView(**(base | kw))


@pytest.fixture
def request_(tmp_path):
    def make(mapping=PLACED, mode="vanilla", consent=False, **inventory_kw):
        inv = inventory(tmp_path, mode, **inventory_kw)
        plan = write_plan_dir(tmp_path / f"plan-{mode}", inv, mapping)
        return load_request(plan, inv, consent=consent)

    return make


def test_a_taskmanager_without_its_resource_needs_consent_then_gets_config_and_restart(request_):
    tm_config = HostConfigView("rpi1", "/opt/flink/conf/config.yaml", "taskmanager:\n  numberOfTaskSlots: 4\n")
    v = view(
        ALL_SERVER,
        taskmanagers={"server": tm("server", 16), "rpi1": tm("rpi1", 0)},
        taskmanager_configs={"rpi1": tm_config},
    )
    problems = check(request_(), v)
    assert [p.message for p in problems] == [
        (
            "TaskManager rpi1 does not declare external resource 'rpi1': apply must set taskmanager.resource-id, "
            "external-resources, external-resource.rpi1.amount in rpi1:/opt/flink/conf/config.yaml and restart its "
            "TaskManager; pass --yes to allow the restart"
        )
    ]
    req = request_(consent=True)
    assert check(req, v) == []
    plan = plan_apply(req, v, holder="t")
    kinds = [(s.phase, s.action.kind) for s in plan.steps]
    assert kinds == [
        ("prepare", "lock"),
        ("prepare", "upload-jar"),
        ("stop", "stop"),
        ("install", "upload"),
        ("install", "ssh"),
        ("install", "ssh"),
        ("install", "wait-tms"),
        ("redeploy", "submit"),
        ("redeploy", "wait"),
        ("verify", "verify"),
        ("verify", "watch"),
        ("finish", "record"),
        ("finish", "unlock"),
    ]
    upload = plan.steps[3].action
    assert isinstance(upload, UploadFile) and upload.host == "rpi1" and upload.path == "/opt/flink/conf/config.yaml"
    written = yaml.safe_load(upload.content)
    assert written["taskmanager"]["numberOfTaskSlots"] == 4 and written["taskmanager"]["resource-id"] == "rpi1"
    assert written["external-resources"] == ["rpi1"] and written["external-resource"]["rpi1"]["amount"] == 4
    # restarted anyway, it gets the inventory's failure detection with its resource
    assert flatten(written) | EDGE_FAILURE_DETECTION == flatten(written)
    assert flatten(written)["heartbeat.timeout"] == 10000 and flatten(written)["slot.request.timeout"] == 15000
    assert [s.action.argv for s in plan.steps[4:6]] == [
        ("/opt/flink/bin/taskmanager.sh", "stop"),
        ("/opt/flink/bin/taskmanager.sh", "start"),
    ]
    assert plan.restarts == ("TaskManager on rpi1",)
    # roll back: the config back from .prev, the TaskManager restarted again, the previous arguments resubmitted
    assert [type(s.action) for s in plan.rollback[:3]] == [RestoreFile, SshCommand, SshCommand]
    resubmit = plan.rollback[-2].action
    assert isinstance(resubmit, SubmitJob) and list(resubmit.program_args) == JOB_ARGS


def test_a_restart_is_not_planned_when_the_running_taskmanager_has_the_resource(request_):
    plan = plan_apply(request_(), view(ALL_SERVER), holder="t")
    assert not any(isinstance(s.action, (SshCommand, UploadFile)) for s in plan.steps) and plan.restarts == ()
    submit = next(s.action for s in plan.steps if isinstance(s.action, SubmitJob))
    assert list(submit.program_args) == [*JOB_ARGS, "--placement", json.dumps(PLACED, separators=(",", ":"))]
    assert submit.allow_non_restored_state and submit.entry_class == IOT_SENSOR_JOB


def test_short_resources_are_refused_with_figures(request_):
    other = view(
        ALL_SERVER, other_jobs=("j2",), taskmanagers={"server": tm("server", 16), "rpi1": tm("rpi1", 16, used=15)}
    )
    messages = [p.message for p in check(request_(), other)]
    assert messages == ["TaskManager rpi1: 1 of external resource 'rpi1' free, the plan needs 2"]
    missing = view(ALL_SERVER, taskmanagers={"server": tm("server", 16)})
    assert [p.message for p in check(request_(), missing)] == [
        "no TaskManager with resource id 'rpi1' is registered (registered: server)"
    ]


def test_noop_only_when_apply_itself_started_this_job_with_this_plan(request_):
    req = request_()
    args = new_program_args(req)
    fresh = view(PLACED)
    plan = plan_apply(req, fresh, holder="t")
    assert not plan.noop and "not started by `placement apply`" in plan.notes[0]
    recorded = view(PLACED, state_record={"job_id": "j1", "plan": req.plan_fingerprint, "program_args": args})
    plan = plan_apply(req, recorded, holder="t")
    assert plan.noop and plan.steps == () and "plan already in effect" in plan.noop_reason
    elsewhere = view(ALL_SERVER, state_record={"job_id": "j1", "plan": req.plan_fingerprint, "program_args": args})
    assert not plan_apply(req, elsewhere, holder="t").noop


EXT_DIR = "/opt/flink/placement/scheduler"
ACTIVE = SchedulerView(
    active=True,
    settings={"placement.scheduler.dir": EXT_DIR, "jobmanager.scheduler": "default"},
    installed_jars=("placement-scheduler-2.3.0-abc.jar",),
    flink_version="2.3.0",
)


def custom_view(
    mapping: dict[str, list[str]],
    *,
    scheduler: SchedulerView = ACTIVE,
    names: dict[str, str] | None = None,
    ids: dict[str, str] | None = None,
    **kw,
) -> ClusterView:
    """A custom-mode view: the job's vertices (ids as write_plan_dir makes them, unless ``ids`` renames them; names
    as planned unless ``names`` renames them) and which TaskManager runs each subtask index."""
    vid = {v: (ids or {}).get(v, v.lower().replace(" ", "-").replace(":", "")) for v in mapping}
    running = tuple(VertexInfo(vid[v], (names or {}).get(v, v), len(h), "RUNNING") for v, h in mapping.items())
    tm_infos = tuple(
        TaskManagerInfo(
            t,
            f"pekko.tcp://flink@10.204.9.{2 if t == 'server' else 6}:6122/user/rpc/taskmanager_0",
            4,
            4,
            {"cpuCores": 4.0, "taskHeapMemory": 192, "extendedResources": {t: 4.0}},
            {"cpuCores": 4.0, "taskHeapMemory": 192, "extendedResources": {t: 4.0}},
        )
        for t in ("server", "rpi1")
    )
    base = dict(
        jobmanager_config=HostConfigView(
            "server", "/opt/flink/conf/config.yaml", "jobmanager:\n  scheduler: default\n"
        ),
        running_vertices=running,
        subtask_hosts={vid[v]: tuple(h) for v, h in mapping.items()},
        taskmanager_infos=tm_infos,
        scheduler=scheduler,
        taskmanagers={"server": tm("server", 4), "rpi1": tm("rpi1", 4)},
    )
    return view(mapping, **(base | kw))


def test_custom_mode_installs_the_job_file_and_the_taskmanager_table_and_resubmits_the_job_unchanged(request_):
    req = request_(mode="custom")
    plan = plan_apply(req, custom_view(ALL_SERVER), holder="t")
    uploads = [s.action for s in plan.steps if isinstance(s.action, UploadFile)]
    assert [u.path for u in uploads] == [f"{EXT_DIR}/taskmanagers.cfg", f"{EXT_DIR}/{JOB_NAME}.schedulercfg"]
    assert uploads[1].content == (req.plan_dir / "schedulercfg").read_text()
    table = uploads[0].content
    assert "rpi1; addresses=10.204.9.6; slots=4" in table and "server; addresses=10.204.9.2; slots=4" in table
    assert plan.restarts == () and not any(isinstance(s.action, SshCommand) for s in plan.steps)
    submit = next(s.action for s in plan.steps if isinstance(s.action, SubmitJob))
    assert list(submit.program_args) == JOB_ARGS and not submit.allow_non_restored_state  # the job as it was
    verify = next(s.action for s in plan.steps if s.action.kind == "verify")
    assert [(s.vertex, s.subtask, s.host) for s in verify.subtasks][:3] == [
        ("Source: Sensors", 0, "rpi1"),
        ("Source: Sensors", 1, "rpi1"),
        ("Parse", 0, "rpi1"),
    ]
    # roll back: both files back from .prev (removed when there was none: the job then runs as stock Flink)
    assert [s.action.path for s in plan.rollback if isinstance(s.action, RestoreFile)] == [
        f"{EXT_DIR}/{JOB_NAME}.schedulercfg",
        f"{EXT_DIR}/taskmanagers.cfg",
    ]


def test_custom_mode_restarts_the_jobmanager_only_with_consent_and_only_where_the_extension_is_not_in_effect(
    request_, tmp_path
):
    inactive = SchedulerView(active=False, settings={}, installed_jars=(), flink_version="2.3.0")
    v = custom_view(ALL_SERVER, scheduler=inactive)
    messages = [p.message for p in check(request_(mode="custom"), v)]
    assert len(messages) == 1 and messages[0].startswith(
        "the JobManager on server does not run the scheduler extension ("
        "no scheduler extension jar in server:/opt/flink/lib; "
        "placement.scheduler.dir is unset, needs /opt/flink/placement/scheduler)"
    )
    assert "install the extension jar into server:/opt/flink/lib and set placement.scheduler.dir: " in messages[0]
    assert messages[0].endswith("pass --yes to allow the restart")
    # other jobs on the cluster: a restart would end them, refused even with --yes
    busy = custom_view(ALL_SERVER, scheduler=inactive, other_jobs=("j2",))
    assert [p.message for p in check(request_(mode="custom", consent=True), busy)][-1].endswith(
        "would end the other running job(s) j2: stop them first"
    )
    # with consent: jar, config, restart, wait for the TaskManagers, check the extension, upload the job jar again
    req = request_(mode="custom", consent=True)
    assert check(req, v) == []
    jar = tmp_path / "placement-scheduler-2.3.0-abc.jar"
    jar.write_bytes(b"PK-ext")
    plan = plan_apply(req, v, holder="t", jars=read_jars(req, v, extension=ExtensionJar(jar, "abc", "2.3.0")))
    kinds = [s.action.kind for s in plan.steps if s.phase == "install"]
    assert kinds == ["upload", "upload", "upload", "upload", "ssh", "ssh", "wait-tms", "check-extension", "upload-jar"]
    uploads = [s.action for s in plan.steps if isinstance(s.action, UploadFile)]
    assert uploads[2].path == "/opt/flink/lib/placement-scheduler-2.3.0-abc.jar" and uploads[2].content == b"PK-ext"
    # the extension's keys, and the inventory's failure detection: the JobManager reads both at its restart
    assert flatten(yaml.safe_load(uploads[3].content)) == {
        "jobmanager.scheduler": "default",
        "placement.scheduler.dir": EXT_DIR,
        **EDGE_FAILURE_DETECTION,
    }
    assert uploads[3].why.endswith(f"; {len(EDGE_FAILURE_DETECTION)} key(s) of flink.failure_detection")
    assert plan.restarts == ("JobManager on server",)
    assert "jobmanager.scheduler: Custom" not in json.dumps([s.describe() for s in plan.steps])  # not a stock value
    # a JobManager that runs the extension already: no restart
    assert plan_apply(req, custom_view(ALL_SERVER), holder="t").restarts == ()


def test_custom_mode_finds_a_sql_jobs_vertices_by_id_when_their_names_changed(request_):
    """Calc[2] of the profiled submission is Calc[7] now: found by id; a plan with other ids falls back to the name
    without the counter where that is unambiguous; a vertex that is not there is a stale plan."""
    req = request_(mode="custom")
    renamed = {"Parse": "Parse[7]", "Filter": "Filter[8]"}
    assert check(req, custom_view(PLACED, names=renamed)) == []
    other_ids = custom_view(PLACED, ids={v: f"other-{i}" for i, v in enumerate(PLACED)})
    assert check(req, other_ids) == []
    assert placement_matches(req, custom_view(PLACED, names=renamed))
    gone = custom_view({k: v for k, v in PLACED.items() if k != "Enrich"})
    messages = [p.message for p in check(req, gone)]
    assert messages == [
        "stale plan: the running job's graph differs from the plan's (not in the running job: 'Enrich' (id enrich))"
    ]


def test_custom_mode_compares_subtask_indices_not_counts(request_):
    req = request_(mode="custom")
    swapped = {**PLACED, "Enrich": ["server", "rpi1"]}  # the same counts per host, the indices swapped
    assert not placement_matches(req, custom_view(swapped))
    assert placement_matches(req, custom_view(PLACED))


def test_custom_mode_refuses_a_taskmanager_that_is_missing_or_has_no_resource(request_):
    req = request_(mode="custom")
    missing = custom_view(PLACED, taskmanagers={"server": tm("server", 4)})
    assert [p.message for p in check(req, missing)] == [
        "no TaskManager with resource id 'rpi1' is registered (registered: server)"
    ]
    bare = custom_view(PLACED, taskmanagers={"server": tm("server", 4), "rpi1": tm("rpi1", 0)})
    assert [p.message for p in check(req, bare)] == [
        "TaskManager rpi1 declares no external resource 'rpi1', so no slot can be placed on it: set "
        "taskmanager.resource-id: rpi1, taskmanager.numberOfTaskSlots: 4, external-resources: ['rpi1'], "
        "external-resource.rpi1.amount: 4 in its config and restart it"
    ]


def test_a_partial_or_malformed_schedulercfg_is_bad_input_naming_the_file(request_):
    req = request_(mode="custom")
    cfg = req.plan_dir / "schedulercfg"
    full = cfg.read_text()
    cfg.write_text("".join(full.splitlines(keepends=True)[:-2]))
    with pytest.raises(
        BadInput,
        match=rf"^{cfg}: no line for 'Sink: Readings \(1/2\)', 'Sink: Readings \(2/2\)' "
        r"\(a partial file",
    ):
        load_request(req.plan_dir, req.inventory_path)
    cfg.write_text(full + "this is no line\n")
    with pytest.raises(BadInput, match=rf"^{cfg}: line \d+ is not '<task name> \(<i>/<n>\); <address>'"):
        load_request(req.plan_dir, req.inventory_path)
    cfg.write_text(full.replace("10.204.9.6", "10.9.9.9"))
    with pytest.raises(BadInput, match=r"names TaskManager '10.9.9.9', which is no host of the inventory"):
        load_request(req.plan_dir, req.inventory_path)
    cfg.write_text("")
    with pytest.raises(BadInput, match=rf"^{cfg}: empty"):
        load_request(req.plan_dir, req.inventory_path)


def test_slot_and_config_arithmetic():
    assert slots_needed({("A", "rpi1"): 2, ("B", "rpi1"): 3, ("A", "server"): 1}) == {"rpi1": 3, "server": 1}
    wanted = {"taskmanager.resource-id": "rpi1", "external-resources": "rpi1", "external-resource.rpi1.amount": 4}
    assert (
        config_satisfies(
            {
                "taskmanager.resource-id": "rpi1",
                "external-resources": ["gpu", "rpi1"],
                "external-resource.rpi1.amount": 16,
            },
            wanted,
        )
        == []
    )
    assert config_satisfies(
        {"taskmanager.resource-id": "rpi1", "external-resources": "gpu;rpi1", "external-resource.rpi1.amount": 2},
        wanted,
    ) == ["external-resource.rpi1.amount"]


# ---- Flink versions ------------------------------------------------------------------------------------------------


def test_a_pin_the_jobmanager_does_not_run_is_a_stale_inventory(request_, tmp_path):
    pinned = request_(version="2.3.0")
    problems = check(pinned, view(ALL_SERVER, flink_version="1.20.5"))
    assert [(p.message, p.stale_input) for p in problems] == [
        (
            f"{tmp_path / 'inv.yaml'}: flink.version: pinned to Flink 2.3.0, but the JobManager at "
            "http://127.0.0.1:8081 runs 1.20.5 (correct the pin, or remove it to follow the JobManager)",
            True,
        )
    ]
    assert check(pinned, view(ALL_SERVER, flink_version="2.3.0")) == []
    assert check(request_(), view(ALL_SERVER, flink_version="1.20.5")) == []  # unpinned: the JobManager decides


def test_an_extension_built_for_another_flink_is_refused_even_with_consent(request_):
    other = SchedulerView(
        active=True,
        settings=ACTIVE.settings,
        installed_jars=("placement-scheduler-2.3.0-abc.jar",),
        flink_version="1.20.5",
    )
    for consent in (False, True):
        messages = [
            p.message for p in check(request_(mode="custom", consent=consent), custom_view(ALL_SERVER, scheduler=other))
        ]
        assert messages == [
            "the JobManager on server does not run the scheduler extension: the extension jar in server:/opt/flink/lib "
            "(placement-scheduler-2.3.0-abc.jar) was built for Flink 2.3.0, the JobManager runs 1.20.5: replace it "
            "with one built for that (`placement scheduler install --flink-home <its Flink home>`, or the Ansible role)"
        ]
    assert jar_built_for("placement-scheduler-1.20.5-0123456789abcdef.jar") == "1.20.5"
    assert jar_built_for("placement-scheduler.jar") is None


def test_a_1x_host_whose_flink_conf_yaml_wins_gets_its_keys_there_line_by_line(request_):
    legacy = HostConfigView(
        "rpi1",
        "/opt/flink/conf/flink-conf.yaml",
        "# rpi1, by hand\ntaskmanager.numberOfTaskSlots: 4\nexternal-resources: gpu\n",
    )
    v = view(
        ALL_SERVER,
        taskmanagers={"server": tm("server", 16), "rpi1": tm("rpi1", 0)},
        taskmanager_configs={"rpi1": legacy},
        flink_version="1.20.5",
    )
    assert "in rpi1:/opt/flink/conf/flink-conf.yaml and restart its TaskManager" in check(request_(), v)[0].message
    plan = plan_apply(request_(consent=True), v, holder="t")
    upload = next(s.action for s in plan.steps if isinstance(s.action, UploadFile))
    assert upload.path == "/opt/flink/conf/flink-conf.yaml"
    assert upload.content == (
        "# rpi1, by hand\ntaskmanager.numberOfTaskSlots: 4\nexternal-resources: gpu;rpi1\n"
        "taskmanager.resource-id: rpi1\nexternal-resource.rpi1.amount: 4\n"
        + "".join(f"{k}: {v}\n" for k, v in EDGE_FAILURE_DETECTION.items())
    )


@pytest.mark.parametrize(
    ("version", "files", "read"),
    [
        ("1.20.5", ("flink-conf.yaml", "config.yaml"), "flink-conf.yaml"),
        ("1.19.3", ("config.yaml",), "config.yaml"),
        ("2.3.0", ("flink-conf.yaml", "config.yaml"), "config.yaml"),
        ("2.0.2", ("flink-conf.yaml",), None),
    ],
)
def test_preflight_reads_the_file_the_hosts_flink_reads(request_, tmp_path, version, files, read):
    home = tmp_path / "flink"
    (home / "conf").mkdir(parents=True)
    for name in files:
        (home / "conf" / name).write_text(f"# {name}\n")
    req = request_(home=str(home))
    got = read_host_config(LocalExecutor("rpi1"), "rpi1", req, FlinkVersion.parse(version))
    if read is None:  # nothing this version reads: config.yaml is where the keys go
        assert (got.path, got.text) == (str(home / "conf" / "config.yaml"), None)
    else:
        assert (got.path, got.text) == (str(home / "conf" / read), f"# {read}\n")


def test_the_config_apply_writes_carries_the_inventorys_failure_detection_and_only_what_is_missing(request_):
    block = {"heartbeat_timeout": "20s", "slot_request_timeout": "30s", "restart": {"attempts": 4}}
    tm_config = HostConfigView("rpi1", "/opt/flink/conf/config.yaml", "taskmanager:\n  numberOfTaskSlots: 4\n")
    v = view(
        ALL_SERVER,
        taskmanagers={"server": tm("server", 16), "rpi1": tm("rpi1", 0)},
        taskmanager_configs={"rpi1": tm_config},
    )
    plan = plan_apply(request_(consent=True, failure_detection=block), v, holder="t")
    upload = next(s.action for s in plan.steps if isinstance(s.action, UploadFile))
    written = flatten(yaml.safe_load(upload.content))
    assert {
        k: written[k]
        for k in (
            "heartbeat.interval",
            "heartbeat.timeout",
            "slot.request.timeout",
            "restart-strategy.type",
            "restart-strategy.exponential-delay.attempts-before-reset-backoff",
        )
    } == {
        "heartbeat.interval": 2000,
        "heartbeat.timeout": 20000,
        "slot.request.timeout": 30000,
        "restart-strategy.type": "exponential-delay",
        "restart-strategy.exponential-delay.attempts-before-reset-backoff": 4,
    }
    # a file that has them already (an Ansible-provisioned host) gets only the resource
    provisioned = HostConfigView(
        "rpi1",
        "/opt/flink/conf/config.yaml",
        upload.content.replace("external-resources:\n- rpi1\n", "") if isinstance(upload.content, str) else "",
    )
    again = plan_apply(
        request_(consent=True, failure_detection=block),
        view(
            ALL_SERVER,
            taskmanagers={"server": tm("server", 16), "rpi1": tm("rpi1", 0)},
            taskmanager_configs={"rpi1": provisioned},
        ),
        holder="t",
    )
    step = next(s.action for s in again.steps if isinstance(s.action, UploadFile))
    assert "flink.failure_detection" not in step.why and flatten(yaml.safe_load(step.content)) == written


def test_a_jobmanager_restarted_for_the_jar_alone_gets_the_failure_detection_its_config_lacks(request_, tmp_path):
    # the extension's keys are set, its jar is missing: the restart for the jar also loads the failure detection
    jm_config = HostConfigView(
        "server",
        "/opt/flink/conf/config.yaml",
        f"jobmanager:\n  scheduler: default\nplacement:\n  scheduler:\n    dir: {EXT_DIR}\n"
        "heartbeat:\n  timeout: 50000\n",
    )
    no_jar = SchedulerView(
        active=False,
        settings={"placement.scheduler.dir": EXT_DIR, "jobmanager.scheduler": "default"},
        installed_jars=(),
        flink_version="2.3.0",
    )
    jar = tmp_path / "placement-scheduler-2.3.0-abc.jar"
    jar.write_bytes(b"PK-ext")
    req = request_(mode="custom", consent=True)
    v = custom_view(ALL_SERVER, scheduler=no_jar, jobmanager_config=jm_config)
    plan = plan_apply(req, v, holder="t", jars=read_jars(req, v, extension=ExtensionJar(jar, "abc", "2.3.0")))
    config = next(
        s.action
        for s in plan.steps
        if isinstance(s.action, UploadFile) and s.action.path.endswith("config.yaml") and s.action.host == "server"
    )
    written = flatten(yaml.safe_load(config.content))
    assert written == {"jobmanager.scheduler": "default", "placement.scheduler.dir": EXT_DIR, **EDGE_FAILURE_DETECTION}
    assert written["heartbeat.timeout"] == 10000  # Flink's 50 s replaced by the edge default
    assert config.why == f"{len(EDGE_FAILURE_DETECTION)} key(s) of flink.failure_detection"


def test_a_vanilla_taskmanager_gets_the_inventorys_network_buffers_with_its_resource(request_):
    tm_config = HostConfigView("rpi1", "/opt/flink/conf/config.yaml", "taskmanager:\n  numberOfTaskSlots: 4\n")
    v = view(
        ALL_SERVER,
        taskmanagers={"server": tm("server", 16), "rpi1": tm("rpi1", 0)},
        taskmanager_configs={"rpi1": tm_config},
    )
    plan = plan_apply(request_(consent=True, network={"buffers_per_channel": 19}), v, holder="t")
    upload = next(s.action for s in plan.steps if isinstance(s.action, UploadFile))
    written = flatten(yaml.safe_load(upload.content))
    assert written["taskmanager.network.memory.buffers-per-channel"] == 19
    assert "taskmanager.network.memory.floating-buffers-per-gate" not in written  # Flink's default: not written
    assert upload.why.endswith("key(s) of flink.failure_detection and flink.network")
    # Flink's defaults write nothing of the block
    plain = plan_apply(request_(consent=True), v, holder="t")
    upload = next(s.action for s in plain.steps if isinstance(s.action, UploadFile))
    assert not any(k.startswith("taskmanager.network.") for k in flatten(yaml.safe_load(upload.content)))


BUFFERS_KEY = "taskmanager.network.memory.buffers-per-channel"


def network_configs(server: str, rpi1: str) -> dict[str, HostConfigView]:
    return {
        "server": HostConfigView("server", "/opt/flink/conf/config.yaml", server),
        "rpi1": HostConfigView("rpi1", "/opt/flink/conf/config.yaml", rpi1),
    }


def test_custom_mode_restarts_a_taskmanager_whose_config_lacks_flink_network_only_with_consent(request_):
    configs = network_configs("taskmanager:\n  numberOfTaskSlots: 4\n", f"{BUFFERS_KEY}: 19\n")
    v = custom_view(PLACED, taskmanager_configs=configs)
    messages = [p.message for p in check(request_(mode="custom", network={"buffers_per_channel": 19}), v)]
    assert messages == [
        f"flink.network: the TaskManager config of server lacks {BUFFERS_KEY}: 19: apply must write it and restart "
        "those TaskManagers (after the savepoint, before the resubmit); pass --yes to allow the restart"
    ]
    req = request_(mode="custom", consent=True, network={"buffers_per_channel": 19})
    assert check(req, v) == []
    plan = plan_apply(req, v, holder="t")
    phases = [(s.phase, s.action.kind) for s in plan.steps]
    install = [k for p, k in phases if p == "install"]
    assert install == ["upload", "upload", "upload", "ssh", "ssh", "wait-tms", "check-extension"]
    assert phases.index(("stop", "stop")) < phases.index(("install", "ssh")) < phases.index(("redeploy", "submit"))
    config = [s.action for s in plan.steps if isinstance(s.action, UploadFile)][2]
    assert (config.host, config.path) == ("server", "/opt/flink/conf/config.yaml")
    written = flatten(yaml.safe_load(config.content))
    assert written[BUFFERS_KEY] == 19 and written["taskmanager.numberOfTaskSlots"] == 4
    assert "taskmanager.network.memory.floating-buffers-per-gate" not in written  # Flink's default: not written
    assert [s.action.argv for s in plan.steps if isinstance(s.action, SshCommand)] == [
        ("/opt/flink/bin/taskmanager.sh", "stop"),
        ("/opt/flink/bin/taskmanager.sh", "start"),
    ]
    assert all(s.action.host == "server" for s in plan.steps if isinstance(s.action, SshCommand))
    assert plan.restarts == ("TaskManager on server",)
    assert any(f"restarted for flink.network ({BUFFERS_KEY}: 19)" in n for n in plan.notes)
    restored = [s.action for s in plan.rollback if isinstance(s.action, RestoreFile)]
    assert [(r.host, r.path) for r in restored] == [
        ("server", "/opt/flink/conf/config.yaml"),
        ("server", f"{EXT_DIR}/{JOB_NAME}.schedulercfg"),
        ("server", f"{EXT_DIR}/taskmanagers.cfg"),
    ]
    # every TaskManager has the keys already: nothing restarted
    done = custom_view(PLACED, taskmanager_configs=network_configs(f"{BUFFERS_KEY}: 19\n", f"{BUFFERS_KEY}: 19\n"))
    assert plan_apply(req, done, holder="t").restarts == ()


def test_a_plan_in_effect_except_flink_network_is_not_a_noop(request_):
    req = request_(mode="custom", consent=True, network={"buffers_per_channel": 19})
    record = {"job_id": "j1", "plan": req.plan_fingerprint, "program_args": new_program_args(req)}
    lacking = network_configs("{}\n", f"{BUFFERS_KEY}: 19\n")
    pending = custom_view(PLACED, state_record=record, schedulercfg=req.schedulercfg, taskmanager_configs=lacking)
    plan = plan_apply(req, pending, holder="t")
    assert not plan.noop and "the TaskManager config of server lacks keys of flink.network" in plan.notes
    settled = custom_view(
        PLACED,
        state_record=record,
        schedulercfg=req.schedulercfg,
        taskmanager_configs=network_configs(f"{BUFFERS_KEY}: 19\n", f"{BUFFERS_KEY}: 19\n"),
    )
    assert plan_apply(req, settled, holder="t").noop


def test_vanilla_restarts_a_taskmanager_with_its_resource_for_flink_network_alone(request_):
    configs = network_configs(f"{BUFFERS_KEY}: 2\n", f"{BUFFERS_KEY}: 19\n")
    v = view(ALL_SERVER, taskmanager_configs=configs)  # both declare their resource already
    messages = [p.message for p in check(request_(network={"buffers_per_channel": 19}), v)]
    assert len(messages) == 1 and messages[0].startswith(
        f"flink.network: the TaskManager config of server lacks {BUFFERS_KEY}: 19: apply must write it"
    )
    plan = plan_apply(request_(consent=True, network={"buffers_per_channel": 19}), v, holder="t")
    assert plan.restarts == ("TaskManager on server",)
    config = next(s.action for s in plan.steps if isinstance(s.action, UploadFile))
    assert config.host == "server" and flatten(yaml.safe_load(config.content))[BUFFERS_KEY] == 19


@pytest.mark.parametrize("mode", ["vanilla", "custom"])
def test_the_reads_preflight_lists_name_every_taskmanager_config_flink_network_makes_it_read(request_, mode):
    # observe reads each planned TaskManager's config when flink.network differs from Flink's defaults, whatever
    # its external resource: the list a dry run prints must say so, not "only for a host ... lacks its resource"
    tm_reads = f"ssh <host>: cat {request_(mode=mode).paths.home}/conf/config.yaml"  # the JobManager's: "ssh server:"
    plain = [line for line in describe_reads(request_(mode=mode)) if line.startswith(tm_reads)]
    tuned = describe_reads(request_(mode=mode, network={"buffers_per_channel": 19}))
    assert [line for line in tuned if line.startswith(tm_reads)] == [
        f"{tm_reads} (Flink 1.19/1.20: flink-conf.yaml first, which they read instead where it exists)  (every "
        "TaskManager host of the plan: flink.network sets keys apart from Flink's defaults)"
    ]
    assert len(plain) == (1 if mode == "vanilla" else 0) and all("lacks its external resource" in x for x in plain)


def test_the_plans_note_names_the_key_apply_writes():
    from placement.costmodel.credit import CreditNeed, credit_notes
    from placement.costmodel.transport import FlinkNetwork
    from placement.inventory.network import FlinkNetworkSettings
    from placement.inventory.network import flink_config as network_config

    need = CreditNeed("rpi1→server", "S → M (1/1 → 1/1)", 8.0, 4.37, 19)
    setting = credit_notes([need], FlinkNetwork())[-1]
    written = network_config(FlinkNetworkSettings(buffers_per_channel=19))
    assert setting.startswith("set flink.network.buffers_per_channel: 19 (")
    assert f"({BUFFERS_KEY};" in setting and written == {BUFFERS_KEY: 19}
