"""The redeploy script: stop with a savepoint, install the placement, resubmit from the savepoint, wait for RUNNING.

Rendered from ``deploy/templates/redeploy.sh.tmpl`` with :class:`string.Template`. In ``custom`` mode the placement
is the schedulercfg, copied into the scheduler extension's directory on the JobManager host under the job's file name
(the previous one kept as ``.prev``; the extension reads it at the resubmission); in ``vanilla`` mode it is the
``--placement`` program argument the lab jobs read. The run request is a raw REST body with ``programArgsList``
(Flink 2.3 ignores ``programArgs``).

A custom-mode plan that changes parallelism (``placement plan --rescale``) cannot be resubmitted by a REST jar run
(Flink 2.3 ignores ``pipeline.jobvertex-parallelism-overrides`` there). The script then does what ``placement apply``
does: it runs the JobGraph submitter (:mod:`placement.submitter`) on the JobManager host over ssh, with the plan's
parallelism per job vertex and the savepoint. Its JAR argument is then the job jar's absolute path on that host; the
submitter must be there (``<flink home>/placement/submitter/``, where apply installs it), and the script checks both
and ``java`` before it stops anything.
"""

from __future__ import annotations

import json
import posixpath
import shlex
from string import Template
from typing import Any

from placement.flink.jar_run import run_request_body
from placement.inventory import Inventory
from placement.resources import repo_dir
from placement.scheduler.naming import schedulercfg_filename
from placement.submitter import JAR_PREFIX, SubmitCall
from placement.writers.planjson import PlanDocument
from placement.writers.vanilla import placement_args

CUSTOM_INSTALL = """echo "2/4 installing schedulercfg as {path} on the JobManager host {target}"
scp -P {port} -o StrictHostKeyChecking=yes "$HERE/schedulercfg" {target}:{path_new}
ssh -p {port} -o StrictHostKeyChecking=yes {target} {remote}"""

VANILLA_INSTALL = """echo "2/4 vanilla placement: the mapping travels in programArgsList (--placement)\""""


def run_body(plan: PlanDocument, inv: Inventory) -> dict[str, Any]:
    """The REST body for ``POST /jars/<id>/run`` (``savepointPath`` is filled in by the script)."""
    args = list(inv.job.program_args)
    if plan.placement_mode == "vanilla":
        args += placement_args(plan)
    body = run_request_body(entry_class=inv.job.entry_class, program_args=args)
    # vanilla mode may split a source chain into per-host copies with new operator ids: their state cannot restore
    body["allowNonRestoredState"] = plan.placement_mode == "vanilla"
    return body


JAR_RUN = """echo "3/4 resubmitting $JAR_ID from the savepoint"
NEW_JOB=$(python3 - "$SAVEPOINT" <<'PY' | curl -fsS -X POST "$REST/jars/$JAR_ID/run" -H 'Content-Type: application/json' -d @- | jget jobid
import json, sys
body = json.loads(r'''@RUN_BODY@''')
body["savepointPath"] = sys.argv[1]
print(json.dumps(body))
PY
)
echo "    new job: $NEW_JOB\""""  # noqa: E501 - the curl pipeline is one line of the script the plan ships

RESCALE_CHECK = """case "$JAR_ID" in
  /*) ;;
  *) echo {refusal} >&2; exit 1 ;;
esac
JM_SSH=(ssh -p {port} -o StrictHostKeyChecking=yes -o ConnectTimeout=15 {target})
q() {{ python3 -c 'import shlex, sys; print(shlex.quote(sys.argv[1]))' "$1"; }}
echo "0/4 checking the JobManager host {jm}: the JobGraph submitter, the job jar, java"
if ! WHY=$("${{JM_SSH[@]}}" {check} "$(q "$JAR_ID")" 2>&1); then
  echo {cannot}"$WHY" >&2
  exit 1
fi"""

RESCALE_SUBMIT = """echo "3/4 resubmitting through the JobGraph submitter on {jm} at the plan's parallelism ({changes})"
if ! OUT=$("${{JM_SSH[@]}}" {submit} "$(q "$JAR_ID")" "$(q "$SAVEPOINT")" "$(q "$REST")" 2>&1); then
  echo "resubmission failed (job $JOB_ID is stopped; savepoint $SAVEPOINT): $OUT" >&2
  exit 1
fi
NEW_JOB=$(printf '%s\\n' "$OUT" | sed -n 's/^JOBID //p')
[ -n "$NEW_JOB" ] || {{ echo "the submitter printed no job id: $OUT" >&2; exit 1; }}
echo "    new job: $NEW_JOB\""""


def render_redeploy(plan: PlanDocument, inv: Inventory) -> str:
    jm = inv.jobmanager_host
    ssh = inv.ssh_for(jm)
    target = shlex.quote(f"{ssh.user}@{jm.address}" if ssh.user else jm.address)
    if plan.placement_mode == "custom":
        path = posixpath.join(inv.flink.scheduler_directory, schedulercfg_filename(plan.job))
        remote = shlex.quote(
            f"set -e; [ -f {shlex.quote(path)} ] && cp -p {shlex.quote(path)} {shlex.quote(path + '.prev')}; "
            f"mv -f {shlex.quote(path + '.new')} {shlex.quote(path)}"
        )
        install = CUSTOM_INSTALL.format(
            target=target, port=ssh.port, path=shlex.quote(path), path_new=shlex.quote(path + ".new"), remote=remote
        )
    else:
        install = VANILLA_INSTALL
    rescaled = plan.placement_mode == "custom" and plan.rescale is not None and bool(plan.rescale.changed)
    jar_arg, jar_help = "JAR_ID", "#   JAR_ID  the uploaded jar (see: curl -s {rest}/jars)"
    precheck, resubmit = "", JAR_RUN.replace("@RUN_BODY@", json.dumps(run_body(plan, inv)))
    if rescaled:
        jar_arg = "JOB_JAR"
        jar_help = (
            "#   JOB_JAR the job jar's absolute path on the JobManager host (the parallelism changes: resubmitted "
            "through the\n#           JobGraph submitter there, see `placement apply --help`)"
        )
        precheck, resubmit = rescale_blocks(plan, inv, target, ssh.port)
    template = Template((repo_dir("deploy") / "templates" / "redeploy.sh.tmpl").read_text(encoding="utf-8"))
    return template.substitute(
        job=plan.job,
        tool=plan.tool,
        created_at=plan.created_at,
        mode=plan.placement_mode,
        rest_url=inv.flink.rest_url.rstrip("/"),
        savepoint_dir=inv.flink.savepoint_dir,
        install_block=install,
        install_step="put schedulercfg on the JobManager host"
        if plan.placement_mode == "custom"
        else "pass the mapping",
        resubmit_step="resubmit through the JobGraph submitter" if rescaled else "resubmit from the savepoint",
        jar_arg=jar_arg,
        jar_help=jar_help.format(rest=inv.flink.rest_url.rstrip("/")),
        precheck_block=precheck,
        resubmit_block=resubmit,
    )


def rescale_blocks(plan: PlanDocument, inv: Inventory, target: str, port: int) -> tuple[str, str]:
    """The checks before the stop and the resubmission through the submitter on the JobManager host (over ssh)."""
    assert plan.rescale is not None
    jm = inv.jobmanager_host.name
    changes = ", ".join(f"{name} {a}→{b}" for name, (a, b) in plan.rescale.changed.items())
    home = inv.flink.home.rstrip("/") or "/"
    sub_dir = posixpath.join(home, "placement", "submitter")
    latest = f"S=$(ls -1 {shlex.quote(sub_dir)}/{JAR_PREFIX}-*.jar 2>/dev/null | tail -n 1)"
    check = (
        f'{latest}; [ -n "$S" ] || {{ echo "no JobGraph submitter in {sub_dir} (placement apply installs it; or '
        f'build it with python -m placement.submitter and copy it there)"; exit 1; }}; '
        '[ -f "$1" ] || { echo "no job jar $1"; exit 1; }; '
        'java -version >/dev/null 2>&1 || { echo "java does not run"; exit 1; }'
    )
    submit = shlex.join(["sh", "-c", f"{latest}; exec {submitter_java(plan, inv)}", "sh"])
    refusal = (
        f"this plan changes parallelism ({changes}): Flink 2.3's REST jar run cannot, so this script resubmits "
        f"it through the JobGraph submitter on the JobManager host {jm}; give JOB_JAR as the absolute path of "
        "the job's jar there (usage: redeploy.sh JOB_ID /path/on/the/jobmanager/job.jar)"
    )
    cannot = f"this plan changes parallelism ({changes}): cannot resubmit it through the JobGraph submitter on {jm}: "
    precheck = RESCALE_CHECK.format(
        refusal=shlex.quote(refusal),
        port=port,
        target=target,
        jm=jm,
        check=shlex.quote(shlex.join(["sh", "-c", check, "sh"])),
        cannot=shlex.quote(cannot),
    )
    return precheck, RESCALE_SUBMIT.format(jm=jm, changes=changes, submit=shlex.quote(submit))


def submitter_java(plan: PlanDocument, inv: Inventory) -> str:
    """The submitter's java command for a remote ``sh -c`` whose ``$S`` is the submitter jar it found and whose
    arguments are the job jar, the savepoint and the REST URL: every vertex at the plan's parallelism."""
    home = inv.flink.home.rstrip("/") or "/"
    overrides = plan.parallelism or {a.vertex_id: a.parallelism for a in plan.assignment}
    call = SubmitCall(
        java="java",
        submitter_jar="{S}",
        flink_home=home,
        conf_dir=posixpath.join(home, "conf"),
        rest_url="{3}",
        job_jar="{1}",
        entry_class=inv.job.entry_class,
        program_args=tuple(inv.job.program_args),
        overrides=tuple(sorted(overrides.items())),
    )
    java = shlex.join(call.argv("{2}"))
    for mark, var in (("{S}", "$S"), ("{1}", "$1"), ("{2}", "$2"), ("{3}", "$3")):
        java = java.replace(mark, f"'\"{var}\"'")  # inside a single-quoted word: close, the variable, reopen
    return java
