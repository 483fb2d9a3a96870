"""Fixtures of the read tests (what each supported line itself reads from what the project writes)."""

from __future__ import annotations

import pytest

from placement.flink.home import FlinkHome
from support.flink_reads import VERSIONS, FlinkReads, line_home


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> FlinkReads:
    return FlinkReads.compile(tmp_path_factory.mktemp("flink-reads"))


@pytest.fixture(scope="module", params=VERSIONS)
def home(request) -> FlinkHome:
    """The Flink home of each supported line in turn."""
    return line_home(request.param)
