"""The schedulercfg writer and reader (pure): the seed's line format, vertex ids where names repeat, comments."""

from __future__ import annotations

import re

import pytest

from placement.errors import BadInput
from placement.writers.planjson import SubtaskAssignment
from placement.writers.schedulercfg import (
    file_labels,
    label_collisions,
    parse_schedulercfg,
    render_schedulercfg,
)

A, B, C = "a" * 32, "b" * 32, "c" * 32


def sub(vid: str, name: str, i: int, n: int, host: str) -> SubtaskAssignment:
    return SubtaskAssignment(
        vertex_id=vid,
        vertex=name,
        subtask=i,
        parallelism=n,
        label=f"{name} ({i + 1}/{n})",
        host=host,
        address=f"10.0.0.{1 if host == 'server' else 2}",
    )


def test_lines_follow_vertex_order_then_subtask_with_the_seed_format() -> None:
    rows = [
        sub(B, "Sink: Out", 0, 1, "server"),
        sub(A, "Source: In", 1, 2, "rpi1"),
        sub(A, "Source: In", 0, 2, "server"),
    ]
    assert render_schedulercfg(rows, [A, B]) == (
        "Source: In (1/2); 10.0.0.1\nSource: In (2/2); 10.0.0.2\nSink: Out (1/1); 10.0.0.1\n"
    )


def test_vertices_sharing_a_name_are_labelled_by_their_vertex_id() -> None:
    rows = [
        sub(A, "Map", 0, 2, "rpi1"),
        sub(A, "Map", 1, 2, "server"),
        sub(B, "Map", 0, 1, "server"),
        sub(C, "FlatMap", 0, 1, "server"),
    ]
    assert file_labels(rows) == {
        (A, 0): f"{A} (1/2)",
        (A, 1): f"{A} (2/2)",
        (B, 0): f"{B} (1/1)",
        (C, 0): "FlatMap (1/1)",
    }
    text = render_schedulercfg(rows, [A, B, C])
    assert text.splitlines() == [
        f"{A} (1/2); 10.0.0.2",
        f"{A} (2/2); 10.0.0.1",
        f"{B} (1/1); 10.0.0.1",
        "FlatMap (1/1); 10.0.0.1",
    ]
    assert parse_schedulercfg(text) == {
        f"{A} (1/2)": "10.0.0.2",
        f"{A} (2/2)": "10.0.0.1",
        f"{B} (1/1)": "10.0.0.1",
        "FlatMap (1/1)": "10.0.0.1",
    }


def test_substring_labels_are_found_for_a_warning() -> None:
    rows = [sub(A, "Map", 0, 1, "rpi1"), sub(C, "FlatMap", 0, 1, "server")]
    assert label_collisions(rows) == [("Map (1/1)", "FlatMap (1/1)")]


def test_reading_skips_comments_keeps_the_default_line_and_refuses_bad_lines() -> None:
    assert parse_schedulercfg("# plan\n\nParse (1/1); rpi1\n*; server\n") == {"Parse (1/1)": "rpi1", "*": "server"}
    for text, msg in (
        ("Parse (1/1) rpi1\n", "line 1 is not"),
        ("Parse (1/1); rpi 1\n", "line 1 is not"),
        ("X (1/1); a\nX (1/1); b\n", "line 2: a second line for 'X (1/1)'"),
    ):
        with pytest.raises(BadInput, match=re.escape(msg)):
            parse_schedulercfg(text)


def test_contingency_sections_read_back_and_bad_headers_name_their_line():
    from placement.writers.schedulercfg import parse_sections

    text = "A (1/1); 10.0.0.2\n# a comment\n\n[lost 10.0.0.2]\nA (1/1); 10.0.0.1\n"
    assert parse_sections(text) == {"": {"A (1/1)": "10.0.0.2"}, "10.0.0.2": {"A (1/1)": "10.0.0.1"}}
    for bad, line in (("[lost]\n", 2), ("[gone 10.0.0.2]\n", 2), ("[lost 10.0.0.2]\n[lost 10.0.0.2]\n", 3)):
        with pytest.raises(BadInput, match=f"line {line}"):
            parse_sections("A (1/1); 10.0.0.2\n" + bad)
