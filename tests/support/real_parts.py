"""One switch that stops the suite from going green by skipping: strict mode.

Strict mode is on when the environment has ``PLACEMENT_STRICT=1`` or pytest runs with ``--strict-real`` (which sets
the variable, so subprocesses and module-level checks see it too). ``.ci/run`` turns it on.

* :func:`missing` — a real part the test needs is not here (no JDK, no network namespaces, no sshd, Ansible or the
  pyflink wheel missing or of another version, ...). Strict: the test FAILS naming the part; otherwise it is skipped.
  :func:`needs` is the same as a module mark, checked before the test's fixtures are set up.
* :func:`kernel_fact` — a kernel-level fact listed in :data:`support.allowed_skips.ALLOWED_SKIPS`: skipped in both
  modes and listed in the summary.
* A safety net for skips that bypass both helpers (a bare ``pytest.skip``, a ``skipif`` mark, ``importorskip``): in
  strict mode :func:`pytest_runtest_makereport` and :func:`pytest_make_collect_report` turn them into failures.

``tests/conftest.py`` imports the hooks; a pytest run outside ``tests/`` loads them with ``-p support.real_parts``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest

from support.allowed_skips import ALLOWED_SKIPS

ENV = "PLACEMENT_STRICT"
OPTION = "--strict-real"
_ALLOWED_PREFIX = "allowed kernel-level skip"
_ALLOWED_RE = re.compile(re.escape(_ALLOWED_PREFIX) + r" \[(?P<key>[\w.-]+)\]")


def strict() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def missing(reason: str) -> None:
    """The test cannot run because a real part is missing: a failure in strict mode, a skip otherwise."""
    if strict():
        pytest.fail(f"real part missing (strict mode, {ENV}=1): {reason}", pytrace=False)
    pytest.skip(f"{reason} (a failure under {ENV}=1)")


def require(reason: str | None) -> None:
    """:func:`missing` when ``reason`` (a probe's answer: None = available) says something is missing."""
    if reason:
        missing(reason)


def needs(reason: str | None) -> pytest.MarkDecorator:
    """A mark (``pytestmark = [real_parts.needs(probe())]``) that calls :func:`require` before the test's fixtures."""
    return pytest.mark.needs_real_part(missing=reason)


def kernel_fact(key: str, detail: str = "") -> None:
    """Skip for a kernel-level fact of :data:`ALLOWED_SKIPS` (allowed in strict mode, listed in the summary)."""
    if key not in ALLOWED_SKIPS:
        pytest.fail(f"{key!r} is not an allowed kernel-level skip (tests/support/allowed_skips.py)", pytrace=False)
    pytest.skip(f"{_ALLOWED_PREFIX} [{key}]: {ALLOWED_SKIPS[key]}" + (f" ({detail})" if detail else ""))


def _skip_reason(longrepr: object) -> str:
    # (path, line, reason); a list once a pytest-xdist worker has sent the report to the controller
    reason = str(longrepr[2]) if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def _allowed_key(reason: str) -> str | None:
    m = _ALLOWED_RE.search(reason)
    return m.group("key") if m and m.group("key") in ALLOWED_SKIPS else None


# ---- hooks (imported by tests/conftest.py) ------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        action="store_true",
        default=False,
        help=f"a missing real part (JDK, namespaces, sshd, Ansible, ...) fails the test instead of "
        f"skipping it; same as {ENV}=1",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption(OPTION, default=False):
        os.environ[ENV] = "1"
    config.addinivalue_line(
        "markers",
        "needs_real_part(missing): made by support.real_parts.needs(); a missing real "
        "part is a skip, or a failure under strict mode",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs_real_part"):
        require(mark.kwargs.get("missing"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    if not rep.skipped or hasattr(rep, "wasxfail"):
        return
    reason = _skip_reason(rep.longrepr)
    if _allowed_key(reason) is None and strict():
        rep.outcome = "failed"
        rep.longrepr = f"skipped without an allowed kernel-level reason (strict mode, {ENV}=1): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and strict() and _allowed_key(_skip_reason(rep.longrepr)) is None:
        rep.outcome = "failed"
        rep.longrepr = (
            f"module skipped without an allowed kernel-level reason (strict mode, {ENV}=1): "
            f"{_skip_reason(rep.longrepr)}"
        )


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    tr = terminalreporter
    # from the reports (not from the hooks above): with pytest-xdist they run in the workers, the summary here
    taken = [
        (key, rep.nodeid.split("@")[0])
        for rep in tr.stats.get("skipped", [])
        if (key := _allowed_key(_skip_reason(rep.longrepr))) is not None
    ]
    tr.section("real parts")
    tr.write_line(f"strict mode ({ENV}=1 / {OPTION}): {'ON: a missing real part fails' if strict() else 'off'}")
    tr.write_line("allowed kernel-level skips (tests/support/allowed_skips.py):")
    for key, text in ALLOWED_SKIPS.items():
        nodes = [node for k, node in taken if k == key]
        tr.write_line(f"  {key}: {len(nodes)} test(s) skipped — {text}")
        for node in nodes:
            tr.write_line(f"      {node}")
    others = len(tr.stats.get("skipped", [])) - len(taken)
    if others > 0 and not strict():
        tr.write_line(f"{others} other skip(s) for missing real parts: each is a failure under {ENV}=1")
