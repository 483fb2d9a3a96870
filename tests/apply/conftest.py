"""Fixtures for the apply tests: two real sshd "hosts" in namespaces pp-server / pp-rpi1 (10.204.0.0/16), the shared
Flink cluster (TaskManagers ``server`` and ``rpi1``), and the IoT job running under the name ``pp-apply-iot``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from apply_support import JOB_ARGS, SshLab

from placement.errors import PlacementError
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.netns import Namespaces, netns_available
from support import real_parts
from support.sshd import generate_key, sshd_available, sshd_in_namespace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ssh_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshLab]:
    real_parts.require(netns_available() or sshd_available())  # strict mode: missing is a failure
    work = tmp_path_factory.mktemp("pp-ssh")
    client_key = generate_key(work / "client_ed25519", "pp-apply-test")
    with Namespaces("pp") as nets, contextlib.ExitStack() as stack:
        server = nets.add("server", "10.204.0.1", "10.204.0.2")
        rpi1 = nets.add("rpi1", "10.204.0.5", "10.204.0.6")
        down = nets.add("down", "10.204.0.9", "10.204.0.10")  # a host whose sshd is not running
        hosts = {
            "server": stack.enter_context(
                sshd_in_namespace(server.ns, server.ns_addr, work / "server", client_key=client_key)
            ),
            "rpi1": stack.enter_context(sshd_in_namespace(rpi1.ns, rpi1.ns_addr, work / "rpi1", client_key=client_key)),
        }
        known = work / "known_hosts"
        known.write_text("".join(h.known_hosts.read_text() for h in hosts.values()))
        yield SshLab(hosts=hosts, known_hosts=known, client_key=client_key, down_address=down.ns_addr)


@pytest.fixture(scope="module")
def iot_job(request, flink_rest, lab_jobs_jar, flink_support):
    """The IoT job started with the test module's ``INITIAL_JOB_ARGS`` (default: unpinned, the inventory's program
    arguments); cancelled after the module, whatever job id it has by then."""
    args = getattr(request.module, "INITIAL_JOB_ARGS", JOB_ARGS)
    job = flink_support.submit_job(flink_rest, lab_jobs_jar, IOT_SENSOR_JOB, args)
    try:
        yield job
    finally:
        for j in flink_rest.running_jobs():
            if j.name == "pp-apply-iot":
                with contextlib.suppress(PlacementError):
                    flink_support.cancel_job(j.id, flink_rest)
