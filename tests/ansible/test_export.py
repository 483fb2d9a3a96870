"""`placement inventory ansible`: the pure export and its command line (no hosts touched)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml
from ansible_support import REPO, placement_cli, require_tool

from placement.errors import BadInput
from placement.flink.versions import SUPPORTED_LINES
from placement.inventory import Inventory, load_inventory
from placement.inventory.wan_profiles import load_profile
from placement.writers.ansible import LocalArchive, ansible_inventory, render

EDGE_LAB = REPO / "inventory" / "edge-lab.yaml"


def minimal(**overrides: object) -> Inventory:
    doc: dict = {
        "name": "two-hosts",
        "ssh": {"user": "admin", "key": "keys/id_ed25519", "known_hosts": "keys/known hosts", "sudo": True},
        "hosts": [
            {"name": "srv", "address": "10.0.0.1", "role": "server", "cores": 6, "memory": "12GiB"},
            {
                "name": "pi",
                "address": "10.0.0.2",
                "role": "edge",
                "model": "rpi4b",
                "interface": "wlan0",
                "ssh": {"user": "pi", "port": 2222, "sudo": False},
            },
        ],
        "links": [{"from": "pi", "to": "srv", "bandwidth": "20mbit", "delay": "30ms", "loss": "1%"}],
        "flink": {
            "rest_url": "https://flink.lan:9443",
            "home": "/srv/flink",
            "placement_mode": "vanilla",
            "archive_url": "https://example.org/flink.tgz",
            "archive_sha512": "AB" * 64,
        },
    }
    doc.update(overrides)
    return Inventory.model_validate(doc)


def hostvars(doc: dict, group: str, host: str) -> dict:
    return doc["all"]["children"][group]["hosts"][host]


def test_edge_lab_groups_and_figures() -> None:
    doc = ansible_inventory(load_inventory(EDGE_LAB))
    children = doc["all"]["children"]
    assert list(children["jobmanager"]["hosts"]) == ["server"]
    assert list(children["servers"]["hosts"]) == ["server"]
    assert list(children["edges"]["hosts"]) == ["rpi1", "rpi2", "rpi3"]

    cluster = doc["all"]["vars"]
    assert cluster["flink_jobmanager_address"] == "192.168.1.180"
    assert (cluster["flink_rest_address"], cluster["flink_rest_port"]) == ("192.168.1.180", 8081)
    assert cluster["flink_placement_mode"] == "custom"
    assert cluster["flink_scheduler_dir"] == "/opt/flink/placement/scheduler"
    assert cluster["placement_memory_utilisation_target"] == 0.8

    server = hostvars(doc, "servers", "server")
    assert server["ansible_host"] == "192.168.1.180"
    assert server["flink_taskmanager_slots"] == 8 and server["placement_memory_mib"] == 16384
    assert server["placement_arch"] == "x86_64"
    assert "netem_apply_commands" not in server  # servers have no uplink to shape

    pi = hostvars(doc, "edges", "rpi2")
    assert (pi["ansible_user"], pi["ansible_port"], pi["ansible_ssh_private_key_file"]) == (
        "flink",
        22,
        "~/.ssh/id_ed25519",
    )
    assert pi["placement_arch"] == "aarch64" and pi["placement_memory_mib"] == 4096
    assert pi["flink_taskmanager_slots"] == 4 and pi["flink_taskmanager_cpu_cores"] == 4
    assert pi["flink_taskmanager_resource_id"] == "rpi2"
    assert (pi["flink_external_resource"], pi["flink_external_resource_amount"]) == ("rpi2", 4)
    assert pi["placement_uplink"]["bandwidth_mbit"] == 50 and pi["placement_uplink"]["delay_ms"] == 50


def test_edge_lab_netem_commands_shape_the_uplink_towards_the_server() -> None:
    pi = hostvars(ansible_inventory(load_inventory(EDGE_LAB)), "edges", "rpi1")
    assert pi["netem_interface"] == "eth0"
    assert pi["netem_query_command"] == ["tc", "-j", "qdisc", "show", "dev", "eth0", "root"]
    assert pi["netem_clear_commands"] == [
        ["tc", "qdisc", "del", "dev", "eth0", "root", "handle", pi["netem_root_handle"]]
    ]
    commands = [" ".join(c) for c in pi["netem_apply_commands"]]
    assert commands[0].startswith(f"tc qdisc add dev eth0 root handle {pi['netem_root_handle']} htb")
    assert any("htb rate 50mbit ceil 50mbit" in c for c in commands)
    assert any("match ip dst 192.168.1.180/32" in c for c in commands)
    assert any(c.endswith("netem limit 1000 delay 50ms") for c in commands)


def test_rate_only_leaves_out_netem_but_keeps_the_rate() -> None:
    inv = load_inventory(EDGE_LAB)
    full = hostvars(ansible_inventory(inv), "edges", "rpi1")["netem_apply_commands"]
    rate_only = hostvars(ansible_inventory(inv, with_netem=False), "edges", "rpi1")["netem_apply_commands"]
    assert len(rate_only) == len(full) - 1
    assert not any("netem" in argv for argv in rate_only)
    assert any("50mbit" in argv for argv in rate_only)


def test_wan_profile_replaces_the_link_figures() -> None:
    inv = minimal()
    pi = hostvars(ansible_inventory(inv, wan_profile=load_profile("wan-50mbit-50ms")), "edges", "pi")
    commands = [" ".join(c) for c in pi["netem_apply_commands"]]
    assert any("rate 50mbit" in c for c in commands) and not any("20mbit" in c for c in commands)
    assert any("delay 50ms" in c for c in commands) and not any("loss" in c for c in commands)


def test_ssh_settings_become_ansible_connection_vars(tmp_path: Path) -> None:
    doc = ansible_inventory(minimal(), base_dir=tmp_path)
    srv, pi = hostvars(doc, "servers", "srv"), hostvars(doc, "edges", "pi")
    assert (srv["ansible_user"], srv["ansible_port"], srv["ansible_become"]) == ("admin", 22, True)
    assert srv["ansible_ssh_private_key_file"] == str(tmp_path / "keys" / "id_ed25519")
    # host key checking stays on, with the inventory's known_hosts (quoted: the path has a space)
    assert srv["ansible_ssh_common_args"] == (
        f"-o UserKnownHostsFile='{tmp_path / 'keys' / 'known hosts'}' -o StrictHostKeyChecking=yes"
    )
    # the host's own ssh settings override the defaults field by field
    assert (pi["ansible_user"], pi["ansible_port"]) == ("pi", 2222)
    assert "ansible_become" not in pi
    assert pi["ansible_ssh_private_key_file"] == srv["ansible_ssh_private_key_file"]


def test_cluster_vars_for_vanilla_mode_and_archive() -> None:
    doc = ansible_inventory(minimal())
    cluster = doc["all"]["vars"]
    assert cluster["flink_placement_mode"] == "vanilla"
    assert (cluster["flink_rest_address"], cluster["flink_rest_port"]) == ("flink.lan", 9443)
    assert cluster["flink_archive_url"] == "https://example.org/flink.tgz"
    assert cluster["flink_archive_sha512"] == "ab" * 64
    assert "flink_archive_src" not in cluster
    local = ansible_inventory(minimal(), archive=LocalArchive("/tmp/f.tgz", "CD" * 64))["all"]["vars"]
    assert (local["flink_archive_src"], local["flink_archive_sha512"]) == ("/tmp/f.tgz", "cd" * 64)
    pi = hostvars(doc, "edges", "pi")
    assert pi["flink_taskmanager_slots"] == 4 and pi["placement_memory_mib"] == 4096


def test_the_flink_version_pin_is_what_the_role_installs_and_unpinned_leaves_the_roles_default() -> None:
    flink = minimal().flink.model_dump() | {"version": "1.20.5"}
    pinned = ansible_inventory(minimal(flink=flink))["all"]["vars"]
    assert pinned["flink_version"] == "1.20.5"
    assert "flink_version" not in ansible_inventory(minimal())["all"]["vars"]
    role = yaml.safe_load((REPO / "ansible" / "roles" / "flink" / "defaults" / "main.yml").read_text())
    assert role["flink_supported_lines"] == [f"{major}.{minor}" for major, minor in SUPPORTED_LINES]


def test_failure_detection_is_exported_through_the_one_mapping_and_the_roles_defaults_are_the_edge_defaults() -> None:
    from placement.flink.config import flatten
    from placement.inventory.failure_detection import FailureDetection, flink_config

    role = yaml.safe_load((REPO / "ansible" / "roles" / "flink" / "defaults" / "main.yml").read_text())
    # a hand-written Ansible inventory gets what an inventory without the block maps to: the three writers agree
    assert flatten(role["flink_failure_detection_config"]) == flink_config(FailureDetection())
    assert flatten(ansible_inventory(minimal())["all"]["vars"]["flink_failure_detection_config"]) == flink_config(
        FailureDetection()
    )
    flink = minimal().flink.model_dump() | {
        "failure_detection": {"heartbeat_timeout": "30s", "rejoin": {"retry_max": "2s"}}
    }
    exported = flatten(ansible_inventory(minimal(flink=flink))["all"]["vars"]["flink_failure_detection_config"])
    assert (exported["heartbeat.timeout"], exported["cluster.registration.max-timeout"]) == (30000, 2000)
    assert exported["heartbeat.interval"] == 2000 and exported["restart-strategy.type"] == "exponential-delay"


def test_edge_without_interface_is_bad_input() -> None:
    inv = minimal()
    inv.hosts[1].interface = None
    with pytest.raises(BadInput, match=r"inv\.yaml: hosts\[1\]\.interface: host 'pi' has no 'interface'"):
        ansible_inventory(inv, source="inv.yaml")


def test_render_is_yaml_with_one_line_argv_lists() -> None:
    doc = ansible_inventory(load_inventory(EDGE_LAB))
    text = render(doc, source="inventory/edge-lab.yaml")
    assert text.startswith("# Ansible inventory written by `placement inventory ansible` from inventory/edge-lab.yaml.")
    assert yaml.safe_load(text) == json.loads(json.dumps(doc))
    assert "- [tc, qdisc, add, dev, eth0, root, handle, 'ede:', htb, default, '0']" in text


# ---- the command line ------------------------------------------------------------------------------------------


def test_cli_writes_the_inventory(tmp_path: Path) -> None:
    out = tmp_path / "hosts.yml"
    proc = placement_cli("inventory", "ansible", str(EDGE_LAB), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "1 server(s), 3 edge host(s)" in proc.stderr
    assert yaml.safe_load(out.read_text()) == json.loads(json.dumps(ansible_inventory(load_inventory(EDGE_LAB))))
    assert [p.name for p in tmp_path.iterdir()] == ["hosts.yml"]


def test_cli_local_archive_is_checksummed(tmp_path: Path) -> None:
    archive = tmp_path / "flink.tgz"
    archive.write_bytes(b"not really flink")
    proc = placement_cli("inventory", "ansible", str(EDGE_LAB), "--flink-archive", str(archive))
    assert proc.returncode == 0, proc.stderr
    cluster = yaml.safe_load(proc.stdout)["all"]["vars"]
    assert cluster["flink_archive_src"] == str(archive)
    assert cluster["flink_archive_sha512"] == hashlib.sha512(b"not really flink").hexdigest()


def test_cli_a_flink_archive_says_which_release_the_role_installs_and_must_match_a_pin(tmp_path: Path) -> None:
    archive = tmp_path / "flink-1.20.5-bin-scala_2.12.tgz"
    with tarfile.open(archive, "w:gz") as tar:  # laid out as Apache's: everything under flink-<version>/
        for name in ("flink-1.20.5", "flink-1.20.5/lib"):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
    unpinned = placement_cli("inventory", "ansible", str(EDGE_LAB), "--flink-archive", str(archive))
    assert unpinned.returncode == 0, unpinned.stderr
    assert yaml.safe_load(unpinned.stdout)["all"]["vars"]["flink_version"] == "1.20.5"
    inv = yaml.safe_load(EDGE_LAB.read_text())
    inv["flink"]["version"] = "2.3.0"
    pinned = tmp_path / "inv.yaml"
    pinned.write_text(yaml.safe_dump(inv))
    proc = placement_cli("inventory", "ansible", str(pinned), "--flink-archive", str(archive))
    assert (proc.returncode, proc.stderr) == (
        2,
        f"error: {archive}: --flink-archive: holds Flink 1.20.5, but {pinned}: flink.version pins 2.3.0\n",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.yaml"], "error: missing.yaml: file not found"),
        (
            [str(EDGE_LAB), "--flink-archive", "/nonexistent/flink.tgz"],
            "error: /nonexistent/flink.tgz: --flink-archive: file not found",
        ),
        (
            [str(EDGE_LAB), "--out", "/dev/null/dir/hosts.yml"],  # a missing folder is made; one under a file cannot be
            "error: /dev/null/dir/hosts.yml: --out: cannot create its directory: Not a directory",
        ),
        ([str(EDGE_LAB), "--wan-profile", "no-such-profile"], "--wan-profile: unknown WAN profile 'no-such-profile'"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    proc = placement_cli("inventory", "ansible", *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_cli_archive_checksum_mismatch_names_the_field(tmp_path: Path) -> None:
    inv = yaml.safe_load(EDGE_LAB.read_text())
    inv["flink"]["archive_sha512"] = "0" * 128
    inv_path = tmp_path / "inv.yaml"
    inv_path.write_text(yaml.safe_dump(inv))
    archive = tmp_path / "flink.tgz"
    archive.write_bytes(b"something else")
    out = tmp_path / "hosts.yml"
    proc = placement_cli("inventory", "ansible", str(inv_path), "--flink-archive", str(archive), "--out", str(out))
    assert proc.returncode == 2
    assert f"error: {inv_path}: flink.archive_sha512: sha512 of {archive} is" in proc.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["flink.tgz", "inv.yaml"]


@pytest.mark.ansible
def test_ansible_reads_the_export_as_we_mean_it(tmp_path: Path) -> None:
    """Ansible's own inventory parser sees the groups, the host vars and the tc argv lists unchanged."""
    out = tmp_path / "hosts.yml"
    assert placement_cli("inventory", "ansible", str(EDGE_LAB), "--out", str(out)).returncode == 0
    proc = subprocess.run(
        [require_tool("ansible-inventory"), "-i", str(out), "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"ANSIBLE_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr  # e.g. a host named like its group ("server")
    listed = json.loads(proc.stdout)
    assert listed["jobmanager"]["hosts"] == ["server"]
    assert listed["servers"]["hosts"] == ["server"]
    assert sorted(listed["edges"]["hosts"]) == ["rpi1", "rpi2", "rpi3"]
    rpi3 = listed["_meta"]["hostvars"]["rpi3"]
    expected = hostvars(ansible_inventory(load_inventory(EDGE_LAB)), "edges", "rpi3")
    assert rpi3["netem_apply_commands"] == expected["netem_apply_commands"]
    assert rpi3["flink_home"] == "/opt/flink" and rpi3["ansible_host"] == "192.168.1.183"


def test_flink_network_is_exported_where_it_differs_from_flinks_defaults_and_the_role_merges_it() -> None:
    from placement.flink.config import flatten

    assert ansible_inventory(minimal())["all"]["vars"]["flink_network_config"] == {}
    flink = minimal().flink.model_dump() | {"network": {"buffers_per_channel": 19}}
    exported = flatten(ansible_inventory(minimal(flink=flink))["all"]["vars"]["flink_network_config"])
    assert exported == {"taskmanager.network.memory.buffers-per-channel": 19}
    role = REPO / "ansible" / "roles" / "flink"
    assert yaml.safe_load((role / "defaults" / "main.yml").read_text())["flink_network_config"] == {}
    assert "flink_network_config" in yaml.safe_load((role / "vars" / "main.yml").read_text())["flink_config"]


def test_a_hosts_congestion_control_is_exported_only_where_the_inventory_names_one() -> None:
    assert "placement_congestion_control" not in hostvars(ansible_inventory(minimal()), "edges", "pi")
    hosts = minimal().model_dump(mode="json", exclude_none=True)["hosts"]
    hosts[1]["congestion_control"] = "bbr"
    doc = ansible_inventory(minimal(hosts=hosts))
    assert hostvars(doc, "edges", "pi")["placement_congestion_control"] == "bbr"
    assert "placement_congestion_control" not in hostvars(doc, "servers", "srv")
