"""The inputs of ``placement apply``, read and checked before anything touches the cluster.

:func:`load_request` reads the plan directory (plan.json, and schedulercfg or vanilla/<host>.yaml as the plan's mode
needs) and the inventory; every problem is a one-line :class:`~placement.errors.BadInput` naming the file and field.
Where things live on the hosts is derived here from the inventory (:class:`RemotePaths`), in one place.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import yaml

from placement.apply.plan_checks import check_assignment, check_plan_targets_its_job, check_schedulercfg
from placement.errors import BadInput
from placement.flink.config import flatten
from placement.flink.options import CONFIG_YAML
from placement.inventory import Inventory, load_inventory
from placement.scheduler import TASKMANAGERS_FILENAME, schedulercfg_filename
from placement.scheduler.naming import file_stem
from placement.writers.planjson import PlanDocument, load_plan


@dataclass(frozen=True)
class RemotePaths:
    """Files apply reads and writes on the hosts (under the Flink home of the inventory, and the scheduler dir)."""

    home: str
    scheduler_dir: str  # the extension's dir on the JobManager host: <job>.schedulercfg files and taskmanagers.cfg
    savepoint_dir: str  # the inventory's URI, e.g. file:///opt/flink/savepoints

    def schedulercfg_for(self, job_name: str) -> str:
        """The file the extension reads for the job called ``job_name``."""
        return posixpath.join(self.scheduler_dir, schedulercfg_filename(job_name))

    @property
    def taskmanagers_table(self) -> str:
        return posixpath.join(self.scheduler_dir, TASKMANAGERS_FILENAME)

    @property
    def lib(self) -> str:
        return posixpath.join(self.home, "lib")

    @property
    def state_dir(self) -> str:
        return posixpath.join(self.home, "placement")

    @property
    def lock(self) -> str:
        return posixpath.join(self.state_dir, "apply.lock")

    @property
    def state(self) -> str:
        return posixpath.join(self.state_dir, "state.json")

    def state_for(self, job_name: str) -> str:
        """A fleet job's own state file, one per job name (:func:`file_stem`: distinct names, distinct files)."""
        return posixpath.join(self.state_dir, f"state.{file_stem(job_name)}.json")

    @property
    def conf_dir(self) -> str:
        return posixpath.join(self.home, "conf")

    @property
    def config(self) -> str:
        """``config.yaml``, the config file every supported Flink reads (1.19/1.20 read ``flink-conf.yaml`` instead
        where it exists: :func:`placement.flink.options.config_file_names`)."""
        return posixpath.join(self.conf_dir, CONFIG_YAML)

    def conf_file(self, name: str) -> str:
        return posixpath.join(self.conf_dir, name)

    def daemon(self, which: str) -> str:
        return posixpath.join(self.home, "bin", f"{which}.sh")

    @property
    def savepoint_path(self) -> str | None:
        """The local path of a ``file://`` savepoint directory (None for other schemes, e.g. s3://)."""
        uri = urlparse(self.savepoint_dir)
        if uri.scheme in ("", "file"):
            return uri.path or None
        return None

    @classmethod
    def of(cls, inv: Inventory) -> RemotePaths:
        return cls(
            home=inv.flink.home.rstrip("/") or "/",
            scheduler_dir=inv.flink.scheduler_directory,
            savepoint_dir=inv.flink.savepoint_dir,
        )


@dataclass(frozen=True)
class JobSelector:
    job_id: str | None = None
    job_name: str | None = None


@dataclass(frozen=True)
class ApplyRequest:
    plan: PlanDocument
    plan_dir: Path
    plan_fingerprint: str  # sha256 of plan.json's bytes: what the state file records
    inventory: Inventory
    inventory_path: Path
    selector: JobSelector
    jar_path: Path | None
    jar_id: str | None
    consent: bool  # --yes: restarts allowed
    schedulercfg: str | None  # DIR/schedulercfg (custom mode), checked: every planned subtask has its line
    vanilla_configs: dict[str, dict[str, object]] = field(default_factory=dict)  # host -> DIR/vanilla/<host>.yaml keys
    stale_lock_after_s: float = 1800.0
    settle_s: float = 10.0  # after verify: the job must stay RUNNING, without a restart, this long
    # the state file apply records this job in (None: the cluster's one, state.json); a fleet's jobs each have their
    # own, so that applying one does not overwrite what the roll back of another needs (its previous arguments)
    state_file: str | None = None

    @property
    def paths(self) -> RemotePaths:
        return RemotePaths.of(self.inventory)

    @property
    def state_paths(self) -> tuple[str, ...]:
        """Where this job's record is read — the file it is written to first, then the cluster's one, then the one a
        fleet's apply keeps for a job of this name (so one job's apply after a fleet's knows the job's arguments);
        the first record of the running job wins."""
        name = self.selector.job_name or self.inventory.job.name
        own = self.paths.state_for(name) if name else None
        return tuple(dict.fromkeys(p for p in (self.state_file or self.paths.state, self.paths.state, own) if p))

    @property
    def mode(self) -> str:
        return self.plan.placement_mode


def load_request(
    plan_dir: str | Path,
    inventory_path: str | Path,
    *,
    job_id: str | None = None,
    job_name: str | None = None,
    jar: str | None = None,
    jar_id: str | None = None,
    consent: bool = False,
    settle_s: float = 10.0,
) -> ApplyRequest:
    plan_dir = Path(plan_dir)
    if not plan_dir.exists():
        raise BadInput("no such plan directory", source=str(plan_dir))
    plan_file = plan_dir / "plan.json" if plan_dir.is_dir() else plan_dir
    if plan_file.is_file() is False:
        raise BadInput("no plan.json in the plan directory (run `placement plan --out DIR`)", source=str(plan_dir))
    plan_dir = plan_file.parent
    inventory = load_inventory(inventory_path)
    plan = load_plan(plan_file)
    check_plan_is_current(plan, plan_file, inventory, Path(inventory_path))
    inventory = inventory.for_job(plan.job)
    check_plan_targets_its_job(
        plan, inventory, Path(inventory_path), named=bool(job_id or job_name), plan_file=plan_file
    )
    if job_id and job_name:
        raise BadInput("give --job or --job-name, not both")
    if jar and jar_id:
        raise BadInput("give --jar or --jar-id, not both")
    jar_path = jar_path_for(jar, inventory, Path(inventory_path)) if not jar_id else None

    check_assignment(plan, inventory, source=str(plan_file))

    schedulercfg = None
    vanilla: dict[str, dict[str, object]] = {}
    if plan.placement_mode == "custom":
        cfg = plan_dir / "schedulercfg"
        if not cfg.is_file():
            raise BadInput("missing (custom mode needs the schedulercfg written by `placement plan`)", source=str(cfg))
        schedulercfg = cfg.read_text(encoding="utf-8")
        check_schedulercfg(schedulercfg, plan, inventory, source=str(cfg))
    else:
        for host in sorted({a.host for a in plan.assignment}):
            path = plan_dir / "vanilla" / f"{host}.yaml"
            if not path.is_file():
                raise BadInput(
                    "missing (vanilla mode needs each host's TaskManager config written by `placement plan`)",
                    source=str(path),
                )
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except yaml.YAMLError as exc:
                raise BadInput(f"not valid YAML: {str(exc).splitlines()[0]}", source=str(path)) from None
            if not isinstance(data, dict):
                raise BadInput("expected a mapping of Flink config keys", source=str(path))
            vanilla[host] = flatten(data)
    return ApplyRequest(
        plan=plan,
        plan_dir=plan_dir,
        plan_fingerprint="sha256:" + hashlib.sha256(plan_file.read_bytes()).hexdigest(),
        inventory=inventory,
        inventory_path=Path(inventory_path),
        selector=JobSelector(job_id, job_name),
        jar_path=jar_path,
        jar_id=jar_id,
        consent=consent,
        schedulercfg=schedulercfg,
        vanilla_configs=vanilla,
        settle_s=settle_s,
    )


def check_plan_is_current(plan: PlanDocument, plan_file: Path, inventory: Inventory, inventory_path: Path) -> None:
    """A plan made from another inventory is stale: found offline, before any host or REST call (a dry run against
    a cluster that is down must still say so, not that Flink REST is not up)."""
    digest = inventory.digest()
    if plan.inventory.digest != digest:
        raise BadInput(
            f"stale plan: made from inventory {plan.inventory.digest[:19]}…, but {inventory_path} is "
            f"{digest[:19]}… (the inventory changed since `placement plan`; plan again)",
            source=str(plan_file),
            field="inventory.digest",
        )


def jar_path_for(jar: str | None, inv: Inventory, inventory_path: Path) -> Path | None:
    if jar:
        path = Path(jar).expanduser()
        if not path.is_file():
            raise BadInput("no such jar", source=str(path), field="--jar")
        return path
    if inv.job.jar:
        for candidate in (Path(inv.job.jar).expanduser(), inventory_path.parent / inv.job.jar):
            if candidate.is_file():
                return candidate
        raise BadInput(
            f"no such jar {inv.job.jar!r} (give --jar PATH or --jar-id ID)", source=str(inventory_path), field="job.jar"
        )
    return None  # preflight says that a jar is needed
