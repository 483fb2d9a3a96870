"""Our inventory as an Ansible inventory: the same hosts, figures and WAN shaping, for ``ansible/site.yml``.

Pure: :func:`ansible_inventory` maps a validated :class:`~placement.inventory.Inventory` to the YAML-shaped dict
Ansible reads (groups ``jobmanager``, ``servers`` and ``edges`` under ``all``) and :func:`render` turns that into text.
Nothing here touches a host; the CLI (``placement inventory ansible``) reads the files and writes the result.

Variable names follow the roles in ``ansible/roles``: ``placement_*`` are facts about a host taken from the inventory
(the roles derive their own ``flink_*``/``java_*`` settings from them, so a hand-written Ansible inventory works too),
``flink_*`` are cluster settings, ``netem_*`` the tc commands :mod:`placement.netem.tc` builds for the host's uplink —
the netem role runs those argv lists as they are, so shaping through Ansible is byte-for-byte what
``placement netem apply`` does.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from placement.flink.config import nest
from placement.inventory import Host, Inventory
from placement.inventory.failure_detection import flink_config as failure_detection_config
from placement.inventory.network import flink_config as network_config
from placement.inventory.wan_profiles import WanProfile
from placement.netem import tc
from placement.netem.plan import shapes_for_host
from placement.scheduler.naming import taskmanager_resource_name

FLINK_REST_DEFAULT_PORT = 8081


@dataclass(frozen=True)
class LocalArchive:
    """A Flink distribution on the controller that the flink role copies to hosts instead of downloading one."""

    path: str
    sha512: str
    flink_version: str | None = None  # the release it holds (its flink-<version>/ top directory), when known


@dataclass(frozen=True)
class _Options:
    base_dir: Path | None
    with_netem: bool
    wan_profile: WanProfile | None
    source: str | None


def _resolve(path: str, base_dir: Path | None) -> str:
    """Paths in the inventory are relative to the inventory file; ``~`` is left for ssh/Ansible to expand."""
    if base_dir is None or path.startswith("~") or Path(path).is_absolute():
        return path
    return str((base_dir / path).resolve())


def _connection_vars(inv: Inventory, host: Host, base_dir: Path | None) -> dict[str, Any]:
    ssh = inv.ssh_for(host)
    out: dict[str, Any] = {"ansible_host": host.address, "ansible_port": ssh.port}
    if ssh.user:
        out["ansible_user"] = ssh.user
    if ssh.key:
        out["ansible_ssh_private_key_file"] = _resolve(ssh.key, base_dir)
    if ssh.known_hosts:
        # Host keys stay verified: only *which* file holds them changes.
        known = shlex.quote(_resolve(ssh.known_hosts, base_dir))
        out["ansible_ssh_common_args"] = f"-o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes"
    if ssh.sudo:
        out["ansible_become"] = True
    return out


def _netem_vars(inv: Inventory, host: Host, opts: _Options) -> dict[str, Any]:
    """The host's uplink shaping as tc argv lists (empty for hosts without an uplink)."""
    # placement.netem owns how links become shapes and shapes become tc commands; nothing of it is repeated here.
    interface, shapes = shapes_for_host(inv, host.name, opts.wan_profile, source=opts.source)
    if not shapes:
        return {}
    commands = tc.apply_commands(interface, shapes, with_netem=opts.with_netem)
    return {
        "netem_interface": interface,
        "netem_root_handle": tc.ROOT_HANDLE,
        "netem_query_command": tc.root_query_command(interface),
        "netem_apply_commands": commands,
        # the delay/loss leaves: a kernel without sch_netem refuses these, and only these may be skipped
        "netem_delay_commands": [argv for argv in commands if tc.is_netem_command(argv)],
        "netem_clear_commands": tc.clear_commands(interface),
    }


def _host_vars(inv: Inventory, host: Host, opts: _Options) -> dict[str, Any]:
    slots = int(host.task_slots or 1)
    out = _connection_vars(inv, host, opts.base_dir)
    out.update(
        {
            "placement_role": host.role,
            "placement_model": host.model,
            "placement_arch": host.arch,
            "placement_cores": host.cores,
            "placement_memory_mib": host.memory_mib,
            "placement_speed": host.speed,
            "flink_taskmanager_host": host.address,
            "flink_taskmanager_slots": slots,
            "flink_taskmanager_cpu_cores": host.cores,
            "flink_taskmanager_resource_id": host.name,
            # a placed slot (custom mode) or a slot sharing group (vanilla mode) requests one unit of this resource
            "flink_external_resource": taskmanager_resource_name(host.name),
            "flink_external_resource_amount": slots,
        }
    )
    if host.interface:
        out["placement_interface"] = host.interface
    if host.congestion_control:  # none named: the host keeps its own (Linux's default is the plan's, cubic)
        out["placement_congestion_control"] = host.congestion_control
    if host.role == "edge":
        link = inv.uplink(host.name)
        out["placement_uplink"] = {
            "to": link.to,
            "bandwidth_mbit": link.bandwidth,
            "delay_ms": link.delay,
            "jitter_ms": link.jitter,
            "loss_percent": link.loss,
            "correlation_percent": link.correlation,
        }
    out.update(_netem_vars(inv, host, opts))
    return out


def _cluster_vars(inv: Inventory, archive: LocalArchive | None) -> dict[str, Any]:
    flink = inv.flink
    rest = urlsplit(flink.rest_url)
    jm = inv.jobmanager_host
    out: dict[str, Any] = {
        "placement_inventory_name": inv.name,
        "placement_inventory_digest": inv.digest(),
        "placement_memory_utilisation_target": inv.policy.memory_utilisation_target,
        "flink_home": flink.home,
        "flink_placement_mode": flink.placement_mode,
        "flink_scheduler_dir": flink.scheduler_directory,
        "flink_savepoint_dir": flink.savepoint_dir,
        "flink_jobmanager_host": jm.name,
        "flink_jobmanager_address": jm.address,
        "flink_rest_address": rest.hostname or jm.address,
        "flink_rest_port": rest.port or FLINK_REST_DEFAULT_PORT,
        # flink.failure_detection, through the mapping the lab and apply use (nested, as the role's config.yaml is)
        "flink_failure_detection_config": nest(failure_detection_config(flink.failure_detection)),
        # flink.network where it differs from Flink's defaults (placement.inventory.network), the same mapping
        "flink_network_config": nest(network_config(flink.network)),
    }
    # the pin, else the release of the archive given, else the role's own default (its defaults say which)
    version = flink.version or (archive.flink_version if archive is not None else None)
    if version is not None:
        out["flink_version"] = version
    if flink.archive_url:
        out["flink_archive_url"] = flink.archive_url
    if flink.archive_sha512:
        out["flink_archive_sha512"] = flink.archive_sha512.lower()
    if archive is not None:
        out["flink_archive_src"] = archive.path
        out["flink_archive_sha512"] = archive.sha512.lower()
    return out


def ansible_inventory(
    inv: Inventory,
    *,
    base_dir: Path | None = None,
    archive: LocalArchive | None = None,
    with_netem: bool = True,
    wan_profile: WanProfile | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """The Ansible inventory (YAML form) for ``inv``.

    ``base_dir`` resolves relative key/known_hosts paths (the inventory file's directory); ``archive`` makes the
    flink role copy a local Flink distribution; ``with_netem=False`` leaves out the netem delay/loss leaves for
    kernels without sch_netem (rates are still shaped); ``wan_profile`` shapes every link like that profile (as
    ``placement netem apply --profile`` does); ``source`` names the inventory file in errors.
    """
    opts = _Options(base_dir=base_dir, with_netem=with_netem, wan_profile=wan_profile, source=source)

    def hosts(members: list[Host]) -> dict[str, Any]:
        return {"hosts": {h.name: _host_vars(inv, h, opts) for h in members}}

    jm = inv.jobmanager_host
    return {
        "all": {
            "vars": _cluster_vars(inv, archive),
            "children": {
                # host vars live under servers/edges; the jobmanager group only names its member. Plural names: a host
                # called "server" (as in the example inventory) would otherwise clash with its group
                "jobmanager": {"hosts": {jm.name: {}}},
                "servers": hosts(inv.servers),
                "edges": hosts(inv.edges),
            },
        }
    }


class _Dumper(yaml.SafeDumper):
    """Block style, with argv lists kept on one line each so the tc commands read like commands."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = bool(data) and all(isinstance(x, str) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def render(document: Mapping[str, Any], source: str | None = None) -> str:
    header = "# Ansible inventory written by `placement inventory ansible`"
    header += f" from {source}.\n" if source else ".\n"
    header += "# Regenerate it instead of editing it; per-host overrides belong in host_vars/<host>.yml next to it.\n"
    return header + yaml.dump(dict(document), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)
