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

from placement.apply.model import (
    ClusterView,
    HostConfigView,
    RestoreFile,
    SshCommand,
    SubmitJob,
    TaskManagerView,
    UploadFile,
)
from placement.apply.planner import new_program_args, plan_apply
from placement.apply.preflight import check, config_satisfies, slots_needed
from placement.apply.request import load_request
from placement.lab.jobs import IOT_SENSOR_JOB


def inventory(tmp: Path, mode: str = "vanilla") -> Path:
    jar = tmp / "job.jar"
    jar.write_bytes(b"PK")
    doc = {
        "version": 1, "name": "pure",
        "hosts": [{"name": "server", "address": "10.204.9.2", "role": "server", "cores": 4, "memory": "4GiB"},
                  {"name": "rpi1", "address": "10.204.9.6", "role": "edge", "model": "rpi4b"}],
        "links": [{"from": "rpi1", "to": "server", "bandwidth": "50mbit"}],
        "flink": {"rest_url": "http://127.0.0.1:8081", "home": "/opt/flink", "placement_mode": mode},
        "job": {"name": JOB_NAME, "jar": str(jar), "entry_class": IOT_SENSOR_JOB, "program_args": JOB_ARGS},
    }
    path = tmp / "inv.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def tm(name: str, resource: float, *, slots: int = 4, used: float = 0.0) -> TaskManagerView:
    ext = {name: resource} if resource else {}
    free_ext = {name: resource - used} if resource else {}
    return TaskManagerView(name, slots, slots, {"cpuCores": 4.0, "taskHeapMemory": 192, "extendedResources": ext},
                           {"cpuCores": 4.0, "taskHeapMemory": 192, "extendedResources": free_ext})


def view(mapping: dict[str, list[str]], **kw) -> ClusterView:
    actual = dict(Counter((v, h) for v, hosts in mapping.items() for h in hosts))
    base = {"job_id": "j1", "job_name": JOB_NAME, "job_state": "RUNNING", "vertices": {v: len(h) for v, h in mapping.items()},
            "actual": actual, "taskmanagers": {"server": tm("server", 16), "rpi1": tm("rpi1", 16)}, "other_jobs": (),
            "jar_ids": (), "state_record": None, "schedulercfg": None, "jobmanager_config": None}
    return ClusterView(**(base | kw))


@pytest.fixture
def request_(tmp_path):
    def make(mapping=PLACED, mode="vanilla", consent=False):
        inv = inventory(tmp_path, mode)
        plan = write_plan_dir(tmp_path / f"plan-{mode}", inv, mapping)
        return load_request(plan, inv, consent=consent)
    return make


def test_a_taskmanager_without_its_resource_needs_consent_then_gets_config_and_restart(request_):
    tm_config = HostConfigView("rpi1", "/opt/flink/conf/config.yaml", "taskmanager:\n  numberOfTaskSlots: 4\n")
    v = view(ALL_SERVER, taskmanagers={"server": tm("server", 16), "rpi1": tm("rpi1", 0)}, taskmanager_configs={"rpi1": tm_config})
    problems = check(request_(), v)
    assert [p.message for p in problems] == [(
        "TaskManager rpi1 does not declare external resource 'rpi1': apply must set taskmanager.resource-id, "
        "external-resources, external-resource.rpi1.amount in rpi1:/opt/flink/conf/config.yaml and restart its "
        "TaskManager; pass --yes to allow the restart")]
    req = request_(consent=True)
    assert check(req, v) == []
    plan = plan_apply(req, v, holder="t")
    kinds = [(s.phase, s.action.kind) for s in plan.steps]
    assert kinds == [("prepare", "lock"), ("prepare", "upload-jar"), ("stop", "stop"), ("install", "upload"),
                     ("install", "ssh"), ("install", "ssh"), ("install", "wait-tms"), ("redeploy", "submit"),
                     ("redeploy", "wait"), ("verify", "verify"), ("finish", "record"), ("finish", "unlock")]
    upload = plan.steps[3].action
    assert isinstance(upload, UploadFile) and upload.host == "rpi1" and upload.path == "/opt/flink/conf/config.yaml"
    written = yaml.safe_load(upload.content)
    assert written["taskmanager"]["numberOfTaskSlots"] == 4 and written["taskmanager"]["resource-id"] == "rpi1"
    assert written["external-resources"] == ["rpi1"] and written["external-resource"]["rpi1"]["amount"] == 4
    assert [s.action.argv for s in plan.steps[4:6]] == [("/opt/flink/bin/taskmanager.sh", "stop"), ("/opt/flink/bin/taskmanager.sh", "start")]
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
    other = view(ALL_SERVER, other_jobs=("j2",), taskmanagers={"server": tm("server", 16), "rpi1": tm("rpi1", 16, used=15)})
    messages = [p.message for p in check(request_(), other)]
    assert messages == ["TaskManager rpi1: 1 of external resource 'rpi1' free, the plan needs 2"]
    missing = view(ALL_SERVER, taskmanagers={"server": tm("server", 16)})
    assert [p.message for p in check(request_(), missing)] == [
        "no TaskManager with resource id 'rpi1' is registered (registered: server)"]


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


def test_custom_mode_plans_the_schedulercfg_and_a_jobmanager_restart_only_when_needed(request_):
    req = request_(mode="custom", consent=True)
    jm_default = HostConfigView("server", "/opt/flink/conf/config.yaml", "jobmanager:\n  scheduler: default\n")
    plan = plan_apply(req, view(ALL_SERVER, jobmanager_config=jm_default), holder="t")
    uploads = [s.action for s in plan.steps if isinstance(s.action, UploadFile)]
    assert [u.path for u in uploads] == ["/opt/flink/scripts/schedulercfg", "/opt/flink/conf/config.yaml"]
    assert uploads[0].content == (req.plan_dir / "schedulercfg").read_text()
    assert yaml.safe_load(uploads[1].content) == {"jobmanager": {"scheduler": "Custom"}}
    assert plan.restarts == ("JobManager on server",)
    jm_custom = HostConfigView("server", "/opt/flink/conf/config.yaml", "jobmanager.scheduler: Custom\n")
    plan = plan_apply(req, view(ALL_SERVER, jobmanager_config=jm_custom), holder="t")
    assert [s.action.path for s in plan.steps if isinstance(s.action, UploadFile)] == ["/opt/flink/scripts/schedulercfg"]
    assert plan.restarts == () and not any("--placement" in s.describe() for s in plan.steps if isinstance(s.action, SubmitJob))


def test_slot_and_config_arithmetic():
    assert slots_needed({("A", "rpi1"): 2, ("B", "rpi1"): 3, ("A", "server"): 1}) == {"rpi1": 3, "server": 1}
    wanted = {"taskmanager.resource-id": "rpi1", "external-resources": "rpi1", "external-resource.rpi1.amount": 4}
    assert config_satisfies({"taskmanager.resource-id": "rpi1", "external-resources": ["gpu", "rpi1"],
                             "external-resource.rpi1.amount": 16}, wanted) == []
    assert config_satisfies({"taskmanager.resource-id": "rpi1", "external-resources": "gpu;rpi1",
                             "external-resource.rpi1.amount": 2}, wanted) == ["external-resource.rpi1.amount"]
