"""The Spark driver's class-data-sharing archive: made once by a real JVM, published only when complete, then mapped;
named for what the JVM validates (its build, and the jars' paths, sizes and times), and the cache kept bounded.

The JVM tests run in processes of their own with a private cache directory (the test session itself runs Spark
without an archive: see tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from placement.profile import class_archive as ca

ROOT = Path(__file__).resolve().parents[2]

# One driver JVM: report whether it dumps or maps an archive (read off /proc/<jvm>/maps), run a query, finish.
_DRIVER = r"""
import json, psutil
from placement.profile.spark_job import DRIVER_JVM_FLAGS, archive_pending, finish_spark, spark_session
from placement.profile.class_archive import class_archive
spark = spark_session()
archive = class_archive(DRIVER_JVM_FLAGS).path
jvm = next(p for p in psutil.Process().children(recursive=True) if p.name() == "java")
maps = open(f"/proc/{jvm.pid}/maps").read()
pending = archive_pending()
count = spark.range(1000).selectExpr("sum(id) AS s").first()["s"]
print(json.dumps({"pending": pending, "mapped": str(archive) in maps, "sum": count, "published": finish_spark()}))
"""
# what the JVM and Spark print at start-up unless placement keeps it off the terminal
_CHATTER = re.compile(r"incubator modules|Setting default log level|To adjust logging level|cds", re.IGNORECASE)


def _driver(cache: Path) -> dict:
    env = {**os.environ, ca.ENV_SWITCH: "1", ca.ENV_CACHE: str(cache)}
    r = subprocess.run(
        [sys.executable, "-c", _DRIVER], env=env, cwd=ROOT, capture_output=True, text=True, timeout=400, check=False
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert not _CHATTER.search(r.stdout + r.stderr), (r.stdout + r.stderr)[:500]
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
    assert size > 50 << 20  # Spark's classes: ~170 MB here
    sidecar = json.loads(archives[0].with_suffix(".json").read_text())
    assert sidecar["jars"] == str(ca.spark_jars())

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


def _jdk(root: Path) -> Path:
    """A directory shaped like a JDK as far as the archive's name is concerned (release, libjvm, base archive)."""
    (root / "lib" / "server").mkdir(parents=True)
    (root / "release").write_text('JAVA_VERSION="17.0.15"\nJAVA_RUNTIME_VERSION="17.0.15+6"\n')
    (root / "lib" / "server" / "libjvm.so").write_bytes(b"\0" * 100)
    (root / "lib" / "server" / "classes.jsa").write_bytes(b"\0" * 200)
    return root


def _jars(root: Path, names=("spark-core.jar", "spark-sql.jar")) -> Path:
    root.mkdir(parents=True)
    for name in names:
        (root / name).write_bytes(name.encode())
    return root


def _touch_later(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_the_name_follows_what_the_jvm_validates_not_where_the_jdk_lives(tmp_path):
    jdk, jars = _jdk(tmp_path / "jdk"), _jars(tmp_path / "venv-a" / "jars")
    key = ca.archive_key(jdk, jars)
    assert re.fullmatch(r"[0-9a-f]{16}", key) and ca.archive_key(jdk, jars) == key  # stable
    assert ca.archive_key(jdk, jars, "-XX:+UseSerialGC") != key  # dumped with other driver flags: another archive

    moved = tmp_path / "elsewhere" / "jdk"
    shutil.copytree(jdk, moved)  # copy2: same contents, sizes and times
    assert ca.archive_key(moved, jars) == key  # the same JVM build, relocated: the same archive
    _touch_later(jdk / "lib" / "server" / "libjvm.so")
    assert ca.archive_key(jdk, jars) != key  # a rebuilt or updated JVM: the old archive is rejected by the JVM

    other_venv = tmp_path / "venv-b" / "jars"
    shutil.copytree(jars, other_venv)
    # byte-identical jars at another path: JDK 17 checks class path entries by path (measured: an archive dumped for
    # one copy mapped no class for the other), so they cannot share one
    assert ca.archive_key(moved, other_venv) != ca.archive_key(moved, jars)
    before = ca.archive_key(moved, jars)
    _touch_later(jars / "spark-sql.jar")
    assert ca.archive_key(moved, jars) != before  # jars replaced in place (an upgrade): another archive
    (jars / "extra.jar").write_bytes(b"x")
    assert ca.archive_key(moved, jars) not in (before, key)


def _archive(cache: Path, key: str, jars: Path | None, *, size: int = 10, used: float = 0.0) -> Path:
    path = cache / f"spark-driver-{key}.jsa"
    path.write_bytes(b"a" * size)
    if jars is not None:
        ca._write_sidecar(ca.ClassArchive(path, jars))
        os.utime(path.with_suffix(".json"), (used, used))
    return path


def test_the_cache_keeps_the_recently_used_and_drops_what_no_jvm_can_map(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    jars = {n: _jars(tmp_path / n / "jars") for n in ("a", "b", "c", "d", "gone", "changed")}
    current = _archive(cache, "0" * 16, jars["a"], used=100)
    legacy = _archive(cache, "1" * 16, None)  # an older placement's (keyed on pyspark's path, no sidecar)
    gone = _archive(cache, "2" * 16, jars["gone"], used=900)
    changed = _archive(cache, "3" * 16, jars["changed"], used=900)
    newest = _archive(cache, "4" * 16, jars["b"], used=800)
    older = _archive(cache, "5" * 16, jars["c"], used=700)
    oldest = _archive(cache, "6" * 16, jars["d"], used=600)
    shutil.rmtree(jars["gone"])  # a deleted clone or venv
    _touch_later(jars["changed"] / "spark-core.jar")  # PySpark upgraded in place
    orphan = cache / f"spark-driver-{'7' * 16}.json"
    orphan.write_text("{}")

    removed = ca.prune(cache, current=current, keep=2)
    assert set(removed) == {legacy, gone, changed, older, oldest}
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [current.name, current.with_suffix(".json").name, newest.name, newest.with_suffix(".json").name]
    )

    # the size cap: the current archive is never removed, others only while they fit
    big = _archive(cache, "8" * 16, jars["c"], size=1000, used=950)
    ca.prune(cache, current=current, keep=5, max_bytes=500)
    assert current.exists() and newest.exists() and not big.exists()
    ca.prune(cache, current=current, keep=5, max_bytes=15)  # 10 B current + 10 B newest > 15 B
    assert current.exists() and not newest.exists()


def test_class_archive_marks_its_archive_used_and_prunes_others(monkeypatch, tmp_path):
    jdk, jars = _jdk(tmp_path / "jdk"), _jars(tmp_path / "venv" / "jars")
    cache = tmp_path / "cache"
    monkeypatch.setenv(ca.ENV_CACHE, str(cache))
    monkeypatch.setenv(ca.ENV_SWITCH, "1")
    monkeypatch.setattr(ca, "_java_binary", lambda: jdk / "bin" / "java")
    monkeypatch.setattr(ca, "spark_jars", lambda: jars)
    a = ca.class_archive()
    assert a is not None and a.path == cache / f"spark-driver-{ca.archive_key(jdk, jars)}.jsa" and a.jars == jars
    assert a.java_options() == f'-XX:ArchiveClassesAtExit="{a.path}.{os.getpid()}.tmp" -Xlog:cds*=off'
    _archive(cache, a.path.stem.removeprefix("spark-driver-"), jars, used=0)
    stale = _archive(cache, "9" * 16, None)
    assert ca.class_archive() == a and not stale.exists()
    assert a.sidecar.stat().st_mtime > 1_000  # just used
    assert a.java_options() == f'-XX:SharedArchiveFile="{a.path}" -Xlog:cds*=off'
    assert ca.spark_option_word('/a "b"\\c') == '"/a \\"b\\"\\\\c"'  # Spark's launcher reads it back as one word


def test_dumps_of_dead_processes_are_removed_and_a_live_ones_kept(monkeypatch, tmp_path):
    monkeypatch.setenv(ca.ENV_CACHE, str(tmp_path))
    monkeypatch.setenv(ca.ENV_SWITCH, "1")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    abandoned = tmp_path / f"spark-driver-0123456789abcdef.jsa.{dead.pid}.tmp"
    live = tmp_path / f"spark-driver-0123456789abcdef.jsa.{os.getpid()}.tmp"
    abandoned.write_bytes(b"half")
    live.write_bytes(b"busy")
    ca.prune(tmp_path)
    assert not abandoned.exists() and live.exists()


def test_a_failed_dump_is_never_published_fake_jvm(tmp_path):
    """Fake JVM (named so): a driver JVM that exits non-zero after writing part of its dump cannot be caused on
    demand; publish() must then drop the partial file, because a truncated archive crashes the next JVM (SIGBUS)."""
    archive = ca.ClassArchive(tmp_path / "spark-driver-x.jsa", tmp_path)
    script = f"import sys; sys.stdin.read(); open({str(archive.pending)!r}, 'wb').write(b'partial'); sys.exit(3)"

    class Gateway:
        proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)

        def shutdown(self):
            pass

    assert ca.publish(archive, Gateway()) is False
    assert not archive.path.exists() and not archive.pending.exists() and not archive.sidecar.exists()
