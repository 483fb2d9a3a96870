"""The cluster's Flink version: the inventory's pin (``flink.version``) where it has one, else the JobManager's answer.

The JobManager says which release it runs in REST ``GET /config`` (``flink-version``, the same field from 1.19 to 2.3).
Where both are known they must agree: a pin that differs from what runs is a stale inventory (an upgrade nobody wrote
down, or a pin for a cluster not yet upgraded), and everything built for the pin (the scheduler extension, the JobGraph
submitter) would not run there. Each function here says so in one line; the caller decides whether that refuses
(``apply``) or warns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from placement.errors import PlacementError
from placement.flink.versions import FlinkVersion, supported_version

if TYPE_CHECKING:  # annotations only: the pure checks need no HTTP client
    from placement.flink.rest import FlinkRest


def reported_version_text(config: dict) -> str | None:
    """``flink-version`` of a ``GET /config`` answer (None: the JobManager did not say)."""
    text = str(config.get("flink-version") or "").strip()
    return text or None


def running_version(rest: FlinkRest) -> FlinkVersion:
    """The release the JobManager behind ``rest`` runs; one line naming the supported lines when it is another."""
    return supported_version(reported_version_text(rest.config()), f"the JobManager at {rest.url} (GET /config)")


def pin_mismatch(pin: str | None, running: str | None, *, where: str, rest_url: str) -> str | None:
    """One line when the pin ``where`` (``inventory.yaml: flink.version``) and the running release differ, else None."""
    if pin is None or running is None or FlinkVersion.parse(pin) == FlinkVersion.parse(running):
        return None
    return (
        f"{where}: pinned to Flink {pin}, but the JobManager at {rest_url} runs {running} (correct the pin, or "
        "remove it to follow the JobManager)"
    )


def cluster_version(pin: str | None, rest: FlinkRest, *, where: str) -> FlinkVersion:
    """The cluster's release: the pin ``where`` (checked against the JobManager when it answers), else the
    JobManager's own answer. Raises :class:`~placement.errors.PlacementError` (one line) on a mismatch or an
    unsupported release."""
    if pin is None:
        return running_version(rest)
    pinned = supported_version(pin, where)
    try:
        running = reported_version_text(rest.config())
    except PlacementError:
        return pinned  # the JobManager is down (not installed yet, restarting): the pin is all there is
    mismatch = pin_mismatch(pin, running, where=where, rest_url=rest.url)
    if mismatch:
        raise PlacementError(mismatch)
    return pinned
