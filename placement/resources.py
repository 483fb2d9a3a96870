"""Where the data the tool ships is found at run time: netem profiles, lab job and scheduler sources, templates,
examples, the Ansible playbooks.

The repository's top-level folders are the one source (``deploy/``, ``netem/``, ``inventory/``, ``examples/``,
``scheduler/``, ``submitter/``, ``ansible/``). A wheel carries copies of them under ``placement/data/<name>/``
(``setup.py`` maps them in at build time, nothing is committed twice); a clone or an editable install reads them in
place. ``PLACEMENT_<NAME>_DIR`` (e.g. ``PLACEMENT_NETEM_DIR``) overrides both.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DATA = Path(__file__).resolve().parent / "data"  # a built wheel's copies
REPO_ROOT = Path(__file__).resolve().parent.parent  # a clone's top level
# The folders a wheel ships (setup.py reads this list).
SHIPPED = ("deploy", "netem", "inventory", "examples", "scheduler", "submitter", "ansible")
ENV_CACHE = "PLACEMENT_CACHE_DIR"  # where built and fetched things are kept (class archives, Flink distributions)
# Older names of an override, still honoured after the new one.
LEGACY_ENV = {"netem": "PLACEMENT_NETEM_PROFILES"}


def override_var(name: str) -> str:
    """The environment variable that points ``name``'s folder elsewhere."""
    return f"PLACEMENT_{name.upper()}_DIR"


def repo_dir(name: str) -> Path:
    """The folder ``name`` (one of :data:`SHIPPED`): the override, else the installed copy, else the clone's."""
    for var in (override_var(name), LEGACY_ENV.get(name)):
        if var and os.environ.get(var):
            return Path(os.environ[var])
    packaged = PACKAGE_DATA / name
    return packaged if packaged.is_dir() else REPO_ROOT / name


def cache_dir() -> Path:
    """The tool's cache: ``$PLACEMENT_CACHE_DIR``, else ``$XDG_CACHE_HOME/placement``, else ``~/.cache/placement``."""
    if os.environ.get(ENV_CACHE):
        return Path(os.environ[ENV_CACHE])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "placement"
