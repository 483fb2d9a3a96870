"""Compiling the lab jobs with the real javac against the wheel's jars."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import pytest

from placement.errors import PlacementError
from placement.flink.home import find_flink_home
from placement.lab.jobs import JOBS_DIR, build_jobs_jar, jobs_digest
from support import real_parts

pytestmark = real_parts.needs(None if shutil.which("javac") else "needs a JDK (javac not found on PATH)")


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


def counting_javac(bin_dir: Path, log: Path) -> None:
    """Put a ``javac`` first on PATH that notes each run in ``log`` and then runs the real javac."""
    real = shutil.which("javac")
    bin_dir.mkdir()
    wrapper = bin_dir / "javac"
    wrapper.write_text(f'#!/bin/sh\necho run >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)


def class_bytes(jar: Path, name: str = "placement/lab/IotSensorJob.class") -> bytes:
    return zipfile.ZipFile(jar).read(name)


def test_a_source_change_rebuilds_and_no_change_does_not(tmp_path, monkeypatch):
    src = tmp_path / "src"
    shutil.copytree(JOBS_DIR / "src", src)
    runs = tmp_path / "javac-runs.log"
    counting_javac(tmp_path / "bin", runs)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    javac_runs = lambda: len(runs.read_text().splitlines()) if runs.exists() else 0  # noqa: E731
    cache = tmp_path / "cache"

    first = build_jobs_jar(cache, src_dir=src)
    assert javac_runs() == 1
    again = build_jobs_jar(cache, src_dir=src)  # nothing changed: the cached jar, javac not run
    assert again == first and javac_runs() == 1

    job = src / "common" / "placement" / "lab" / "IotSensorJob.java"
    old_default = 'params.get("job-name", "iot-sensors")'
    assert old_default in job.read_text()
    job.write_text(job.read_text().replace(old_default, 'params.get("job-name", "iot-sensors-changed")'))
    changed = build_jobs_jar(cache, src_dir=src)
    assert javac_runs() == 2  # the change was compiled...
    assert changed.source_hash != first.source_hash and changed.path != first.path
    home = find_flink_home()
    assert changed.source_hash == jobs_digest(str(home.version), src)
    # ...into the new jar: the changed default job name is in its class file, and not in the old jar's
    assert b"iot-sensors-changed" in class_bytes(changed.path) and b"iot-sensors-changed" not in class_bytes(first.path)
    assert build_jobs_jar(cache, src_dir=src) == changed and javac_runs() == 2  # and is cached in turn


def test_a_compile_error_is_one_line_naming_the_file(tmp_path):
    shutil.copytree(JOBS_DIR / "src", tmp_path / "src")  # the real tree, plus one broken class in its shared part
    src = tmp_path / "src" / "common" / "placement" / "lab"
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
