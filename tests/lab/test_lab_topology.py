"""The lab's topology plan (pure): namespaces, veths, addresses, shapes, CPU quotas and TaskManager specs per host."""

from __future__ import annotations

from pathlib import Path

import pytest

from placement.errors import BadInput
from placement.inventory import load_inventory
from placement.lab import topology as topo
from placement.lab.measure import parse_ss_bytes
from placement.netem.tc import apply_commands

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "inventory" / "lab.yaml"
LAB_3PI = ROOT / "inventory" / "lab-3pi.yaml"


def test_lab_yaml_gives_each_pi_a_namespace_a_shaped_veth_and_a_third_of_a_core(tmp_path):
    plan = topo.plan_lab(load_inventory(LAB), tmp_path, machine_cores=2)
    assert [h.name for h in plan.hosts] == ["server", "rpi1", "rpi2"]
    server, rpi1, rpi2 = plan.hosts
    assert (server.namespace, server.address, server.cpu) == (None, "10.203.0.1", None)
    assert (rpi1.namespace, rpi1.host_if, rpi1.ns_if, rpi1.host_addr, rpi1.address) == (
        "pl-lab-rpi1",
        "pllab1h",
        "pllab1n",
        "10.203.1.1",
        "10.203.1.2",
    )
    assert (rpi2.namespace, rpi2.ns_if, rpi2.address) == ("pl-lab-rpi2", "pllab2n", "10.203.2.2")
    # one core of a Pi 4B = 0.3 of a server core -> 30 ms per 100 ms period; 0.6 cores in all fit in half of 2 cores
    assert rpi1.cpu is not None and (rpi1.cpu.period_us, rpi1.cpu.quota_us) == (100_000, 30_000)
    assert rpi1.cpu.cgroup == Path("/sys/fs/cgroup/cpu/pl-lab-rpi1")
    assert plan.cpu_scale == 1.0 and plan.notes == ()
    assert [(s.dest, s.rate_mbit) for s in rpi1.shapes] == [("10.203.0.0/16", 2.0)]
    # the shared tc builder turns it into one htb class at 2 Mbit/s matching the whole lab network
    cmds = apply_commands(rpi1.ns_if, list(rpi1.shapes), with_netem=False)
    assert cmds[1][cmds[1].index("rate") : cmds[1].index("rate") + 2] == ["rate", "2mbit"]
    assert cmds[2][-4:] == ["dst", "10.203.0.0/16", "flowid", "ede:10"]


def test_three_whole_pis_exceed_half_of_two_cores_and_are_scaled_down_saying_so(tmp_path):
    inv = load_inventory(LAB_3PI)
    plan = topo.plan_lab(inv, tmp_path, machine_cores=2)
    # 3 x 4 cores x 0.3 = 3.6 server cores asked; the edges get 1.0 (half of 2): scale 1/3.6
    assert plan.cpu_scale == pytest.approx(1 / 3.6)
    assert [h.cpu.quota_us for h in plan.edges] == [33_333] * 3  # type: ignore[union-attr]
    assert sum(h.cpu.cores for h in plan.edges) == pytest.approx(1.0, abs=1e-4)  # type: ignore[union-attr]
    assert "scaled by 0.278" in plan.notes[0]
    assert [h.effective_speed for h in plan.edges] == [pytest.approx(0.3 / 3.6)] * 3
    # on a 16-core machine nothing is scaled
    assert topo.plan_lab(inv, tmp_path, machine_cores=16).cpu_scale == 1.0


def test_cluster_spec_runs_edge_taskmanagers_in_their_namespace_and_cgroup_with_their_own_resource(tmp_path):
    plan = topo.plan_lab(load_inventory(LAB), tmp_path, machine_cores=2)
    spec = topo.cluster_spec(plan, mode="vanilla")
    assert spec.jobmanager_address == "10.203.0.1" and spec.rest_address == "127.0.0.1"
    assert spec.work_dir == tmp_path / "flink"
    tms = {tm.resource_id: tm for tm in spec.taskmanagers}
    assert tms["server"].wrapper == () and tms["server"].address == "10.203.0.1"
    assert tms["server"].external_resource == "server" and tms["server"].slots == 8
    rpi1 = tms["rpi1"]
    assert rpi1.address == "10.203.1.2" and rpi1.slots == 4 and rpi1.external_resource == "rpi1"
    assert rpi1.external_resource_amount >= rpi1.slots
    assert rpi1.wrapper[-4:] == ("ip", "netns", "exec", "pl-lab-rpi1")
    assert "/sys/fs/cgroup/cpu/pl-lab-rpi1/cgroup.procs" in rpi1.wrapper[2]
    assert rpi1.extra_config == {"taskmanager.data.port": topo.EDGE_DATA_PORT}


def test_custom_mode_gives_one_resource_unit_per_slot_and_the_jobmanager_the_extension_keys(tmp_path):
    plan = topo.plan_lab(load_inventory(LAB), tmp_path, machine_cores=2)
    home = tmp_path / "flink-home"
    spec = topo.cluster_spec(plan, flink_home=home, mode="custom")
    tms = {tm.resource_id: tm for tm in spec.taskmanagers}
    assert {(tm.external_resource, tm.external_resource_amount) for tm in tms.values()} == {
        ("server", 8),
        ("rpi1", 4),
        ("rpi2", 4),
    }
    assert spec.jobmanager_conf_dir == home / "conf"  # what apply reads as <flink.home>/conf/config.yaml
    assert spec.jobmanager_extra_config == {
        "placement.scheduler.dir": str(home / "placement" / "scheduler"),
        "jobmanager.scheduler": "default",
    }
    # without the extension the JobManager config has no scheduler keys
    assert topo.cluster_spec(plan, flink_home=home, mode="vanilla").jobmanager_extra_config == {}


@pytest.mark.parametrize("mode", ["custom", "vanilla"])
def test_the_running_inventory_has_real_addresses_the_rest_url_the_mode_and_the_lab_ssh(tmp_path, mode):
    inv = load_inventory(LAB_3PI)
    plan = topo.plan_lab(inv, tmp_path, machine_cores=2)
    access = topo.LabAccess(
        rest_url="http://127.0.0.1:40000",
        mode=mode,
        flink_home=tmp_path / "flink-home",
        ssh_user="root",
        ssh_key=tmp_path / "ssh" / "lab_ed25519",
        known_hosts=tmp_path / "ssh" / "known_hosts",
        flink_version="1.20.5",
    )
    data = topo.lab_inventory(inv, plan, access)
    hosts = {h["name"]: h for h in data["hosts"]}
    assert hosts["rpi3"]["address"] == "10.203.3.2" and hosts["rpi3"]["interface"] == "pllab3n"
    assert hosts["rpi3"]["speed"] == pytest.approx(0.3 / 3.6, abs=1e-4)
    assert data["flink"]["rest_url"] == "http://127.0.0.1:40000" and data["flink"]["placement_mode"] == mode
    # each uplink states the burst of the htb class the lab installs for it (the expected latency's send counts it)
    from placement.netem.tc import apply_commands

    for link in data["links"]:
        (htb_class,) = [
            argv
            for argv in apply_commands("x", list(plan.host(link["from"]).shapes), with_netem=False)
            if argv[:3] == ["tc", "class", "add"]
        ]
        assert link["burst"] == int(htb_class[htb_class.index("burst") + 1]) >= 3200
    from placement.inventory import Inventory

    running = Inventory.model_validate(data)  # the planner and apply can read it
    assert {link.from_: link.burst for link in running.links} == {link["from"]: link["burst"] for link in data["links"]}
    assert running.flink.home == str(tmp_path / "flink-home")
    assert running.flink.version == "1.20.5"  # pinned to what runs: apply checks the JobManager against it
    assert running.flink.scheduler_directory == str(tmp_path / "flink-home" / "placement" / "scheduler")
    ssh = running.ssh_for(running.host("rpi1"))
    assert (ssh.user, ssh.key, ssh.known_hosts) == (
        "root",
        str(tmp_path / "ssh" / "lab_ed25519"),
        str(tmp_path / "ssh" / "known_hosts"),
    )


def test_an_inventory_with_two_servers_is_refused_naming_the_field(tmp_path):
    inv = load_inventory(LAB)
    data = inv.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["hosts"].append({**data["hosts"][0], "name": "server2", "address": "10.203.0.9"})
    from placement.inventory import Inventory

    with pytest.raises(BadInput, match=r"lab.yaml: hosts: the lab runs exactly one server host, the inventory has 2"):
        topo.plan_lab(Inventory.model_validate(data), tmp_path, source="lab.yaml")


def test_ss_output_is_summed_per_socket():
    text = (
        "0      0      [::ffff:10.203.1.2]:6121 [::ffff:10.203.1.1]:57606\n"
        "\t cubic wscale:10,10 rto:204 bytes_sent:914236 bytes_retrans:170 bytes_acked:914066 bytes_received:32115\n"
        "0      0      [::ffff:10.203.1.2]:6121 [::ffff:10.203.1.1]:57610\n"
        "\t cubic bytes_acked:10 segs_out:3\n"
    )
    assert parse_ss_bytes(text) == {
        "[::ffff:10.203.1.2]:6121 [::ffff:10.203.1.1]:57606": 914066,
        "[::ffff:10.203.1.2]:6121 [::ffff:10.203.1.1]:57610": 10,
    }


def _written(conf_dir: Path) -> dict[str, object]:
    from placement.flink.options import read_config

    return read_config((conf_dir / "config.yaml").read_text(), "config.yaml")


@pytest.mark.parametrize(
    "block",
    [
        None,
        {
            "heartbeat_interval": "3s",
            "heartbeat_timeout": "20s",
            "slot_request_timeout": "30s",
            "restart": {"attempts": 4},
        },
    ],
)
def test_every_config_yaml_the_lab_writes_carries_the_inventorys_failure_detection(tmp_path, block):
    import yaml

    from placement.flink.options import CONFIG_YAML
    from placement.lab import flink as lf

    data = yaml.safe_load(LAB.read_text())
    if block is not None:
        data["flink"]["failure_detection"] = block
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(data))
    plan = topo.plan_lab(load_inventory(tmp_path / "inv.yaml"), tmp_path, machine_cores=2)
    spec = topo.cluster_spec(plan, flink_home=tmp_path / "home", mode="custom")
    # what _start writes: the JobManager's conf dir and one per TaskManager, through the same builders
    lf._write_conf_dir(tmp_path / "jm", lf.jobmanager_config(spec, 18081, 16123))
    for tm in spec.taskmanagers:
        lf._write_conf_dir(tmp_path / tm.resource_id, lf.taskmanager_config(spec, tm, 18081, 16123))
    want = {
        "heartbeat.interval": 2000,
        "heartbeat.timeout": 10000,
        "heartbeat.rpc-failure-threshold": 2,
        "slot.request.timeout": 15000,
        "restart-strategy.type": "exponential-delay",
        "restart-strategy.exponential-delay.initial-backoff": 1000,
        "restart-strategy.exponential-delay.max-backoff": 10000,
        "restart-strategy.exponential-delay.attempts-before-reset-backoff": 10,
        "taskmanager.registration.timeout": 604_800_000,
        "cluster.registration.max-timeout": 5000,
        "cluster.registration.error-delay": 1000,
    }
    if block is not None:
        want |= {
            "heartbeat.interval": 3000,
            "heartbeat.timeout": 20000,
            "slot.request.timeout": 30000,
            "restart-strategy.exponential-delay.attempts-before-reset-backoff": 4,
        }
    for conf_dir in (tmp_path / "jm", *(tmp_path / tm.resource_id for tm in spec.taskmanagers)):
        written = _written(conf_dir)
        assert {k: written.get(k) for k in want} == want, conf_dir
        assert "restart-strategy.fixed-delay.attempts" not in written  # the lab's old 3 attempts are gone
    assert CONFIG_YAML == "config.yaml"


def test_every_taskmanager_the_lab_starts_gets_the_inventorys_network_buffers(tmp_path):
    import yaml

    from placement.lab import flink as lf

    data = yaml.safe_load(LAB.read_text())
    plan = topo.plan_lab(load_inventory(LAB), tmp_path, machine_cores=2)
    assert plan.network == {}  # Flink's defaults: nothing written
    data["flink"]["network"] = {"buffers_per_channel": 19, "floating_buffers_per_gate": 16}
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(data))
    plan = topo.plan_lab(load_inventory(tmp_path / "inv.yaml"), tmp_path, machine_cores=2)
    spec = topo.cluster_spec(plan, flink_home=tmp_path / "home", mode="custom")
    for tm in spec.taskmanagers:
        config = lf.taskmanager_config(spec, tm, 18081, 16123)
        assert config["taskmanager.network.memory.buffers-per-channel"] == 19
        assert config["taskmanager.network.memory.floating-buffers-per-gate"] == 16
