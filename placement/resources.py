"""Where the repository's data directories (``deploy/``, ``netem/``, ``inventory/``) are found at run time.

``placement`` is installed from a clone (``pip install -e .``), so the directories sit next to the package. An
environment variable ``PLACEMENT_<NAME>_DIR`` points elsewhere (e.g. a packaged install).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def repo_dir(name: str) -> Path:
    override = os.environ.get(f"PLACEMENT_{name.upper()}_DIR")
    return Path(override) if override else REPO_ROOT / name
