"""What a working tree holds beside the sources (venvs, builds, caches, compiled Java): left out of a copy of the
repository a test builds from or runs the docs in, as the clean clone CI starts from has none of it."""

from __future__ import annotations

NOT_SOURCE_PATTERNS = (
    ".git",
    ".venv",
    ".venv-latest",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    "build",
    "dist",
    "out",
    ".lab",
    ".pytest_cache",
    ".hypothesis",
    "*.jar",
    "*.class",
)
