"""The pure parts of the cluster launcher and REST client: config, argv and request builders (no JVM started)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from placement.errors import PlacementError
from placement.flink.config import nest
from placement.flink.options import render_config
from placement.flink.rest import run_request_body
from placement.lab import flink as lf


def spec(tmp_path: Path, **kw) -> lf.ClusterSpec:
    tms = (
        lf.TaskManagerSpec("server", slots=4, external_resource="server", external_resource_amount=8),
        lf.TaskManagerSpec("rpi1", slots=2, address="10.203.0.2", wrapper=("ip", "netns", "exec", "pl-rpi1")),
    )
    return lf.ClusterSpec(work_dir=tmp_path, taskmanagers=tms, **kw)


def test_nest_builds_flink2_nested_yaml_and_keeps_leaf_prefix_conflicts_dotted():
    nested = nest({"rest.port": 8081, "rest.address": "127.0.0.1", "a.b": 1, "a.b.c": 2, "x": True})
    assert nested == {"rest": {"port": 8081, "address": "127.0.0.1"}, "a": {"b": 1, "b.c": 2}, "x": True}


def test_taskmanager_config_carries_resource_id_slots_address_and_external_resource(tmp_path):
    s = spec(tmp_path)
    server = lf.taskmanager_config(s, s.taskmanagers[0], rest_port=18081, rpc_port=16123)
    assert server["taskmanager.resource-id"] == "server"
    assert server["taskmanager.numberOfTaskSlots"] == 4
    assert server["external-resources"] == ["server"]
    assert server["external-resource.server.amount"] == 8
    assert server["rest.port"] == 18081 and server["jobmanager.rpc.port"] == 16123
    assert lf.jobmanager_config(s, 18081, 16123)["jobmanager.bind-host"] == "127.0.0.1"
    wide = lf.ClusterSpec(tmp_path, s.taskmanagers, jobmanager_address="10.203.0.1", jobmanager_bind_host="0.0.0.0")
    assert lf.jobmanager_config(wide, 1, 2)["jobmanager.bind-host"] == "0.0.0.0"
    assert lf.jobmanager_config(wide, 1, 2)["jobmanager.rpc.address"] == "10.203.0.1"
    edge = lf.taskmanager_config(s, s.taskmanagers[1], 18081, 16123)
    assert edge["taskmanager.host"] == edge["taskmanager.bind-host"] == "10.203.0.2"
    assert "external-resources" not in edge
    # the file Flink reads: nested YAML that flattens back to the same keys
    text = render_config(server)
    loaded = yaml.safe_load(text)
    assert loaded["taskmanager"]["resource-id"] == "server"
    assert loaded["external-resource"]["server"]["amount"] == 8


def test_java17_flags_are_on_every_jvm_and_wrapper_prefixes_only_the_taskmanager(tmp_path):
    s = spec(tmp_path)
    lib = tmp_path / "flink" / "lib"
    lib.mkdir(parents=True)
    for name in ("flink-dist-2.3.0.jar", "zz-connector.jar", "placement-scheduler-ext.jar", "a-table.jar"):
        (lib / name).write_bytes(b"")
    home = lf.FlinkHome(tmp_path / "flink")
    conf = tmp_path / "conf"
    tm = lf.taskmanager_argv(home, s.taskmanagers[1], conf, tmp_path / "tm.log", ["-Xmx100m"], ["-Dx=y"])
    assert tm[:5] == ["ip", "netns", "exec", "pl-rpi1", "java"]
    assert "--add-opens=java.base/java.util=ALL-UNNAMED" in tm
    assert "--add-exports=java.base/sun.net.util=ALL-UNNAMED" in tm
    assert tm.index("-Xmx100m") < tm.index(lf.TASKMANAGER_MAIN) < tm.index("-Dx=y")
    # bin/config.sh's order: the other lib/ jars sorted, flink-dist last (so a class in a lib/ jar wins)
    order = ["a-table.jar", "placement-scheduler-ext.jar", "zz-connector.jar", "flink-dist-2.3.0.jar"]
    assert tm[tm.index("-cp") + 1] == ":".join(str(lib / n) for n in order)
    jm = lf.jobmanager_argv(home, conf, tmp_path / "jm.log", [], [])
    assert jm[jm.index("-cp") + 1] == tm[tm.index("-cp") + 1]
    assert jm[0] == "java" and lf.JOBMANAGER_MAIN in jm and "--add-opens=java.base/java.lang=ALL-UNNAMED" in jm
    assert f"-Dlog.file={tmp_path / 'jm.log'}" in jm


def test_parse_bash_java_utils_takes_the_last_two_result_lines():
    out = (
        "INFO some log line\n"
        "BASH_JAVA_UTILS_EXEC_RESULT:-Xmx268435456 -Xms268435456 -XX:MaxMetaspaceSize=201326592\n"
        "BASH_JAVA_UTILS_EXEC_RESULT:-D taskmanager.memory.network.min=67108864b -D taskmanager.cpu.cores=4.0\n"
    )
    jvm, dyn = lf.parse_bash_java_utils(out)
    assert jvm == ["-Xmx268435456", "-Xms268435456", "-XX:MaxMetaspaceSize=201326592"]
    assert dyn == ["-D", "taskmanager.memory.network.min=67108864b", "-D", "taskmanager.cpu.cores=4.0"]
    with pytest.raises(PlacementError, match="no memory settings"):
        lf.parse_bash_java_utils("Exception in thread main")


def test_duplicate_resource_ids_are_rejected(tmp_path):
    with pytest.raises(PlacementError, match="duplicate TaskManager resource id"):
        lf.ClusterSpec(tmp_path, (lf.TaskManagerSpec("rpi1"), lf.TaskManagerSpec("rpi1")))


def test_find_flink_home_prefers_flink_home_with_lib_and_falls_back_to_the_wheel(tmp_path, monkeypatch):
    home = tmp_path / "flink-2.3.0"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "flink-dist-2.3.0.jar").write_bytes(b"")
    monkeypatch.setenv("FLINK_HOME", str(home))
    found = lf.find_flink_home()
    assert found.path == home.resolve() and found.version == "2.3.0"
    monkeypatch.setenv("FLINK_HOME", str(tmp_path / "nothing-here"))
    wheel = lf.find_flink_home()
    assert wheel.path.name == "pyflink" and any(wheel.lib.glob("flink-dist*.jar"))
    assert wheel.bash_java_utils.is_file()


def test_free_port_never_hands_out_a_port_in_use_so_clusters_can_coexist():
    # A cluster listens on its ports once started; the next cluster asks while they are in use. The kernel picks the
    # port (bind to 0), so it comes from the ephemeral range and is never one somebody listens on: hold each port as
    # it is handed out, and every later answer must be another port that can be bound at once. (Distinct answers
    # while NOT held are not promised: a port freed again may come back, which is harmless.)
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    held: list[socket.socket] = []
    try:
        for _ in range(20):
            port = lf.free_port()
            assert low <= port <= high, (port, low, high)
            assert port not in {s.getsockname()[1] for s in held}
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(listener)
            listener.bind(("127.0.0.1", port))  # raises if the port was not free
            listener.listen()
    finally:
        for listener in held:
            listener.close()


def test_run_request_body_uses_the_keys_flink_2_3_reads():
    body = run_request_body(
        entry_class="placement.lab.IotSensorJob",
        program_args=["--rate", 5],
        parallelism=2,
        savepoint_path="file:///tmp/sp",
        allow_non_restored_state=True,
    )
    assert body == {
        "entryClass": "placement.lab.IotSensorJob",
        "programArgsList": ["--rate", "5"],
        "parallelism": 2,
        "savepointPath": "file:///tmp/sp",
        "allowNonRestoredState": True,
    }
    assert run_request_body() == {"programArgsList": []}


def test_taskmanagers_sized_alike_share_one_memory_computation_and_others_do_not(tmp_path):
    s = spec(tmp_path)
    a = lf.taskmanager_config(s, lf.TaskManagerSpec("rpi1", slots=4), 1, 2)
    b = lf.taskmanager_config(s, lf.TaskManagerSpec("rpi2", slots=4, address="10.203.0.6"), 1, 2)
    c = lf.taskmanager_config(s, lf.TaskManagerSpec("rpi3", slots=2), 1, 2)
    d = lf.taskmanager_config(s, lf.TaskManagerSpec("rpi4", slots=4, task_heap_mib=256), 1, 2)
    # BashJavaUtils' dynamic properties carry the external resources: a TM must never get another TM's pin
    e = lf.taskmanager_config(
        s, lf.TaskManagerSpec("rpi5", slots=4, external_resource="rpi5", external_resource_amount=4), 1, 2
    )
    f = lf.taskmanager_config(
        s, lf.TaskManagerSpec("rpi6", slots=4, external_resource="rpi6", external_resource_amount=4), 1, 2
    )
    assert lf.memory_sizing_key(a) == lf.memory_sizing_key(b)
    assert len({lf.memory_sizing_key(x) for x in (a, c, d, e, f)}) == 5


def test_before_2_2_the_jobmanager_binds_every_interface_for_jar_runs(tmp_path):
    """1.19-2.1's REST jar run uploads the job's files to the blob server at localhost (it asks only for the port):
    a JobManager bound to the lab's 10.203.0.1 refused every jar run on the 1.20 lab. From 2.2 it asks for the
    address, and the JobManager binds where its RPC address is."""
    from placement.flink.versions import FlinkVersion

    s = lf.ClusterSpec(work_dir=tmp_path, taskmanagers=(lf.TaskManagerSpec("tm0"),), jobmanager_address="10.203.0.1")
    binds = {
        v: lf.jobmanager_config(s, 1, 2, FlinkVersion.parse(v))["jobmanager.bind-host"]
        for v in ("1.19.3", "1.20.5", "2.0.2", "2.1.3", "2.2.1", "2.3.0")
    }
    assert binds == {
        "1.19.3": "0.0.0.0",
        "1.20.5": "0.0.0.0",
        "2.0.2": "0.0.0.0",
        "2.1.3": "0.0.0.0",
        "2.2.1": "10.203.0.1",
        "2.3.0": "10.203.0.1",
    }
    assert lf.jobmanager_config(s, 1, 2, FlinkVersion.parse("2.3.0"))["jobmanager.rpc.address"] == "10.203.0.1"
