"""Real runs of site.yml and netem.yml against two "hosts": sshd in network namespaces, reached over veth pairs.

The hosts share this machine's filesystem, so each one installs under its own temporary prefix (host_vars next to
the exported inventory, the override mechanism the README documents) and services are not started (no systemd
here: flink_manage_services=false). Everything else is the real thing: ssh with host key checking, Java from the
distribution's package (already installed, so `ok`), the Flink archive copied to one host and downloaded (file://
URL) by the other, both sha512-checked, config.yaml and the units rendered, then read back by Flink's own
BashJavaUtils; tc run inside the edge host's namespace.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from ansible_support import Ansible, FlinkArchive, PlaybookRun, build_flink_archive, placement_cli, recap_summary

from placement.flink.distribution import flink_home_for
from placement.flink.home import FlinkHome
from placement.lab.flink import JAVA17_FLAGS
from placement.netns import Namespaces, netns_available, ns_exec, run
from support import real_parts
from support.flink_reads import tm_process_mib
from support.sshd import SshHost, sshd_available, sshd_in_namespace

pytestmark = [pytest.mark.ansible, pytest.mark.netns, pytest.mark.timeout(900)]

JAVA_HOME = Path("/usr/lib/jvm/java-17-openjdk-amd64")
HOSTS = ("server", "rpi1")
SERVER_MEMORY_MIB = 8192
RPI_MEMORY_MIB = 4096  # the rpi4b model's figure
UPLINK_MBIT = 20


@dataclass
class Lab:
    root: Path
    ssh: dict[str, SshHost]
    interfaces: dict[str, str]  # host -> its namespace-side interface
    archive: FlinkArchive
    ansible: Ansible

    def prefix(self, host: str) -> Path:
        return self.root / "hosts" / host

    def inventory(self, *, placement_mode: str = "custom", version: str | None = None) -> Path:
        """Our inventory for the two namespace hosts (the planner's format); ``version`` pins flink.version."""
        doc = {
            "version": 1,
            "name": "pa-ansible-test",
            "hosts": [
                {
                    "name": "server",
                    "address": self.ssh["server"].address,
                    "role": "server",
                    "cores": 2,
                    "memory": f"{SERVER_MEMORY_MIB}MiB",
                    "interface": self.interfaces["server"],
                },
                # a Pi's figures, on this x86_64 machine
                {
                    "name": "rpi1",
                    "address": self.ssh["rpi1"].address,
                    "role": "edge",
                    "model": "rpi4b",
                    "arch": "x86_64",
                    "interface": self.interfaces["rpi1"],
                },
            ],
            "links": [{"from": "rpi1", "to": "server", "bandwidth": f"{UPLINK_MBIT}mbit", "delay": "30ms"}],
            "flink": {
                "rest_url": f"http://{self.ssh['server'].address}:8081",
                "home": "/opt/flink",
                "placement_mode": placement_mode,
                "savepoint_dir": f"file://{self.root}/savepoints",
                **({"version": version} if version else {}),
            },
        }
        for host in doc["hosts"]:
            ssh = self.ssh[host["name"]]
            host["ssh"] = {
                "user": ssh.user,
                "port": ssh.port,
                "key": str(ssh.client_key),
                "known_hosts": str(ssh.known_hosts),
            }
        path = self.root / "inventory.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    def export(
        self,
        *extra: str,
        placement_mode: str = "custom",
        archive: FlinkArchive | None = None,
        version: str | None = None,
    ) -> Path:
        """`placement inventory ansible` plus host_vars that move every system path under the host's prefix;
        ``archive`` (default: the 2.3.0 one) installs another release, which ``version`` pins."""
        archive = archive or self.archive
        out_dir = self.root / "ansible-inventory"
        (out_dir / "host_vars").mkdir(parents=True, exist_ok=True)
        hosts_yml = out_dir / "hosts.yml"
        proc = placement_cli(
            "inventory",
            "ansible",
            str(self.inventory(placement_mode=placement_mode, version=version)),
            "--out",
            str(hosts_yml),
            "--flink-archive",
            str(archive.path),
            *extra,
        )
        assert proc.returncode == 0, proc.stderr
        java_installed = subprocess.run(["dpkg", "-s", "openjdk-17-jre-headless"], capture_output=True).returncode == 0
        for host in HOSTS:
            p = self.prefix(host)
            overrides = {
                "flink_home": f"{p}/opt/flink",
                "flink_scheduler_dir": f"{p}/opt/flink/placement/scheduler",
                "flink_download_dir": f"{p}/var/cache/flink",
                "flink_log_dir": f"{p}/var/log/flink",
                "flink_data_dir": f"{p}/var/lib/flink",
                "flink_systemd_dir": f"{p}/etc/systemd/system",
                "flink_manage_services": False,  # no systemd on this machine
                "flink_user": "root",  # the login; no system account is created on the shared machine
                "flink_group": "root",
                "java_install": java_installed,  # apt is asked only when the package is already there (no change)
                "java_apt_update_cache": False,
                "java_home": str(JAVA_HOME),
                "netem_state_dir": f"{p}/var/lib/placement",
                # root's login PATH here starts with pyenv shims that interpreter discovery would pick
                "ansible_python_interpreter": "/usr/bin/python3",
            }
            if host == "rpi1":
                # the other way in: downloaded (get_url, sha512-checked) instead of copied from the controller
                overrides |= {"flink_archive_src": "", "flink_archive_url": archive.path.as_uri()}
            (out_dir / "host_vars" / f"{host}.yml").write_text(yaml.safe_dump(overrides))
        return hosts_yml


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, flink_archive: FlinkArchive) -> Iterator[Lab]:
    real_parts.require(netns_available() or sshd_available())  # strict mode: a missing part fails
    real_parts.require(None if (JAVA_HOME / "bin" / "java").exists() else f"needs Java 17 at {JAVA_HOME}")
    root = tmp_path_factory.mktemp("pa-ansible")
    # the hosts stay the same hosts for the module: their facts are gathered by the first run (site.yml's check mode)
    # and read from a cache by the next five site.yml runs, not gathered again (0.9-1.8 s a run at load 4-7, 3-6 s at
    # load 15-25)
    runner = Ansible(root, fact_cache=True)
    with Namespaces("pa") as nets:
        wires = {
            "server": nets.add("server", "10.202.0.1", "10.202.0.2"),
            "rpi1": nets.add("rpi1", "10.202.0.5", "10.202.0.6"),
        }
        with (
            sshd_in_namespace(wires["server"].ns, wires["server"].ns_addr, root / "sshd-server") as server,
            sshd_in_namespace(wires["rpi1"].ns, wires["rpi1"].ns_addr, root / "sshd-rpi1") as rpi1,
        ):
            try:
                yield Lab(
                    root,
                    {"server": server, "rpi1": rpi1},
                    {h: w.ns_if for h, w in wires.items()},
                    flink_archive,
                    runner,
                )
            finally:
                print("\nansible-playbook runs:\n" + "\n".join(runner.log))
                runner.close()
                shutil.rmtree(root / "hosts", ignore_errors=True)  # 1+ GB of unpacked Flink per run


def assert_ok(result: PlaybookRun) -> None:
    assert result.returncode == 0, result.describe()
    for host in HOSTS:
        assert result.recap[host]["failed"] == 0 and result.recap[host]["unreachable"] == 0, result.describe()


def tm_resource_params(conf_dir: Path, flink_home: Path) -> tuple[list[str], dict[str, str]]:
    """What Flink's own start script would compute from this config: JVM flags and -D dynamic properties."""
    classpath = f"{flink_home}/bin/bash-java-utils.jar:{flink_home}/lib/*"
    proc = subprocess.run(
        [
            str(JAVA_HOME / "bin" / "java"),
            "-cp",
            classpath,
            "org.apache.flink.runtime.util.bash.BashJavaUtils",
            "GET_TM_RESOURCE_PARAMS",
            "-c",
            str(conf_dir),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = [
        line.split("BASH_JAVA_UTILS_EXEC_RESULT:", 1)[1]
        for line in proc.stdout.splitlines()
        if line.startswith("BASH_JAVA_UTILS_EXEC_RESULT:")
    ]
    jvm_flags = results[0].split()
    dynamic = dict(re.findall(r"-D (\S+?)=(\S+)", results[1]))
    return jvm_flags, dynamic


def test_site_installs_and_configures_flink_and_a_second_run_changes_nothing(lab: Lab) -> None:
    hosts_yml = lab.export()

    # check mode on bare hosts: succeeds, would change things, writes nothing
    dry = lab.ansible.playbook("site.yml", hosts_yml, "--check", "--diff")
    assert_ok(dry)
    assert all(n > 0 for n in recap_summary(dry, HOSTS).values()), dry.describe()
    assert not any(lab.prefix(h).exists() for h in HOSTS)

    first = lab.ansible.playbook("site.yml", hosts_yml)
    assert_ok(first)
    assert all(n > 0 for n in recap_summary(first, HOSTS).values()), first.describe()

    configs: dict[str, dict] = {}
    for host in HOSTS:
        home = lab.prefix(host) / "opt" / "flink"
        assert home.is_symlink() and home.resolve() == lab.prefix(host) / "opt" / "flink-2.3.0"
        assert (home / "lib" / "flink-dist-2.3.0.jar").is_file()
        configs[host] = yaml.safe_load((home / "conf" / "config.yaml").read_text())
        assert (
            lab.prefix(host) / "var" / "cache" / "flink" / "flink-2.3.0.tgz"
        ).stat().st_size == lab.archive.path.stat().st_size

    server, rpi1 = configs["server"], configs["rpi1"]
    server_addr, rpi1_addr = lab.ssh["server"].address, lab.ssh["rpi1"].address
    for host, cfg in configs.items():
        assert cfg["jobmanager"]["rpc"] == {"address": server_addr, "port": 6123}
        assert cfg["rest"]["address"] == server_addr and cfg["rest"]["port"] == 8081
        assert cfg["taskmanager"]["resource-id"] == host
        assert cfg["external-resources"] == host
        assert cfg["jobmanager"]["scheduler"] == "default"  # stock Flink's; the extension does the placing
        assert cfg["env"]["java"]["home"] == str(JAVA_HOME)
        assert cfg["env"]["java"]["opts"]["all"].split() == list(JAVA17_FLAGS)
        assert cfg["execution"]["checkpointing"]["savepoint-dir"] == f"file://{lab.root}/savepoints"
    scheduler_dir = lab.prefix("server") / "opt" / "flink" / "placement" / "scheduler"
    assert server["placement"]["scheduler"]["dir"] == str(scheduler_dir)
    assert rpi1["taskmanager"]["host"] == rpi1_addr and server["taskmanager"]["host"] == server_addr
    # slots = cores; the external resource has one unit per slot
    assert server["taskmanager"]["numberOfTaskSlots"] == 2 and rpi1["taskmanager"]["numberOfTaskSlots"] == 4
    assert server["external-resource"] == {"server": {"amount": 2}}
    assert rpi1["external-resource"] == {"rpi1": {"amount": 4}}
    assert rpi1["taskmanager"]["cpu"]["cores"] == 4.0
    # memory: 80 % of the host (the planner's memory_utilisation_target), the JobManager's 1600 MiB first, 64 MiB steps
    assert server["jobmanager"]["memory"]["process"]["size"] == "1600m"
    assert server["taskmanager"]["memory"]["process"]["size"] == "4928m"  # 8192 * 0.8 - 1600 = 4953.6 -> 4928
    assert rpi1["taskmanager"]["memory"]["process"]["size"] == "3264m"  # 4096 * 0.8 = 3276.8 -> 3264

    # the scheduler extension: built on the controller, installed into the JobManager's lib/ only, for Flink 2.3.0;
    # its directory (empty until `placement apply` writes a schedulercfg) exists where the JobManager runs, only there
    jars = sorted((lab.prefix("server") / "opt" / "flink" / "lib").glob("placement-scheduler-*.jar"))
    assert len(jars) == 1 and jars[0].name.startswith("placement-scheduler-2.3.0-"), jars
    assert not list((lab.prefix("rpi1") / "opt" / "flink" / "lib").glob("placement-scheduler-*.jar"))
    status = placement_cli("scheduler", "status", "--flink-home", str(lab.prefix("server") / "opt" / "flink"))
    assert status.returncode == 0 and "built for Flink 2.3.0" in status.stdout and ": ok" in status.stdout, (
        status.stdout
    )
    assert scheduler_dir.is_dir() and not any(scheduler_dir.iterdir())
    assert not (lab.prefix("rpi1") / "opt" / "flink" / "placement").exists()
    # bin/config.sh's classpath (sorted lib/*.jar, flink-dist last) puts the extension before flink-dist
    lib_jars = sorted(p.name for p in (lab.prefix("server") / "opt" / "flink" / "lib").glob("*.jar"))
    order = [n for n in lib_jars if not n.startswith("flink-dist")] + [
        n for n in lib_jars if n.startswith("flink-dist")
    ]
    assert order.index(jars[0].name) < order.index("flink-dist-2.3.0.jar")

    units = {h: lab.prefix(h) / "etc" / "systemd" / "system" for h in HOSTS}
    assert sorted(p.name for p in units["server"].iterdir()) == [
        "flink-jobmanager.service",
        "flink-taskmanager.service",
    ]
    assert sorted(p.name for p in units["rpi1"].iterdir()) == ["flink-taskmanager.service"]
    tm_unit = (units["rpi1"] / "flink-taskmanager.service").read_text()
    assert f"ExecStart={lab.prefix('rpi1')}/opt/flink/bin/taskmanager.sh start-foreground" in tm_unit
    assert f"Environment=FLINK_CONF_DIR={lab.prefix('rpi1')}/opt/flink/conf" in tm_unit
    assert f"Environment=JAVA_HOME={JAVA_HOME}" in tm_unit and "User=root" in tm_unit
    jm_unit = (units["server"] / "flink-jobmanager.service").read_text()
    assert f"ExecStart={lab.prefix('server')}/opt/flink/bin/jobmanager.sh start-foreground" in jm_unit
    assert (
        "After=network-online.target flink-jobmanager.service"
        in (units["server"] / "flink-taskmanager.service").read_text()
    )

    # Flink itself reads the rendered config: the Pi's TaskManager gets exactly the 3264 MiB process size
    _, dynamic = tm_resource_params(lab.prefix("rpi1") / "opt" / "flink" / "conf", lab.prefix("rpi1") / "opt" / "flink")
    assert float(dynamic["taskmanager.cpu.cores"]) == 4.0
    rpi1_home = FlinkHome(lab.prefix("rpi1") / "opt" / "flink")
    assert tm_process_mib(rpi1_home, rpi1_home.path / "conf") == pytest.approx(3264, abs=1)

    second = lab.ansible.playbook("site.yml", hosts_yml)
    assert_ok(second)
    assert recap_summary(second, HOSTS) == {"server": 0, "rpi1": 0}, second.describe()

    # stop.yml runs on the same hosts (without systemd it has nothing to stop, and must not fail or change anything)
    stop = lab.ansible.playbook("stop.yml", hosts_yml)
    assert_ok(stop)
    assert recap_summary(stop, HOSTS) == {"server": 0, "rpi1": 0}, stop.describe()

    # check mode on a configured host, with a changed inventory: vanilla mode drops the extension's directory key.
    # Exactly one change per host (config.yaml), shown as a diff, and nothing written.
    config_before = (lab.prefix("server") / "opt/flink/conf/config.yaml").read_text()
    vanilla = lab.ansible.playbook("site.yml", lab.export(placement_mode="vanilla"), "--check", "--diff")
    assert_ok(vanilla)
    assert recap_summary(vanilla, HOSTS) == {"server": 1, "rpi1": 1}, vanilla.describe()
    assert re.search(r"^-\s+dir: .*/opt/flink/placement/scheduler$", vanilla.stdout, re.MULTILINE), vanilla.describe()
    assert (lab.prefix("server") / "opt/flink/conf/config.yaml").read_text() == config_before


def test_site_installs_the_pinned_flink_1_20_and_configures_the_file_it_reads(
    lab: Lab, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """An inventory pinned to 1.20.5 (custom mode, on a controller whose own Flink is 2.3): that release installed on
    both hosts, the extension built for 1.20.5 (against that release's jars, fetched into the controller's cache) in
    the JobManager's lib/ only, its config.yaml (no flink-conf.yaml, which 1.20 would read instead) with 1.20's
    savepoint key, sized by 1.20's own BashJavaUtils."""
    home = flink_home_for("1.20.5").path
    archive = build_flink_archive(tmp_path_factory.mktemp("flink-1.20") / "flink-1.20.5-test.tgz", "1.20.5", home)
    try:
        hosts_yml = lab.export(archive=archive, version="1.20.5")
        assert yaml.safe_load(hosts_yml.read_text())["all"]["vars"]["flink_version"] == "1.20.5"
        result = lab.ansible.playbook("site.yml", hosts_yml)
        assert_ok(result)
    finally:
        archive.path.unlink(missing_ok=True)
    for host in HOSTS:
        installed = lab.prefix(host) / "opt" / "flink"
        assert installed.resolve() == lab.prefix(host) / "opt" / "flink-1.20.5"
        assert (installed / "lib" / "flink-dist-1.20.5.jar").is_file()
        assert sorted(p.name for p in (installed / "conf").iterdir()) == ["config.yaml"]
        cfg = yaml.safe_load((installed / "conf" / "config.yaml").read_text())
        assert cfg["execution"]["checkpointing"]["savepoint-dir"] == f"file://{lab.root}/savepoints"
        assert cfg["taskmanager"]["resource-id"] == host
    jars = sorted((lab.prefix("server") / "opt" / "flink" / "lib").glob("placement-scheduler-*.jar"))
    assert len(jars) == 1 and jars[0].name.startswith("placement-scheduler-1.20.5-"), jars
    assert not list((lab.prefix("rpi1") / "opt" / "flink" / "lib").glob("placement-scheduler-*.jar"))
    rpi1_home = FlinkHome(lab.prefix("rpi1") / "opt" / "flink")
    assert tm_process_mib(rpi1_home, rpi1_home.path / "conf") == pytest.approx(3264, abs=1)  # 1.20's own sizing


def tc_in(lab: Lab, host: str, *args: str) -> str:
    return run(ns_exec(lab.ssh[host].namespace, ["tc", *args])).stdout


def root_handles(lab: Lab, host: str) -> list[str]:
    qdiscs = json.loads(tc_in(lab, host, "-j", "qdisc", "show", "dev", lab.interfaces[host], "root"))
    return [q.get("handle", "") for q in qdiscs]


def netem_available_here(lab: Lab) -> bool:
    """Whether this kernel has sch_netem (tried on the server namespace's veth, then removed)."""
    iface = lab.interfaces["server"]
    ns = lab.ssh["server"].namespace
    made = run(
        ns_exec(ns, ["tc", "qdisc", "add", "dev", iface, "root", "handle", "9:", "netem", "delay", "1ms"]), check=False
    )
    if made.returncode == 0:
        run(ns_exec(ns, ["tc", "qdisc", "del", "dev", iface, "root"]), check=False)
    return made.returncode == 0


def test_netem_shapes_the_uplink_idempotently_and_repairs_drift(lab: Lab) -> None:
    iface = lab.interfaces["rpi1"]
    hosts_yml = lab.export("--rate-only")
    try:
        dry = lab.ansible.playbook("netem.yml", hosts_yml, "--check", "--diff")
        assert_ok(dry)
        assert recap_summary(dry, HOSTS)["rpi1"] > 0 and "ede:" not in root_handles(lab, "rpi1")

        first = lab.ansible.playbook("netem.yml", hosts_yml)
        assert_ok(first)
        assert recap_summary(first, HOSTS)["server"] == 0  # no uplink: left alone
        assert root_handles(lab, "rpi1") == ["ede:"]
        classes = tc_in(lab, "rpi1", "class", "show", "dev", iface)
        assert f"rate {UPLINK_MBIT}Mbit ceil {UPLINK_MBIT}Mbit" in classes
        filters = tc_in(lab, "rpi1", "filter", "show", "dev", iface)
        server_hex = f"{int(ipaddress.ip_address(lab.ssh['server'].address)):08x}"
        assert f"match {server_hex}/ffffffff at 16" in filters  # u32's spelling of "ip dst <server>/32"

        # someone removed the shaping by hand: the next run puts it back
        run(ns_exec(lab.ssh["rpi1"].namespace, ["tc", "qdisc", "del", "dev", iface, "root"]))
        repaired = lab.ansible.playbook("netem.yml", hosts_yml, "--diff")
        assert_ok(repaired)
        assert recap_summary(repaired, HOSTS)["rpi1"] > 0
        assert root_handles(lab, "rpi1") == ["ede:"]

        # a different shaping asked for (the link's 30 ms delay too): replaced, not stacked. A kernel without
        # sch_netem (like this one) refuses the netem leaves: as with `placement netem apply`, the rate limit stays
        # and a warning says so.
        with_delay = lab.export()
        netem_here = netem_available_here(lab)
        full = lab.ansible.playbook("netem.yml", with_delay)
        assert_ok(full)
        assert recap_summary(full, HOSTS)["rpi1"] > 0
        assert root_handles(lab, "rpi1") == ["ede:"]
        classes = tc_in(lab, "rpi1", "class", "show", "dev", iface)
        assert classes.count("class htb") == 1 and f"rate {UPLINK_MBIT}Mbit" in classes
        if netem_here:
            assert "delay 30ms" in tc_in(lab, "rpi1", "qdisc", "show", "dev", iface)
        else:
            assert "the kernel has no netem qdisc (sch_netem)" in full.stdout, full.describe()

        # nothing to do the second time, also when the kernel refused the delay
        again = lab.ansible.playbook("netem.yml", with_delay)
        assert_ok(again)
        assert recap_summary(again, HOSTS) == {"server": 0, "rpi1": 0}, again.describe()

        removed = lab.ansible.playbook("netem.yml", with_delay, "-e", "netem_state=absent")
        assert_ok(removed)
        assert recap_summary(removed, HOSTS)["rpi1"] > 0
        assert "ede:" not in root_handles(lab, "rpi1")
        assert not (lab.prefix("rpi1") / "var" / "lib" / "placement" / f"netem-{iface}.json").exists()

        if not netem_here:  # delay required but impossible: fails, and leaves nothing behind
            strict = lab.ansible.playbook("netem.yml", with_delay, "-e", "netem_require_delay=true")
            assert strict.returncode != 0 and strict.recap["rpi1"]["failed"] == 1, strict.describe()
            assert "The interface is unshaped again. Delay/loss need sch_netem" in strict.stdout, strict.describe()
            assert "ede:" not in root_handles(lab, "rpi1")

        # a root qdisc someone else installed is never replaced: the run fails and leaves it as it was
        run(ns_exec(lab.ssh["rpi1"].namespace, ["tc", "qdisc", "replace", "dev", iface, "root", "handle", "1:", "htb"]))
        foreign = lab.ansible.playbook("netem.yml", hosts_yml)
        assert foreign.returncode != 0 and foreign.recap["rpi1"]["failed"] == 1, foreign.describe()
        assert root_handles(lab, "rpi1") == ["1:"]
    finally:
        run(ns_exec(lab.ssh["rpi1"].namespace, ["tc", "qdisc", "del", "dev", iface, "root"]), check=False)
