"""Which top-level parts of ``placement`` may import which: the one table tests/infra/test_import_layers.py holds.

``LAYERS`` runs from the bottom up. A module may import its own top-level package and anything in a lower layer,
never a package in its own layer (siblings stay apart) or above. Imports inside functions count as well; only imports
under ``if TYPE_CHECKING:`` are exempt (they never run). ``EXCEPTIONS`` lists the back-arrows not yet removed, each
with why: the test fails on any other, and on an exception that no longer occurs.
"""

from __future__ import annotations

LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        "errors clock",  # core: the error types everything raises; the clock waits and dates are read from
        "__init__ layers units loading signals resources netns polling graphs",  # core: units, loading, signals,
        # data paths, namespaces, the one poll helper, job-graph shape
        "flink",  # Flink facts, config, versions, homes, the REST client
        "inventory",  # the inventory model and its what-if edits
        "remote",  # hosts: SSH / local / dry-run execution
        "scheduler submitter netem",  # the custom scheduler, the submitter, traffic shaping
        "collect",  # reading a running job's metrics
        "profile forecast",  # pure rules from collected runs to a job profile; a source's rate forecast
        "costmodel",  # pure demand, traffic, transport, latency
        "solver writers",  # the planners; the renderers of a plan
        "planning",  # plan(PlanRequest) -> PlanOutcome: validation, one job = a fleet of one, contingencies, writing
        "apply",  # observe -> plan -> run against a cluster
        "watch",  # observe, assess, re-plan (through apply)
        "lab",  # the lab experiments
        "cli",  # click commands and tables
    )
)

# (importing module, imported module): why the arrow still runs up
EXCEPTIONS: dict[tuple[str, str], str] = {}
