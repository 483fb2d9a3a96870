"""BashJavaUtils' memory flags are asked once per Flink and sizing (placement/lab/flink.py): a second cluster of the
same sizing, a lab home mirroring the same Flink, or another process (the tool's cache) reuses the answer; another
sizing asks again."""

from __future__ import annotations

import pytest

from placement.flink.home import find_flink_home
from placement.lab import flink as lf
from placement.lab.home import make_lab_home
from support.flink import require_jdk


@pytest.fixture
def asked(monkeypatch, tmp_path) -> list[str]:
    """The real BashJavaUtils, each call recorded; the process' answers and the tool's cache set aside for the test."""
    calls: list[str] = []
    real = lf._memory_flags

    def counting(home, command, conf_dir):
        calls.append(command)
        return real(home, command, conf_dir)

    monkeypatch.setattr(lf, "_MEMORY_FLAGS", {})
    monkeypatch.setenv("PLACEMENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(lf, "_memory_flags", counting)
    return calls


def test_one_answer_per_flink_and_sizing_also_across_lab_homes(tmp_path, asked):
    require_jdk()
    base = find_flink_home()
    spec = lf.ClusterSpec(work_dir=tmp_path / "c", taskmanagers=(lf.TaskManagerSpec("rpi1", slots=4),))
    conf_dir = tmp_path / "conf"
    conf = lf.taskmanager_config(spec, spec.taskmanagers[0], 1, 2)
    lf._write_conf_dir(conf_dir, conf)
    first = lf._memory_flags_cached(base, "GET_TM_RESOURCE_PARAMS", conf_dir, lf.memory_sizing_key(conf))
    assert any(f.startswith("-Xmx") for f in first[0]) and "taskmanager.memory.task.heap.size" in " ".join(first[1])
    # other ports and paths (another cluster), another lab home of the same Flink: the same answer, not asked again
    other = lf.taskmanager_config(
        lf.ClusterSpec(work_dir=tmp_path / "d", taskmanagers=spec.taskmanagers), spec.taskmanagers[0], 3, 4
    )
    lab = make_lab_home(tmp_path / "lab", base, with_extension=False)
    assert lf._memory_flags_cached(lab, "GET_TM_RESOURCE_PARAMS", conf_dir, lf.memory_sizing_key(other)) == first
    assert asked == ["GET_TM_RESOURCE_PARAMS"]
    # another sizing is asked (and answered otherwise)
    bigger = lf.taskmanager_config(spec, lf.TaskManagerSpec("rpi1", slots=4, task_heap_mib=384), 1, 2)
    lf._write_conf_dir(conf_dir, bigger)
    assert lf._memory_flags_cached(base, "GET_TM_RESOURCE_PARAMS", conf_dir, lf.memory_sizing_key(bigger)) != first
    assert asked == ["GET_TM_RESOURCE_PARAMS"] * 2

    # another process: the answers are read from the tool's cache, one file per Flink and sizing
    stored = sorted((tmp_path / "cache" / lf.MEMORY_FLAGS_CACHE).iterdir())
    assert len(stored) == 2 and all(p.suffix == ".json" for p in stored)
    lf._MEMORY_FLAGS.clear()
    assert lf._memory_flags_cached(base, "GET_TM_RESOURCE_PARAMS", conf_dir, lf.memory_sizing_key(conf)) == first
    assert asked == ["GET_TM_RESOURCE_PARAMS"] * 2
    # a file that cannot be read is asked again (and rewritten)
    lf._MEMORY_FLAGS.clear()
    for p in stored:
        p.write_text("{")
    lf._write_conf_dir(conf_dir, conf)
    assert lf._memory_flags_cached(base, "GET_TM_RESOURCE_PARAMS", conf_dir, lf.memory_sizing_key(conf)) == first
    assert asked == ["GET_TM_RESOURCE_PARAMS"] * 3


def test_the_jobmanager_s_key_is_its_memory_options(tmp_path):
    a = lf.jobmanager_config(lf.ClusterSpec(work_dir=tmp_path / "a", taskmanagers=()), 1, 2)
    b = lf.jobmanager_config(lf.ClusterSpec(work_dir=tmp_path / "b", taskmanagers=(), rest_port=5), 3, 4)
    c = lf.jobmanager_config(lf.ClusterSpec(work_dir=tmp_path / "c", taskmanagers=(), jobmanager_heap_mib=512), 1, 2)
    assert lf.jobmanager_sizing_key(a) == lf.jobmanager_sizing_key(b) != lf.jobmanager_sizing_key(c)
    assert '"jobmanager.memory.heap.size": "256m"' in lf.jobmanager_sizing_key(a)
