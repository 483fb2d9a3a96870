"""The plan's picture: Graphviz's ``dot`` draws svg and png at once (two processes side by side), each the image one
``dot`` alone draws, in the formats' order — the png drawn by cairo and written by gd as a palette image, by cairo's own
writer where the Graphviz has no gd plugin; without ``dot`` the plan keeps its ``.dot`` source and says why."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import graphviz
import pytest

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
    assert images["png"] == dot.pipe(format="png", renderer="cairo", formatter="gd")
    assert images["png"][25] == 3  # IHDR colour type 3: a palette image, not cairo's RGBA (6)


def _plugin_folder() -> Path | None:
    """Where this machine's Graphviz keeps its plugins (Debian: /usr/lib/<arch>/graphviz)."""
    found = sorted(Path("/usr/lib").glob("*/graphviz/libgvplugin_core.so.*")) + sorted(
        Path("/usr/lib").glob("graphviz/libgvplugin_core.so.*")
    )
    return found[0].parent if found else None


def _graphviz_without_gd(folder: Path, system: Path) -> Path:
    """A plugin folder with every plugin of this machine's but gd's, registered by ``dot -c`` as an install without
    the gd plugin has it."""
    for lib in system.glob("libgvplugin_*.so.[0-9]"):
        if "_gd." not in lib.name:
            (folder / lib.name).symlink_to(lib)
    subprocess.run(["dot", "-c"], env={"GVBINDIR": str(folder), "PATH": "/usr/bin:/bin"}, check=True)
    return folder


def test_a_graphviz_without_gd_gets_cairos_png(tmp_path, monkeypatch):
    real_parts.require(None if shutil.which("dot") else "Graphviz's dot is missing (apt-get install graphviz)")
    system = _plugin_folder()
    if system is None or not any(system.glob("libgvplugin_gd.so*")):
        pytest.skip("this Graphviz has no gd plugin: the default png is the only one")
    monkeypatch.setenv("GVBINDIR", str(_graphviz_without_gd(tmp_path, system)))
    dot = _picture()
    images, warning = render_images(dot)
    assert warning is None
    assert images["png"] == dot.pipe(format="png") and images["png"][25] == 6  # cairo's RGBA


def test_without_dot_the_source_is_kept_and_the_warning_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no program on it: no dot
    dot = _picture()
    images, warning = render_images(dot)
    assert images == {"dot": dot.source.encode()}
    assert warning == "Graphviz 'dot' is not installed (apt-get install graphviz): wrote plan.dot only"
