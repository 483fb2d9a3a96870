"""The redeploy script: stop with a savepoint, install the placement, resubmit from the savepoint, wait for RUNNING.

Rendered from ``deploy/templates/redeploy.sh.tmpl`` with :class:`string.Template`. In ``custom`` mode the placement
is the schedulercfg, copied into the scheduler extension's directory on the JobManager host under the job's file name
(the previous one kept as ``.prev``; the extension reads it at the resubmission); in ``vanilla`` mode it is the
``--placement`` program argument the lab jobs read. The run request is a raw REST body with ``programArgsList``
(Flink 2.3 ignores ``programArgs``).
"""

from __future__ import annotations

import json
import posixpath
import shlex
from string import Template

from placement.flink_rest import run_request_body
from placement.inventory import Inventory
from placement.resources import repo_dir
from placement.scheduler.naming import schedulercfg_filename
from placement.writers.planjson import PlanDocument
from placement.writers.vanilla import placement_args

CUSTOM_INSTALL = """echo "2/4 installing schedulercfg as {path} on the JobManager host {target}"
scp -P {port} -o StrictHostKeyChecking=yes "$HERE/schedulercfg" {target}:{path_new}
ssh -p {port} -o StrictHostKeyChecking=yes {target} {remote}"""

VANILLA_INSTALL = """echo "2/4 vanilla placement: the mapping travels in programArgsList (--placement)\""""


def run_body(plan: PlanDocument, inv: Inventory) -> dict:
    """The REST body for ``POST /jars/<id>/run`` (``savepointPath`` is filled in by the script)."""
    args = list(inv.job.program_args)
    if plan.placement_mode == "vanilla":
        args += placement_args(plan)
    body = run_request_body(entry_class=inv.job.entry_class, program_args=args)
    # vanilla mode may split a source chain into per-host copies with new operator ids: their state cannot restore
    body["allowNonRestoredState"] = plan.placement_mode == "vanilla"
    return body


def render_redeploy(plan: PlanDocument, inv: Inventory) -> str:
    jm = inv.jobmanager_host
    ssh = inv.ssh_for(jm)
    if plan.placement_mode == "custom":
        target = shlex.quote(f"{ssh.user}@{jm.address}" if ssh.user else jm.address)
        path = posixpath.join(inv.flink.scheduler_directory, schedulercfg_filename(plan.job))
        remote = shlex.quote(
            f"set -e; [ -f {shlex.quote(path)} ] && cp -p {shlex.quote(path)} {shlex.quote(path + '.prev')}; "
            f"mv -f {shlex.quote(path + '.new')} {shlex.quote(path)}"
        )
        install = CUSTOM_INSTALL.format(target=target, port=ssh.port, path=shlex.quote(path), path_new=shlex.quote(path + ".new"), remote=remote)
    else:
        install = VANILLA_INSTALL
    template = Template((repo_dir("deploy") / "templates" / "redeploy.sh.tmpl").read_text(encoding="utf-8"))
    script = template.substitute(
        job=plan.job, tool=plan.tool, created_at=plan.created_at, mode=plan.placement_mode, rest_url=inv.flink.rest_url.rstrip("/"),
        savepoint_dir=inv.flink.savepoint_dir, install_block=install,
        install_step="put schedulercfg on the JobManager host" if plan.placement_mode == "custom" else "pass the mapping",
        run_body=json.dumps(run_body(plan, inv)),
    )
    return script.replace("set -euo pipefail\n", "set -euo pipefail\n" + _rescale_guard(plan), 1)


def _rescale_guard(plan: PlanDocument) -> str:
    """A rescaled plan in custom mode cannot be applied by a REST jar run: Flink 2.3 ignores
    ``pipeline.jobvertex-parallelism-overrides`` there (it applies them to submitted JobGraphs only; measured in
    tests/solver_rescale). The script refuses before it stops anything, rather than resubmit the old parallelism under
    a schedulercfg written for the new one. Vanilla mode passes the parallelism in the mapping (list lengths)."""
    if plan.placement_mode != "custom" or plan.rescale is None or not plan.rescale.changed:
        return ""
    changes = ", ".join(f"{name} {a}→{b}" for name, (a, b) in plan.rescale.changed.items())
    message = (f"this plan changes parallelism ({changes}); Flink 2.3's REST jar run ignores "
               "pipeline.jobvertex-parallelism-overrides, so this script cannot apply it: use placement apply")
    return f"echo {shlex.quote(message)} >&2\nexit 1\n"
