"""The body of Flink's ``POST /jars/<id>/run``, apart from the REST client so that writing a plan's redeploy script
(which embeds it) does not import ``requests``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def run_request_body(
    *,
    entry_class: str | None = None,
    program_args: Sequence[str] = (),
    parallelism: int | None = None,
    savepoint_path: str | None = None,
    allow_non_restored_state: bool = False,
    flink_configuration: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The raw ``POST /jars/<id>/run`` body Flink 2.3 understands (``programArgsList``, camelCase keys)."""
    body: dict[str, Any] = {"programArgsList": [str(a) for a in program_args]}
    if entry_class:
        body["entryClass"] = entry_class
    if parallelism is not None:
        body["parallelism"] = int(parallelism)
    if savepoint_path:
        body["savepointPath"] = savepoint_path
        body["allowNonRestoredState"] = bool(allow_non_restored_state)
    if flink_configuration:
        body["flinkConfiguration"] = dict(flink_configuration)
    return body
