"""Flink versions: parsed, compared by release line, unsupported ones refused in one line naming the supported."""

from __future__ import annotations

import pytest

from placement.errors import PlacementError
from placement.flink.versions import FlinkVersion, supported_lines, supported_version


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("2.3.0", (2, 3, 0)),
        ("1.20.5", (1, 20, 5)),
        ("1.19", (1, 19, 0)),
        ("2.1-SNAPSHOT", (2, 1, 0)),
        ("1.19.3-rc1", (1, 19, 3)),
        (" 2.0.2 ", (2, 0, 2)),
    ],
)
def test_versions_parse(text, want):
    v = FlinkVersion.parse(text)
    assert (v.major, v.minor, v.patch) == want


@pytest.mark.parametrize("text", ["", "two", "2", "v2.3.0", "2.x"])
def test_garbage_is_not_a_version(text):
    with pytest.raises(ValueError, match="not a Flink version"):
        FlinkVersion.parse(text)


def test_lines_compare_by_number_not_text():
    assert FlinkVersion.parse("1.20.0") > FlinkVersion.parse("1.9.9")  # as text "1.20" < "1.9"
    assert FlinkVersion.parse("2.0.0").at_least(1, 20)
    assert not FlinkVersion.parse("1.20.5").at_least(2, 0)
    assert FlinkVersion.parse("2.2.1").at_least(2, 2) and not FlinkVersion.parse("2.1.3").at_least(2, 2)
    assert FlinkVersion.parse("1.20.5").line == "1.20" and str(FlinkVersion.parse("2.3")) == "2.3.0"


def test_supported_lines_are_named_in_the_refusal():
    assert supported_lines() == "1.19, 1.20, 2.0, 2.1, 2.2, 2.3"
    assert supported_version("1.20.5", "inventory.yaml: flink.version") == FlinkVersion(1, 20, 5)
    for text in ("1.18.1", "1.17.2", "3.0.0"):
        with pytest.raises(PlacementError) as err:
            supported_version(text, "inventory.yaml: flink.version")
        assert str(err.value) == (
            f"inventory.yaml: flink.version: Flink {text} is not supported (supported: 1.19, 1.20, 2.0, 2.1, 2.2, 2.3)"
        )
    with pytest.raises(PlacementError, match=r"^JobManager /config: cannot tell the Flink version from 'abc'$"):
        supported_version("abc", "JobManager /config")
