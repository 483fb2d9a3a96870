"""How fast the cluster notices a lost Pi, restarts the job and lets the Pi back in: ``flink.failure_detection:``.

:class:`FailureDetection` is the inventory block (edge defaults below); :func:`flink_config` is the one pure mapping
from it to Flink config keys, used by every writer of a Flink config — the lab's cluster (``placement.lab.flink``),
``placement apply``'s config edits (``placement.apply.planner``) and the Ansible role (through the exported
``flink_failure_detection_config``; the role's own defaults are that mapping of the defaults, checked by tests) — so
the three never disagree.

Every key exists in every supported line (1.19 to 2.3, read with ``javap`` from each line's option classes) and every
duration is written as plain milliseconds: 1.19 reads ``heartbeat.*``, ``slot.request.timeout`` and
``cluster.registration.*`` as ``Long`` milliseconds and refuses ``"10 s"``; later lines read them as ``Duration``s,
which take a bare number as milliseconds (:func:`placement.flink.options.duration`).

The edge defaults fit detect + restart + restore in about 30 s:

* **Detect.** A TaskManager whose process died (the host still answers: its RPC port refuses) is noticed after
  ``rpc_failure_threshold`` failed heartbeat RPCs, ``2 × 2 s = 4 s``; one that went silent (power, uplink) after
  ``heartbeat_timeout``, 10 s (Flink: 10 s interval, 50 s timeout).
* **Restart.** ``exponential-delay`` from 1 s, doubling to at most 10 s, 10 attempts before the backoff resets
  (after 10 min of running without a failure): the first restart may come before the loss is noticed (a downstream
  task sees the connection drop first) and fail, the next ones find the contingency placement's hosts. Unlike
  ``fixed-delay``, whose attempts count over the job's whole life, the bound resets: a Pi lost once a week never
  exhausts it. (Flink 1.19's ``attempts-before-reset-backoff`` exists from 1.19 on.)
* **Slots.** A slot request fails after 15 s (Flink: 5 min), so an attempt stuck on an unservable request is retried
  within the budget; it must outlive a heartbeat timeout, or requests fail while a loss is still being decided.
* **Rejoin.** A TaskManager shuts itself down after ``taskmanager.registration.timeout`` without a ResourceManager
  (Flink: 5 min) — a Pi whose uplink was down longer would need its service restarted. 7 days keeps it retrying
  (a finite figure: the RPC scheduler refuses delays beyond ~248 days); ``cluster.registration.max-timeout`` 5 s
  (Flink: 30 s) and ``error-delay`` 1 s (Flink: 10 s) bound how long after the link returns it tries again.

The trade-off: a 10 s timeout makes an LTE link that stalls for more than 10 s look like a lost Pi, and the job is
restarted with that Pi's subtasks moved to their contingency hosts — a needless move, undone only by the next apply.
Raise ``heartbeat_timeout`` on links that stall (Flink's own 50 s waits out most outages, at 50 s per real loss).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator, model_validator

from placement.flink.options import duration
from placement.loading import FieldError, Strict
from placement.units import DurationMs


def _whole_ms(v: float) -> float:
    if v <= 0 or v != int(v):
        raise ValueError(f"{v:g} ms: a duration must be a positive whole number of milliseconds")
    return v


class RestartSettings(Strict):
    """The restart strategy: how often and how soon a failed job (a lost Pi) is restarted."""

    strategy: Literal["exponential-delay", "fixed-delay"] = Field(
        "exponential-delay",
        description="exponential-delay: initial_delay doubling (multiplier) to max_delay, attempts "
        "before the backoff resets after reset_after without a failure | fixed-delay: initial_delay between attempts, "
        "attempts over the job's life",
    )
    initial_delay: DurationMs = Field(1000.0, description="ms before the first restart ('1s' accepted)")
    max_delay: DurationMs = Field(10_000.0, description="exponential-delay: the longest delay between restarts")
    multiplier: float = Field(2.0, ge=1, le=100, description="exponential-delay: the delay's growth per restart")
    jitter: float = Field(
        0.1, ge=0, le=1, description="exponential-delay: random share of the delay (jobs do not restart in lockstep)"
    )
    attempts: int = Field(
        10,
        ge=1,
        description="restarts before the job fails (exponential-delay: before the backoff "
        "resets; fixed-delay: in total)",
    )
    reset_after: DurationMs = Field(
        600_000.0,
        description="exponential-delay: running this long without a failure resets the delay and the attempts",
    )

    @field_validator("initial_delay", "max_delay", "reset_after")
    @classmethod
    def _whole(cls, v: float) -> float:
        return _whole_ms(v)

    @model_validator(mode="after")
    def _ordered(self) -> RestartSettings:
        if self.strategy == "exponential-delay" and self.max_delay < self.initial_delay:
            raise FieldError("max_delay", f"{self.max_delay:g} ms is below initial_delay {self.initial_delay:g} ms")
        return self


class RejoinSettings(Strict):
    """How a TaskManager cut off from the JobManager (a partitioned uplink) gets back in without a restart."""

    registration_timeout: DurationMs = Field(
        7 * 86_400_000.0,
        description="a TaskManager without a ResourceManager this long shuts down "
        "(taskmanager.registration.timeout; Flink's 5 min would end a Pi whose uplink is down longer)",
    )
    retry_max: DurationMs = Field(
        5_000.0,
        description="the longest wait for one registration attempt "
        "(cluster.registration.max-timeout): how late after the link returns it tries again",
    )
    error_delay: DurationMs = Field(
        1_000.0, description="the pause after a failed registration attempt (cluster.registration.error-delay)"
    )

    @field_validator("registration_timeout", "retry_max", "error_delay")
    @classmethod
    def _whole(cls, v: float) -> float:
        return _whole_ms(v)

    @field_validator("registration_timeout")
    @classmethod
    def _schedulable(cls, v: float) -> float:
        if v > 200 * 86_400_000:  # Flink schedules it on its RPC system's timer, which refuses delays beyond ~248 days
            raise ValueError(f"{v:g} ms is more than 200 days (Flink's RPC timer refuses such delays)")
        return v


class FailureDetection(Strict):
    """``flink.failure_detection:`` — heartbeats, slot requests, restarts and rejoining (defaults for the edge)."""

    heartbeat_interval: DurationMs = Field(2_000.0, description="between heartbeat RPCs (heartbeat.interval)")
    heartbeat_timeout: DurationMs = Field(
        10_000.0,
        description="a TaskManager silent this long is lost (heartbeat.timeout): what a powered-off Pi or a "
        "lost uplink costs to notice; an uplink that stalls longer reads as a lost Pi",
    )
    rpc_failure_threshold: int = Field(
        2,
        description="consecutive failed heartbeat RPCs that mark a TaskManager lost before the timeout (a dead "
        "process: its port refuses), heartbeat.rpc-failure-threshold; -1 turns it off",
    )
    slot_request_timeout: DurationMs | None = Field(
        None,
        description="a slot request that no TaskManager serves fails after this (slot.request.timeout), and "
        "the job restarts; at least heartbeat_timeout (default: 15 s, or heartbeat_timeout + 5 s where that is longer)",
    )
    restart: RestartSettings = Field(default_factory=RestartSettings)
    rejoin: RejoinSettings = Field(default_factory=RejoinSettings)

    @field_validator("heartbeat_interval", "heartbeat_timeout", "slot_request_timeout")
    @classmethod
    def _whole(cls, v: float | None) -> float | None:
        return None if v is None else _whole_ms(v)

    @field_validator("rpc_failure_threshold")
    @classmethod
    def _threshold(cls, v: int) -> int:
        if v < 1 and v != -1:
            raise ValueError(f"{v} is neither a count of failed RPCs (>= 1) nor -1 (off)")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> FailureDetection:
        if self.heartbeat_timeout <= self.heartbeat_interval:
            raise FieldError(
                "heartbeat_timeout",
                f"{self.heartbeat_timeout:g} ms must be above heartbeat_interval "
                f"{self.heartbeat_interval:g} ms (a timeout within one interval loses every TaskManager)",
            )
        if (
            self.rpc_failure_threshold > 0
            and self.rpc_failure_threshold * self.heartbeat_interval >= self.heartbeat_timeout
        ):
            raise FieldError(
                "rpc_failure_threshold",
                f"{self.rpc_failure_threshold} failed RPCs × heartbeat_interval "
                f"{self.heartbeat_interval:g} ms is not below heartbeat_timeout {self.heartbeat_timeout:g} ms: "
                "the timeout always fires first (lower it, or -1 for off)",
            )
        if self.slot_request_timeout is not None and self.slot_request_timeout < self.heartbeat_timeout:
            raise FieldError(
                "slot_request_timeout",
                f"{self.slot_request_timeout:g} ms is below heartbeat_timeout "
                f"{self.heartbeat_timeout:g} ms: slot requests would fail while a loss is still undecided",
            )
        return self

    @property
    def slot_request_timeout_ms(self) -> float:
        """The slot request timeout: as given, else 15 s, or heartbeat_timeout + 5 s where that is longer."""
        if self.slot_request_timeout is not None:
            return self.slot_request_timeout
        return max(15_000.0, self.heartbeat_timeout + 5_000.0)

    @property
    def dead_process_detection_ms(self) -> float:
        """When a TaskManager whose process died is noticed (failed RPCs), or the timeout when that is off."""
        if self.rpc_failure_threshold > 0:
            return self.rpc_failure_threshold * self.heartbeat_interval
        return self.heartbeat_timeout


def _ms(value: float) -> int:
    return duration(timedelta(milliseconds=value))


def flink_config(fd: FailureDetection) -> dict[str, object]:
    """The Flink config keys (flat, dotted) for ``fd``: what the JobManager and every TaskManager get. Durations are
    plain milliseconds, the one form every supported line (1.19 to 2.3) parses."""
    r = fd.restart
    restart: dict[str, object]
    if r.strategy == "exponential-delay":
        prefix = "restart-strategy.exponential-delay."
        restart = {
            "restart-strategy.type": "exponential-delay",
            prefix + "initial-backoff": _ms(r.initial_delay),
            prefix + "max-backoff": _ms(r.max_delay),
            prefix + "backoff-multiplier": float(r.multiplier),
            prefix + "jitter-factor": float(r.jitter),
            prefix + "reset-backoff-threshold": _ms(r.reset_after),
            prefix + "attempts-before-reset-backoff": int(r.attempts),
        }
    else:
        restart = {
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": int(r.attempts),
            "restart-strategy.fixed-delay.delay": _ms(r.initial_delay),
        }
    return {
        "heartbeat.interval": _ms(fd.heartbeat_interval),
        "heartbeat.timeout": _ms(fd.heartbeat_timeout),
        "heartbeat.rpc-failure-threshold": int(fd.rpc_failure_threshold),
        "slot.request.timeout": _ms(fd.slot_request_timeout_ms),
        **restart,
        "taskmanager.registration.timeout": _ms(fd.rejoin.registration_timeout),
        "cluster.registration.max-timeout": _ms(fd.rejoin.retry_max),
        "cluster.registration.error-delay": _ms(fd.rejoin.error_delay),
    }


# The keys any setting of the block may write (both strategies'): what a writer replaces, so that switching
# strategy leaves no stale key of the other behind where it edits a file.
ALL_KEYS = tuple(
    dict.fromkeys(
        [
            *flink_config(FailureDetection()),
            *flink_config(FailureDetection(restart=RestartSettings(strategy="fixed-delay"))),
        ]
    )
)
