"""The Spark driver's class-data-sharing archive: made once by a real JVM, published only when complete, then mapped.

The JVM tests run in processes of their own with a private cache directory (the test session itself runs Spark
without an archive: see tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from placement.profile import class_archive as ca

ROOT = Path(__file__).resolve().parents[2]

# One driver JVM: report whether it dumps or maps an archive (read off /proc/<jvm>/maps), run a query, finish.
_DRIVER = r"""
import json, psutil
from placement.profile.spark_job import archive_pending, finish_spark, spark_session
from placement.profile.class_archive import class_archive
spark = spark_session()
archive = class_archive().path
jvm = next(p for p in psutil.Process().children(recursive=True) if p.name() == "java")
maps = open(f"/proc/{jvm.pid}/maps").read()
pending = archive_pending()
count = spark.range(1000).selectExpr("sum(id) AS s").first()["s"]
print(json.dumps({"pending": pending, "mapped": str(archive) in maps, "sum": count, "published": finish_spark()}))
"""


def _driver(cache: Path) -> dict:
    env = {**os.environ, ca.ENV_SWITCH: "1", ca.ENV_CACHE: str(cache)}
    r = subprocess.run([sys.executable, "-c", _DRIVER], env=env, cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "cds" not in r.stdout + r.stderr, "the JVM's CDS warnings must stay off the terminal"
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_first_run_publishes_a_complete_archive_and_the_next_maps_it(tmp_path):
    tmp_path = tmp_path / "a cache with spaces"  # the path must reach the JVM as one option
    first = _driver(tmp_path)
    assert first == {"pending": True, "mapped": False, "sum": 499500, "published": True}
    archives = sorted(tmp_path.glob("spark-driver-*.jsa"))
    assert len(archives) == 1 and not list(tmp_path.glob("*.tmp"))
    size, mtime = archives[0].stat().st_size, archives[0].stat().st_mtime_ns
    assert size > 50 << 20  # Spark's classes: ~150 MB here

    second = _driver(tmp_path)
    assert second == {"pending": False, "mapped": True, "sum": 499500, "published": False}
    assert (archives[0].stat().st_size, archives[0].stat().st_mtime_ns) == (size, mtime)  # used, not rewritten


def test_switched_off_or_without_java_there_is_no_archive(monkeypatch, tmp_path):
    monkeypatch.setenv(ca.ENV_CACHE, str(tmp_path))
    monkeypatch.setenv(ca.ENV_SWITCH, "0")
    assert ca.class_archive() is None
    monkeypatch.setenv(ca.ENV_SWITCH, "1")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-such-jdk"))
    assert ca.class_archive() is None
    assert not list(tmp_path.iterdir())


def test_archive_name_follows_java_and_pyspark_and_options_follow_the_file(monkeypatch, tmp_path):
    import pyspark

    monkeypatch.setenv(ca.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.setenv(ca.ENV_SWITCH, "1")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    a = ca.class_archive()
    assert a is not None and a.path.parent == tmp_path / "cache"
    assert a.java_options() == f'-XX:ArchiveClassesAtExit="{a.path}.{os.getpid()}.tmp" -Xlog:cds*=off'
    a.path.write_bytes(b"x")
    assert a.java_options() == f'-XX:SharedArchiveFile="{a.path}" -Xlog:cds*=off'
    assert ca.spark_option_word('/a "b"\\c') == '"/a \\"b\\"\\\\c"'  # Spark's launcher reads it back as one word
    monkeypatch.setattr(pyspark, "__version__", "0.0.0-other")
    assert ca.class_archive().path != a.path  # another PySpark gets its own archive, not a mismatch


def test_dumps_of_dead_processes_are_removed_and_a_live_ones_kept(monkeypatch, tmp_path):
    monkeypatch.setenv(ca.ENV_CACHE, str(tmp_path))
    monkeypatch.setenv(ca.ENV_SWITCH, "1")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    abandoned = tmp_path / f"spark-driver-0123456789abcdef.jsa.{dead.pid}.tmp"
    live = tmp_path / f"spark-driver-0123456789abcdef.jsa.{os.getpid()}.tmp"
    abandoned.write_bytes(b"half")
    live.write_bytes(b"busy")
    ca.class_archive()
    assert not abandoned.exists() and live.exists()


def test_a_failed_dump_is_never_published_fake_jvm(tmp_path):
    """Fake JVM (named so): a driver JVM that exits non-zero after writing part of its dump cannot be caused on
    demand; publish() must then drop the partial file, because a truncated archive crashes the next JVM (SIGBUS)."""
    archive = ca.ClassArchive(tmp_path / "spark-driver-x.jsa")
    script = f"import sys; sys.stdin.read(); open({str(archive.pending)!r}, 'wb').write(b'partial'); sys.exit(3)"

    class Gateway:
        proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)

        def shutdown(self):
            pass

    assert ca.publish(archive, Gateway()) is False
    assert not archive.path.exists() and not archive.pending.exists()
