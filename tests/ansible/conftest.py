"""Fixtures for the Ansible tests; the helpers themselves are in ansible_support.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible_support import Ansible, FlinkArchive, build_flink_archive


@pytest.fixture
def ansible_runner(tmp_path: Path) -> Iterator[Ansible]:
    runner = Ansible(tmp_path)
    try:
        yield runner
    finally:
        runner.close()


@pytest.fixture(scope="session")
def flink_archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlinkArchive]:
    """A Flink 2.3.0 distribution archive built from the installed wheel (300 MB; removed after the session)."""
    archive = build_flink_archive(tmp_path_factory.mktemp("flink-archive") / "flink-2.3.0-test.tgz")
    yield archive
    archive.path.unlink(missing_ok=True)
