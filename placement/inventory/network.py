"""What the cluster's network stack lets cross a WAN link: ``flink.network:``.

A remote input channel may have only its credit (exclusive buffers plus its gate's floating ones) in flight per
round trip, so on a long uplink the buffers bound what a channel carries (placement.costmodel.transport). The plan
reads them here and :func:`flink_config` is what a writer of a Flink config sets, so the plan and the cluster agree.
Flink's defaults are the defaults.

``taskmanager.network.max-num-tcp-connections`` is not here on purpose: Flink picks a job edge's connection by a
random index per intermediate result modulo that number, so one job edge between two TaskManagers always rides one
connection, and several may still share one; a plan cannot count on more than one flow per TaskManager pair.
"""

from __future__ import annotations

from pydantic import Field

from placement.loading import Strict


class FlinkNetworkSettings(Strict):
    """``flink.network:`` — the taskmanager.network options that bound what crosses a WAN link."""

    buffers_per_channel: int = Field(
        2,
        ge=1,
        le=1000,
        description="exclusive buffers per remote input channel (taskmanager.network.memory.buffers-per-channel)",
    )
    floating_buffers_per_gate: int = Field(
        8,
        ge=0,
        le=10000,
        description="floating buffers per input gate (taskmanager.network.memory.floating-buffers-per-gate)",
    )


def flink_config(network: FlinkNetworkSettings) -> dict[str, object]:
    """The Flink config keys (flat, dotted) for ``network`` that differ from Flink's defaults: what every TaskManager
    gets. An inventory that keeps the defaults writes nothing, so a cluster set up before the block existed needs no
    change."""
    wanted = _keys(network)
    defaults = _keys(FlinkNetworkSettings())
    return {k: v for k, v in wanted.items() if v != defaults[k]}


def _keys(network: FlinkNetworkSettings) -> dict[str, object]:
    return {
        "taskmanager.network.memory.buffers-per-channel": int(network.buffers_per_channel),
        "taskmanager.network.memory.floating-buffers-per-gate": int(network.floating_buffers_per_gate),
    }
