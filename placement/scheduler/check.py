"""Telling from outside whether a running JobManager uses the extension.

The replaced class loses silently when flink-dist comes first on the JobManager's classpath. ``GET
/jobmanager/environment`` lists that classpath in the JVM's order: the extension is in effect when one of its jars
comes before flink-dist (the application class loader takes a class from the first jar that has it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from placement.errors import PlacementError
from placement.flink.home import FlinkHome
from placement.scheduler.build import JAR_PREFIX

if TYPE_CHECKING:  # annotations only: writing a plan (schedulercfg naming) needs no HTTP client
    from placement.flink.port import FlinkPort


def classpath_order(classpath: list[str]) -> bool | None:
    """True: an extension jar before flink-dist; False: none, or after flink-dist; None: no flink-dist listed."""
    names = [PurePosixPath(entry).name for entry in classpath]
    dist = next((n for n, name in enumerate(names) if name.startswith("flink-dist")), None)
    if dist is None:
        return None
    return any(name.startswith(JAR_PREFIX + "-") and name.endswith(".jar") for name in names[:dist])


def jobmanager_classpath(rest: FlinkPort) -> list[str] | None:
    """The JobManager JVM's classpath entries in order, or None where the endpoint does not say."""
    try:
        body = rest.get("/jobmanager/environment")
    except PlacementError:
        return None
    classpath = body.get("classpath") if isinstance(body, dict) else None
    if isinstance(classpath, str):
        return [c for c in classpath.split(":") if c]
    if isinstance(classpath, list):
        return [str(c) for c in classpath]
    return None


def extension_active(rest: FlinkPort) -> bool | None:
    """Whether the JobManager behind ``rest`` places jobs with the extension (None: it cannot be told)."""
    classpath = jobmanager_classpath(rest)
    return None if classpath is None else classpath_order(classpath)


PREFIX = "placement scheduler: "  # every message of the extension starts with it (PlacementSchedulerException)


def extension_message(text: str) -> str | None:
    """The extension's one-line message inside an error text, e.g. a :class:`~placement.flink.rest.FlinkRestError` of
    ``POST /jars/<id>/run`` (a job whose schedulercfg is wrong is refused at submission: HTTP 400, the message in its
    last "Caused by"), or None."""
    at = text.find(PREFIX)
    if at < 0:
        return None
    message = text[at:].splitlines()[0].strip()
    if "(Caused by: " in text[:at] and message.endswith(")"):
        message = message[:-1]  # FlinkRestError puts the cause in parentheses
    return message


def extension_error(rest: FlinkPort, job_id: str) -> str | None:
    """The extension's message among a job's failures (a malformed schedulercfg, an unplaced subtask, an unknown
    TaskManager, a version mismatch), or None. Flink wraps it (JobInitializationException, ...); this digs it out."""
    try:
        body = rest.exceptions(job_id)
    except PlacementError:
        return None
    texts = [body.get("root-exception") or ""]
    for entry in (body.get("exceptionHistory") or {}).get("entries") or []:
        texts.append(entry.get("stacktrace") or "")
        texts.extend(c.get("stacktrace") or "" for c in entry.get("concurrentExceptions") or [])
    for text in texts:
        found = extension_message(text)
        if found:
            return found
    return None


@dataclass(frozen=True)
class ExtensionStatus:
    """What ``placement scheduler status`` reports."""

    flink_home: Path
    flink_version: str | None
    installed: Path | None
    built_for: str | None  # the Flink version the installed jar was built for
    digest: str | None
    rest_url: str | None = None
    active: bool | None = None  # the running JobManager loads it (None: not asked, or cannot tell)
    scheduler_dir: str | None = None  # the running JobManager's placement.scheduler.dir

    @property
    def version_ok(self) -> bool:
        return self.installed is not None and self.built_for == self.flink_version


def extension_status(home: FlinkHome, rest: FlinkPort | None = None) -> ExtensionStatus:
    from placement.scheduler.build import jar_info
    from placement.scheduler.install import installed_extension
    from placement.scheduler.naming import SCHEDULER_DIR_KEY

    jar = installed_extension(home)
    info = jar_info(jar) if jar is not None else None
    active = scheduler_dir = None
    if rest is not None:
        active = extension_active(rest)
        try:
            scheduler_dir = rest.jobmanager_config().get(SCHEDULER_DIR_KEY)
        except PlacementError:
            scheduler_dir = None
    return ExtensionStatus(
        home.path,
        home.version,
        jar,
        info.flink_version if info else None,
        info.digest if info else None,
        rest.url if rest is not None else None,
        active,
        scheduler_dir,
    )
