"""The side-effecting end of ``placement netem``: run the pure tc commands on one host through an Executor.

apply: check the interface, replace our earlier installation (never someone else's root qdisc), install htb +
filters, then the netem leaves. A kernel without sch_netem refuses the first leaf; that is how its absence is
detected (for real, on the host that matters), the remaining leaves are skipped and the rate limits stay. Any other
failure removes what was installed so far: nothing is left half-applied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from placement.errors import PlacementError
from placement.netem import tc
from placement.netem.status import InterfaceStatus, RootQdisc, TcOutputError, parse_root, parse_status
from placement.remote import CommandFailed, CommandResult, DryRunExecutor, Executor

_NO_NETEM_MARKERS = ("qdisc kind is unknown", "unknown qdisc")


class InterfaceMissing(PlacementError):
    def __init__(self, host: str, interface: str, message: str):
        self.host, self.interface = host, interface
        super().__init__(f"{host}: no interface {interface!r} ({message})")


class ForeignRootQdisc(PlacementError):
    def __init__(self, host: str, interface: str, root: RootQdisc):
        self.root = root
        super().__init__(
            f"{host}: {interface} already has a root qdisc placement did not install ({root.describe()}); "
            f"remove it first (tc qdisc del dev {interface} root)"
        )


class NetemUnavailable(PlacementError):
    """The host's kernel has no sch_netem and the caller required delay/loss."""


@dataclass(frozen=True)
class ShapingOutcome:
    """What shaping one host's interface did (apply/runner.ApplyOutcome is a plan's apply)."""

    host: str
    interface: str
    shapes: tuple[tc.Shape, ...]
    replaced: bool  # an earlier installation of ours was removed first
    netem_wanted: bool
    netem_missing: bool  # the kernel refused netem: rate limits only
    netem_error: str = ""
    dry_run: bool = False


@dataclass(frozen=True)
class ClearOutcome:
    host: str
    interface: str
    removed: bool
    root_before: RootQdisc | None
    root_after: RootQdisc | None


def _tc(ex: Executor, argv: Sequence[str], *, check: bool = True, mutates: bool = True) -> CommandResult:
    return ex.run(argv, check=check, privileged=True, mutates=mutates)


def check_interface(ex: Executor, interface: str) -> None:
    res = ex.run(["ip", "link", "show", "dev", interface], check=False, mutates=False)
    if not res.ok:
        raise InterfaceMissing(ex.host, interface, res.message)


def read_root(ex: Executor, interface: str) -> RootQdisc | None:
    res = _tc(ex, tc.root_query_command(interface), mutates=False)
    try:
        return parse_root(res.stdout)
    except TcOutputError as exc:
        raise PlacementError(f"{ex.host}: cannot read the root qdisc of {interface}: {exc}") from None


def is_netem_missing(result: CommandResult) -> bool:
    text = (result.stderr + result.stdout).lower()
    return any(marker in text for marker in _NO_NETEM_MARKERS)


def apply_host(
    ex: Executor, interface: str, shapes: Sequence[tc.Shape], *, require_delay: bool = False
) -> ShapingOutcome:
    commands = tc.apply_commands(interface, shapes, with_netem=True)  # validates before touching anything
    check_interface(ex, interface)
    root = read_root(ex, interface)
    replaced = False
    if root is not None and root.is_ours:
        for cmd in tc.clear_commands(interface):
            _tc(ex, cmd)
        replaced = True
    elif root is not None and not root.is_default:
        raise ForeignRootQdisc(ex.host, interface, root)
    netem_wanted = any(s.needs_netem for s in shapes)
    netem_missing, netem_error = False, ""
    try:
        for cmd in commands:
            if tc.is_netem_command(cmd):
                if netem_missing:
                    continue
                res = _tc(ex, cmd, check=False)
                if res.ok:
                    continue
                if not is_netem_missing(res):
                    raise CommandFailed(res)
                netem_missing, netem_error = True, res.message
                if require_delay:
                    raise NetemUnavailable(
                        f"{ex.host}: the kernel has no netem qdisc (sch_netem): {res.message}; "
                        f"--require-delay given, so {interface} was left unshaped"
                    )
            else:
                _tc(ex, cmd)
    except PlacementError:
        for cmd in tc.clear_commands(interface):
            _tc(ex, cmd, check=False)
        raise
    return ShapingOutcome(
        host=ex.host,
        interface=interface,
        shapes=tuple(shapes),
        replaced=replaced,
        netem_wanted=netem_wanted,
        netem_missing=netem_missing,
        netem_error=netem_error,
        dry_run=isinstance(ex, DryRunExecutor),
    )


def clear_host(ex: Executor, interface: str) -> ClearOutcome:
    """Remove our root qdisc (and with it every class, filter and leaf); the kernel restores its default root."""
    check_interface(ex, interface)
    before = read_root(ex, interface)
    dry = isinstance(ex, DryRunExecutor)
    removed = False
    if (before is not None and before.is_ours) or (dry and before is None):
        for cmd in tc.clear_commands(interface):
            _tc(ex, cmd)
        removed = True
    after = read_root(ex, interface) if removed and not dry else before
    return ClearOutcome(host=ex.host, interface=interface, removed=removed, root_before=before, root_after=after)


def show_host(ex: Executor, interface: str) -> InterfaceStatus:
    check_interface(ex, interface)
    qdisc_cmd, class_cmd = tc.stats_commands(interface)
    qdiscs = _tc(ex, qdisc_cmd, mutates=False).stdout
    classes = _tc(ex, class_cmd, mutates=False).stdout
    filters = _tc(ex, tc.filter_query_command(interface), check=False, mutates=False)
    try:
        return parse_status(interface, qdiscs, classes, filters.stdout if filters.ok else "")
    except TcOutputError as exc:
        raise PlacementError(f"{ex.host}: cannot read tc statistics of {interface}: {exc}") from None
