"""The plan's picture: Graphviz's ``dot`` draws svg and png at once (two processes side by side), each the image one
``dot`` alone draws, in the formats' order; without ``dot`` the plan keeps its ``.dot`` source and says why."""

from __future__ import annotations

import shutil

import graphviz

from placement.writers.picture import render_images
from support import real_parts


def _picture() -> graphviz.Digraph:
    dot = graphviz.Digraph("plan")
    dot.edge("Source: Sensors", "Parse", label="2.40 Mbit/s")
    dot.edge("Parse", "Sink", label="0.80 Mbit/s")
    return dot


def test_both_formats_are_what_dot_draws_alone():
    real_parts.require(None if shutil.which("dot") else "Graphviz's dot is missing (apt-get install graphviz)")
    dot = _picture()
    images, warning = render_images(dot)
    assert warning is None
    assert list(images) == ["dot", "svg", "png"]
    assert images["dot"] == dot.source.encode()
    assert images["svg"] == dot.pipe(format="svg") and b"2.40 Mbit/s" in images["svg"]
    assert images["png"] == dot.pipe(format="png") and images["png"].startswith(b"\x89PNG")


def test_without_dot_the_source_is_kept_and_the_warning_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no program on it: no dot
    dot = _picture()
    images, warning = render_images(dot)
    assert images == {"dot": dot.source.encode()}
    assert warning == "Graphviz 'dot' is not installed (apt-get install graphviz): wrote plan.dot only"
