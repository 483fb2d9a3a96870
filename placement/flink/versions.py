"""Which Flink releases the project supports, and how a version's differences are chosen: by major.minor.

The scheduler extension and the JobGraph submitter rely on Flink internals that moved between minor releases
(``../shared/notes/flink-versions.md`` in the team's notes lists each break); a patch release changes none of them.
So, as the Flink Kubernetes Operator branches on ``flinkVersion`` ("is equal or newer than X.Y"), every
version-specific part is chosen by :meth:`FlinkVersion.at_least` on the line, and a built jar still records the
exact version it was compiled against (the extension refuses any other at run time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from placement.errors import PlacementError

SUPPORTED_LINES: tuple[tuple[int, int], ...] = ((1, 19), (1, 20), (2, 0), (2, 1), (2, 2), (2, 3))

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:[-.].*)?$")  # 2.3.0, 1.20, 2.1-SNAPSHOT, 1.19.3-rc1


@dataclass(frozen=True, order=True)
class FlinkVersion:
    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> FlinkVersion:
        match = _VERSION.match(str(text).strip())
        if match is None:
            raise ValueError(f"not a Flink version: {text!r}")
        return cls(int(match[1]), int(match[2]), int(match[3] or 0))

    @property
    def line(self) -> str:
        """The release line, ``major.minor`` (what the version-specific parts are chosen by)."""
        return f"{self.major}.{self.minor}"

    def at_least(self, major: int, minor: int) -> bool:
        return (self.major, self.minor) >= (major, minor)

    @property
    def supported(self) -> bool:
        return (self.major, self.minor) in SUPPORTED_LINES

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def supported_lines() -> str:
    """``1.19, 1.20, 2.0, 2.1, 2.2, 2.3``: for messages and the README."""
    return ", ".join(f"{major}.{minor}" for major, minor in SUPPORTED_LINES)


def version_problem(text: str | None) -> str | None:
    """Why ``text`` is not a supported Flink version (one clause, for messages and validators), or None."""
    try:
        version = FlinkVersion.parse(text or "")
    except ValueError:
        return f"cannot tell the Flink version from {text!r}"
    if not version.supported:
        return f"Flink {text} is not supported (supported: {supported_lines()})"
    return None


def is_line(text: str) -> bool:
    """``text`` names a release line, not one exact release: a version without its patch release (``1.20``; also
    ``2.1-SNAPSHOT``), where ``1.20.5`` and ``1.19.3-rc1`` are releases. False for what is no Flink version at all."""
    match = _VERSION.match(str(text).strip())
    return match is not None and match[3] is None


def release_problem(text: str | None) -> str | None:
    """:func:`version_problem`, and a release line without its patch release (``1.20``) refused: a pin names the
    exact release to install, fetch or build for."""
    problem = version_problem(text)
    if problem is None and is_line(str(text)):
        line = FlinkVersion.parse(str(text)).line
        return f"{str(text).strip()!r} is a release line: give the exact release, {line}.<patch>"
    return problem


def supported_version(text: str | None, where: str) -> FlinkVersion:
    """``text`` parsed, or a one-line error naming ``where`` it came from and the supported lines."""
    problem = version_problem(text)
    if problem:
        raise PlacementError(f"{where}: {problem}")
    return FlinkVersion.parse(text or "")
