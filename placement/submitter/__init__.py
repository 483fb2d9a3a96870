"""The JobGraph submitter: resubmit an unmodified job at another per-vertex parallelism, from a savepoint.

Flink 2.3's REST jar run ignores ``pipeline.jobvertex-parallelism-overrides`` (it submits a StreamGraph; the
Dispatcher applies the overrides to JobGraphs only — measured in tests/solver_rescale). The submitter, a small Java
program in ``submitter/`` at the repository top, compiles the job's JobGraph on the client with the overrides and the
savepoint and submits it over REST. ``placement apply`` builds it here (:func:`build_submitter`), installs it on the
JobManager host and runs it there (:class:`SubmitCall`); see ``submitter/README.md``.
"""

from __future__ import annotations

from placement.submitter.build import (
    JAR_PREFIX,
    MAIN_CLASS,
    SubmitterJar,
    build_submitter,
    submitter_jar_name,
)
from placement.submitter.command import (
    JVM_FLAGS,
    SubmitCall,
    java_launcher,
    job_id_from,
    overrides_text,
)

__all__ = [
    "JAR_PREFIX",
    "JVM_FLAGS",
    "MAIN_CLASS",
    "SubmitCall",
    "SubmitterJar",
    "build_submitter",
    "java_launcher",
    "job_id_from",
    "overrides_text",
    "submitter_jar_name",
]
