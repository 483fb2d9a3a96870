"""Fixtures for the netem tests (helpers live in netem_helpers.py). Namespaces are named ``pn-...``, interfaces
``pn...``, addresses lie in 10.201.0.0/16."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from placement.netns import Namespaces, VethPair, netns_available
from support import real_parts


@pytest.fixture
def netns_required() -> None:
    """Namespaces are a real part: missing, the test fails under strict mode, else skips (support/real_parts.py)."""
    real_parts.require(netns_available())


@pytest.fixture
def wire(netns_required: None, request: pytest.FixtureRequest) -> Iterator[VethPair]:
    """A namespace "server" joined to the root namespace (the "edge") by a veth; removed afterwards, even on failure."""
    subnet = getattr(request, "param", 1)
    with Namespaces("pn-t") as nets:
        yield nets.add("srv", f"10.201.{subnet}.1", f"10.201.{subnet}.2")
