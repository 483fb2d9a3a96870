"""The submitter on a JobManager host reached over SSH, and redeploy.sh of a custom-mode plan that changes parallelism.

* apply's submitter command line, run over real SSH (sshd in a namespace, host key verified) with the lab jobs' jar:
  the JVM starts there with ``<flink home>/lib/*`` expanded by java (not the remote shell), compiles the job's graph,
  and a REST endpoint it cannot reach comes back as one line;
* redeploy.sh: instead of a REST jar run (which cannot change parallelism on Flink 2.3) the script resubmits through
  the same submitter on the JobManager host over ssh, and checks what it needs there before it stops anything. The
  script is rendered, parsed by bash, run up to its refusals, and its remote command's quoting is checked by a shell
  (a job resubmitted through the same command line: test_apply_rescale_lab.py).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from apply_support import JOB_ARGS, JOB_NAME, PLACED, SshLab
from test_apply_rescale_planner import IDS, RESCALED, rescaled_request

from placement.errors import PlacementError
from placement.flink.home import find_flink_home
from placement.inventory import SshSettings, load_inventory
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.remote import SshExecutor
from placement.submitter import SubmitCall, build_submitter, job_id_from
from placement.writers.planjson import load_plan
from placement.writers.redeploy import render_redeploy, submitter_java

CHANGES = "Source: Sensors 2→3, Parse 2→3, Filter 2→3, Enrich 2→3, Window Aggregate 2→1, Sink: Readings 2→1"


def script_for(tmp_path: Path, *, jobmanager: str = "10.204.9.2", ssh_port: int = 22) -> tuple[Path, Path]:
    req = rescaled_request(tmp_path)
    doc = yaml.safe_load(req.inventory_path.read_text())
    doc["hosts"][0]["address"] = jobmanager
    doc["ssh"] = {"port": ssh_port, "known_hosts": str(tmp_path / "known_hosts")}
    doc["flink"]["rest_url"] = "http://127.0.0.1:9"  # nothing listens: the script must refuse before any REST call
    inventory = tmp_path / "inventory-redeploy.yaml"
    inventory.write_text(yaml.safe_dump(doc))
    script = tmp_path / "redeploy.sh"
    script.write_text(render_redeploy(load_plan(req.plan_dir), load_inventory(inventory)))
    return script, inventory


def run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, timeout=60, check=False)


def test_the_script_resubmits_through_the_submitter_not_a_jar_run(tmp_path):
    script, _ = script_for(tmp_path)
    text = script.read_text()
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    assert "Usage: ./redeploy.sh JOB_ID JOB_JAR" in text and "/jars/$JAR_ID/run" not in text
    assert f"3/4 resubmitting through the JobGraph submitter on server at the plan's parallelism ({CHANGES})" in text
    assert "placement.submitter.SubmitJobGraph" in text and "--parallelism-overrides" in text
    # a plan that keeps parallelism: the REST jar run as before
    plain = tmp_path / "plain"
    plain.mkdir()
    keep = rescaled_request(plain, mapping=PLACED)
    kept = render_redeploy(load_plan(keep.plan_dir), keep.inventory)
    assert "/jars/$JAR_ID/run" in kept and "JobGraph submitter" not in kept


def test_it_refuses_before_the_stop_without_the_jar_path_or_when_the_jobmanager_host_cannot_run_the_submitter(tmp_path):
    script, _ = script_for(tmp_path, jobmanager="127.0.0.1", ssh_port=1)  # nothing listens on port 1
    relative = run(script, "a" * 32, "job.jar")
    assert relative.returncode == 1 and relative.stderr.count("\n") == 1, relative.stderr
    assert relative.stderr.startswith(f"this plan changes parallelism ({CHANGES}): Flink 2.3's REST jar run cannot")
    assert "give JOB_JAR as the absolute path of the job's jar there" in relative.stderr and relative.stdout == ""
    unreachable = run(script, "a" * 32, "/opt/flink/placement/jars/job.jar")
    assert unreachable.returncode == 1, unreachable.stderr
    assert unreachable.stderr.startswith(
        f"this plan changes parallelism ({CHANGES}): cannot resubmit it through the JobGraph submitter on server: "
    )
    assert "port 1" in unreachable.stderr and "1/4 stopping" not in unreachable.stdout  # nothing was stopped


def test_the_remote_command_quotes_what_the_remote_shell_fills_in_fake_java_stand_in(tmp_path):
    """The remote command, run by a real shell with a stand-in `java` that prints its arguments: the submitter jar
    it finds, the job jar, the savepoint and the REST URL land as whole arguments (spaces included)."""
    req = rescaled_request(tmp_path)
    home = tmp_path / "flink home"
    (home / "placement" / "submitter").mkdir(parents=True)
    submitter = home / "placement" / "submitter" / "placement-submitter-2.3.0-0123.jar"
    submitter.write_bytes(b"PK")
    doc = yaml.safe_load(req.inventory_path.read_text())
    doc["flink"]["home"] = str(home)
    inventory = tmp_path / "inv-home.yaml"
    inventory.write_text(yaml.safe_dump(doc))
    inv = load_inventory(inventory)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "java").write_text('#!/bin/sh\nfor a in "$@"; do printf \'%s\\n\' "$a"; done\n')
    (bin_dir / "java").chmod(0o755)
    latest = f"S=$(ls -1 {shlex.quote(str(home / 'placement' / 'submitter'))}/placement-submitter-*.jar | tail -n 1)"
    remote = f"{latest}; exec {submitter_java(load_plan(req.plan_dir), inv)}"
    args = ["/jobs dir/job.jar", "file:/save points/sp-1", "http://127.0.0.1:8081"]
    out = subprocess.run(
        ["sh", "-c", remote, "sh", *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    ).stdout.splitlines()
    want = SubmitCall(
        java="java",
        submitter_jar=str(submitter),
        flink_home=str(home),
        conf_dir=f"{home}/conf",
        rest_url=args[2],
        job_jar=args[0],
        entry_class=IOT_SENSOR_JOB,
        program_args=tuple(JOB_ARGS),
        overrides=tuple(sorted((IDS[v], len(h)) for v, h in RESCALED.items())),
    ).argv(args[1])
    assert out == want[1:]  # everything after the launcher itself
    assert JOB_NAME in out


@pytest.mark.netns
def test_the_submitter_runs_on_a_host_reached_over_ssh_and_fails_in_one_line(ssh_lab: SshLab, lab_jobs_jar, tmp_path):
    server = ssh_lab.hosts["server"]
    settings = SshSettings(user="root", key=str(ssh_lab.client_key), known_hosts=str(ssh_lab.known_hosts))
    home = find_flink_home()
    jar = build_submitter(home, tmp_path / "cache").path

    def submit(overrides: tuple[tuple[str, int], ...]) -> str:
        call = SubmitCall(
            java="java",
            submitter_jar=str(jar),
            flink_home=str(home.path),
            conf_dir=None,
            rest_url="http://127.0.0.1:9",
            job_jar=str(lab_jobs_jar),
            entry_class=IOT_SENSOR_JOB,
            program_args=tuple(JOB_ARGS),
            overrides=overrides,
        )
        with SshExecutor("server", server.address, settings) as ex:
            result = ex.run(call.argv("file:/nowhere/savepoint-1"), check=False, timeout=120)
        assert result.returncode == 1 and result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
        with pytest.raises(PlacementError) as failed:
            job_id_from(result.stdout, result.stderr, result.returncode)
        return str(failed.value)

    # the job's graph is compiled there: an id it does not have is refused, naming the ones it has
    unknown = submit(((IDS["Parse"], 3),))
    assert unknown.startswith(f"the JobGraph submitter failed: no job vertex {IDS['Parse']} in the compiled job graph")
    parse = re.search(r"([0-9a-f]{32}) Parse\b", unknown)
    assert parse, unknown
    # with the real id it gets to the submission: nothing listens on 127.0.0.1:9 in that host's namespace
    refused = submit(((parse.group(1), 3),))
    assert refused.startswith("the JobGraph submitter failed: ") and "127.0.0.1:9" in refused, refused
