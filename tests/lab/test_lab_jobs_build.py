"""Compiling the lab jobs with the real javac against the wheel's jars."""

from __future__ import annotations

import shutil
import zipfile

import pytest

from placement.errors import PlacementError
from placement.flink_home import find_flink_home
from placement.lab.jobs import JOBS_DIR, build_jobs_jar, source_files, source_hash

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK (javac)")


def test_build_compiles_every_lab_job_into_a_runnable_jar_and_caches_it(tmp_path):
    built = build_jobs_jar(tmp_path)
    names = zipfile.ZipFile(built.path).namelist()
    for cls in ("IotSensorJob", "NexmarkBidsJob", "BranchingJob", "Placement"):
        assert f"placement/lab/{cls}.class" in names
    manifest = zipfile.ZipFile(built.path).read("META-INF/MANIFEST.MF").decode()
    assert "Main-Class: placement.lab.IotSensorJob" in manifest
    assert built.source_hash in built.path.name
    mtime = built.path.stat().st_mtime_ns
    again = build_jobs_jar(tmp_path)  # unchanged sources: the cached jar, not a rebuild
    assert again == built and again.path.stat().st_mtime_ns == mtime


def test_changed_sources_get_a_new_jar(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(JOBS_DIR / "src", src)
    home = find_flink_home()
    before = source_hash(source_files(src), src, home.version)
    job = src / "placement" / "lab" / "IotSensorJob.java"
    job.write_text(job.read_text() + "\n// changed\n")
    rebuilt = build_jobs_jar(tmp_path / "cache", src_dir=src)
    assert rebuilt.source_hash != before and rebuilt.path.is_file()
    assert rebuilt.source_hash == source_hash(source_files(src), src, home.version)


def test_a_compile_error_is_one_line_naming_the_file(tmp_path):
    src = tmp_path / "src" / "placement" / "lab"
    src.mkdir(parents=True)
    (src / "Broken.java").write_text("package placement.lab; public class Broken { int x = ; }\n")
    with pytest.raises(PlacementError) as info:
        build_jobs_jar(tmp_path / "cache", src_dir=tmp_path / "src")
    text = str(info.value)
    assert text.startswith("javac of the lab jobs failed:") and "Broken.java" in text and "\n" not in text
    assert not list((tmp_path / "cache").glob("*.jar"))  # nothing half-built left behind


def test_missing_javac_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without a JDK, for real
    with pytest.raises(PlacementError, match=r"`javac` not found: install a JDK 17"):
        build_jobs_jar(tmp_path / "cache")
