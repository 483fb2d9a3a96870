"""Every shell block of the README and of docs/ runs as printed, so an example that stops working fails here.

The blocks are read from the Markdown itself (```bash, ```sh, ```console). A block that cannot run on a machine
without a cluster says so just before its fence, in a comment the reader does not see::

    <!-- not offline: needs a Flink cluster and SSH to its hosts -->

Every other block runs: the blocks of one document in order, in one copy of the repository (a later block may use
what an earlier one wrote, as a reader following the page does), with ``placement`` on the PATH running this
checkout's code. A block fails the test when any command in it fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.sources import NOT_SOURCE_PATTERNS

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "examples" / "metrics" / "README.md"]
FENCE = re.compile(r"(?ms)^```(?P<lang>[\w-]*)[ \t]*\n(?P<body>.*?)^```[ \t]*$")
MARKER = re.compile(r"<!--\s*not offline:(?P<why>.*?)-->\s*\Z", re.DOTALL)
SHELL = {"bash", "sh", "console"}
# What a working tree holds beside the sources; a copy for the blocks to write into leaves it out.
NOT_SOURCES = shutil.ignore_patterns(*NOT_SOURCE_PATTERNS)
BLOCK_TIMEOUT_S = 180  # a block of a few plans on a loaded machine; each command is meant to take seconds


@dataclass(frozen=True)
class Block:
    document: Path
    line: int
    lang: str
    body: str
    not_offline: str | None  # the marker's reason, or None: the block runs here

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(REPO)}:{self.line}"

    def script(self) -> str:
        """The commands: a console block's lines after its ``$ `` prompts (with their continuations), else the body."""
        if self.lang != "console":
            return self.body
        lines, continued = [], False
        for line in self.body.splitlines():
            if line.startswith("$ ") or continued:
                lines.append(line[2:] if line.startswith("$ ") and not continued else line)
                continued = line.endswith("\\")
        return "\n".join(lines) + "\n"


def blocks_of(document: Path) -> list[Block]:
    text = document.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        if m.group("lang") not in SHELL:
            continue
        before = text[: m.start()]
        marker = MARKER.search(before[-400:])
        found.append(
            Block(
                document,
                before.count("\n") + 1,
                m.group("lang"),
                m.group("body"),
                marker.group("why").strip() if marker else None,
            )
        )
    return found


ALL = [block for document in DOCUMENTS for block in blocks_of(document)]


def test_the_documents_have_shell_blocks_and_each_marker_says_why():
    assert {b.document for b in ALL} >= {REPO / "README.md", REPO / "docs" / "plan.md"}
    assert len([b for b in ALL if b.not_offline is None]) >= 15
    for block in ALL:
        assert block.not_offline is None or len(block.not_offline) >= 8, f"{block.where}: say what it needs"


def test_the_readme_starts_with_make_demo_and_make_test():
    first = blocks_of(REPO / "README.md")[0]
    assert [line.split("#")[0].strip() for line in first.body.splitlines()] == ["make demo", "make test"]
    assert first.line <= 5  # right under the title


@pytest.fixture
def shell(tmp_path):
    """A copy of the repository to run blocks in, and the environment that puts this checkout's ``placement`` first
    on the PATH (a shim: the console script of the venv may be another checkout's editable install)."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=NOT_SOURCES, symlinks=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "placement"
    shim.write_text(
        f"#!/bin/sh\nexec '{sys.executable}' -c 'import sys; from placement.cli import main; "
        f'sys.argv[0] = "placement"; main()\' "$@"\n'
    )
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_") and k != "VIRTUAL_ENV"}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(copy),
        HOME=str(tmp_path / "home"),
        PLACEMENT_SPARK_CLASS_ARCHIVE="0",
        COLUMNS="120",
    )
    (tmp_path / "home").mkdir()
    where = subprocess.run(
        [sys.executable, "-c", "import placement; print(placement.__file__)"],
        env=env,
        cwd=copy,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(copy)  # the blocks run the copy's code, not an installed one
    return copy, env


@pytest.mark.parametrize(
    "document", [d for d in DOCUMENTS if any(b.document == d for b in ALL)], ids=lambda d: str(d.relative_to(REPO))
)
def test_every_offline_block_runs_as_printed(document, shell):
    copy, env = shell
    for block in blocks_of(document):
        if block.not_offline is not None:
            continue
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.script()],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
            check=False,
        )
        assert done.returncode == 0, (
            f"{block.where}: exit {done.returncode} (mark it `<!-- not offline: WHY -->` if "
            f"it needs a cluster)\n{block.body}\n{done.stderr[-3000:]}"
        )
        assert "Traceback" not in done.stderr, f"{block.where}\n{done.stderr[-3000:]}"
