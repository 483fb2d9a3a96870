"""Where shipped folders are found: the override, an installed package's copy, the clone — in that order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from placement import resources
from placement.inventory.wan_profiles import list_profiles, load_profile
from placement.resources import SHIPPED, repo_dir

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_overrides(monkeypatch):
    for name in SHIPPED:
        monkeypatch.delenv(resources.override_var(name), raising=False)
    monkeypatch.delenv("PLACEMENT_NETEM_PROFILES", raising=False)


def test_a_clone_reads_its_own_folders(no_overrides):
    assert not resources.PACKAGE_DATA.exists()  # an editable install copies nothing into the package
    for name in SHIPPED:
        assert repo_dir(name) == REPO / name


def test_an_installed_copy_wins_over_the_folder_beside_the_package(no_overrides, monkeypatch, tmp_path):
    (tmp_path / "netem").mkdir()
    (tmp_path / "netem" / "office.yaml").write_text("bandwidth: 8mbit\n")
    monkeypatch.setattr(resources, "PACKAGE_DATA", tmp_path)
    assert repo_dir("netem") == tmp_path / "netem" and list_profiles() == ["office"]
    assert repo_dir("deploy") == REPO / "deploy"  # not shipped in this copy: the clone's


@pytest.mark.parametrize("variable", ["PLACEMENT_NETEM_DIR", "PLACEMENT_NETEM_PROFILES"])
def test_the_override_wins_and_the_older_netem_name_still_works(variable, no_overrides, monkeypatch, tmp_path):
    (tmp_path / "wifi.yaml").write_text("bandwidth: 30mbit\ndelay: 2ms\n")
    monkeypatch.setenv(variable, str(tmp_path))
    assert repo_dir("netem") == tmp_path and load_profile("wifi").bandwidth == 30.0


def test_the_new_override_name_wins_over_the_old_one(no_overrides, monkeypatch, tmp_path):
    monkeypatch.setenv("PLACEMENT_NETEM_PROFILES", str(tmp_path / "old"))
    monkeypatch.setenv("PLACEMENT_NETEM_DIR", str(tmp_path / "new"))
    assert repo_dir("netem") == tmp_path / "new"


def test_every_folder_has_its_own_override(no_overrides, monkeypatch, tmp_path):
    for name in SHIPPED:
        monkeypatch.setenv(f"PLACEMENT_{name.upper()}_DIR", str(tmp_path / name))
        assert repo_dir(name) == tmp_path / name


def test_no_module_finds_shipped_folders_beside_the_package_by_itself():
    # `Path(__file__).parents[2] / "deploy"` works in a clone and breaks in an installed package: only
    # placement/resources.py may look beside the package (and it prefers the installed copy).
    climbing = re.compile(r"__file__\)(?:\.resolve\(\))?\.(?:parents\[\d\]|parent\.parent)")
    offenders = [
        str(p.relative_to(REPO))
        for p in (REPO / "placement").rglob("*.py")
        if p.name != "resources.py" and climbing.search(p.read_text())
    ]
    assert offenders == []
