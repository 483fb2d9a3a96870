"""Error types the CLI turns into one-line messages and exit codes.

Every error a user can cause by bad input is a :class:`BadInput` whose message already names the file and
field; the CLI prints it on one line and exits 2. Nothing below the CLI prints or exits.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_INFEASIBLE = 3


class PlacementError(Exception):
    """Base class: an expected failure with a message fit for one line of output."""

    exit_code = EXIT_FAILURE


class BadInput(PlacementError):
    """A file, field or option is malformed or inconsistent."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.source = source
        self.field = field
        self.message = message  # without the file and field
        parts = [p for p in (source, field) if p]
        super().__init__(": ".join([*parts, message]))


class Infeasible(PlacementError):
    """No placement satisfies the constraints; the message says what is short and by how much."""

    exit_code = EXIT_INFEASIBLE
