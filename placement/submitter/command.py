"""The submitter's command line (pure): what ``placement apply`` runs on the JobManager host, and its answer.

::

    java <JVM flags> -cp <submitter jar>:<flink home>/lib/* placement.submitter.SubmitJobGraph
         --rest-url URL --jar JOB.jar [--conf-dir DIR] [--entry-class C]
         [--parallelism-overrides ID:P,...] [--savepoint PATH] [--allow-non-restored-state] -- PROGRAM ARGS...

prints ``JOBID <32 hex>``; a failure is one ``error: ...`` line on stderr (exit 1; 2 for bad usage).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from placement.errors import PlacementError
from placement.flink.home import JAVA17_FLAGS
from placement.submitter.build import MAIN_CLASS

# Flink's Java 17 flags (compiling a job's graph runs its main and serialises its functions); a Java 11 JobManager
# host does not know some of them: ignore rather than fail.
JVM_FLAGS: tuple[str, ...] = ("-XX:+IgnoreUnrecognizedVMOptions", *JAVA17_FLAGS)
_JOB_ID = re.compile(r"^JOBID ([0-9a-f]{32})$", re.MULTILINE)


@dataclass(frozen=True)
class SubmitCall:
    """One resubmission through the submitter. ``overrides``: job vertex id -> parallelism (every planned vertex)."""

    java: str  # the java launcher on the host ("java", or <JAVA_HOME>/bin/java)
    submitter_jar: str  # path on the host
    flink_home: str  # the host's Flink home: its lib/ is the classpath
    conf_dir: str | None  # the JobManager's conf dir (config.yaml): the job is compiled with what a jar run would use
    rest_url: str
    job_jar: str  # path on the host
    entry_class: str | None
    program_args: tuple[str, ...]
    overrides: tuple[tuple[str, int], ...]
    allow_non_restored_state: bool = False

    def argv(self, savepoint: str | None) -> list[str]:
        classpath = f"{self.submitter_jar}:{posixpath.join(self.flink_home, 'lib', '*')}"  # java expands lib/*
        argv = [self.java, *JVM_FLAGS, "-cp", classpath, MAIN_CLASS, "--rest-url", self.rest_url, "--jar", self.job_jar]
        if self.conf_dir:
            argv += ["--conf-dir", self.conf_dir]
        if self.entry_class:
            argv += ["--entry-class", self.entry_class]
        if self.overrides:
            argv += ["--parallelism-overrides", overrides_text(dict(self.overrides))]
        if savepoint:
            argv += ["--savepoint", savepoint]
        if self.allow_non_restored_state:
            argv.append("--allow-non-restored-state")
        return [*argv, "--", *self.program_args]


def overrides_text(overrides: Mapping[str, int]) -> str:
    """``id:p,id:p`` (the value of ``pipeline.jobvertex-parallelism-overrides``), in a stable order."""
    return ",".join(f"{vid}:{p}" for vid, p in sorted(overrides.items()))


def job_id_from(stdout: str, stderr: str = "", returncode: int = 0) -> str:
    """The job id the submitter printed, or a one-line error with what it said instead."""
    found = _JOB_ID.findall(stdout)
    if returncode == 0 and len(found) == 1:
        return found[0]
    said = [line.strip() for line in stderr.splitlines() if line.strip()]
    error = next((line for line in said if line.startswith("error: ")), said[-1] if said else f"exit {returncode}")
    raise PlacementError(f"the JobGraph submitter failed: {error.removeprefix('error: ')}")


def java_launcher(java_home: str | None) -> str:
    return posixpath.join(java_home, "bin", "java") if java_home else "java"
