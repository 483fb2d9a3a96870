"""The Flink options the project writes, under the key, in the form and in the file each supported version reads.

Measured on the registry's distributions of 1.19.3, 1.20.5 and 2.3.0 (``javap`` of each version's option
definitions and ``GlobalConfiguration``, then real JobManagers started with what is rendered here):

* **Durations.** 1.19 defines ``slot.request.timeout`` and ``metrics.fetcher.update-interval`` as ``Long``
  milliseconds and refuses ``"60 s"`` at JobManager start ("Could not parse value"); from 1.20 on they are
  ``Duration``s, and a ``Duration`` reads a bare number as milliseconds (``restart-strategy.fixed-delay.delay`` and
  ``execution.checkpointing.interval`` are ``Duration``s in every supported version). So :func:`duration` writes
  plain milliseconds for every duration option: the one form each version parses, no branching by version.
* **The default savepoint directory** is ``state.savepoints.dir`` in 1.19; 1.20 added
  ``execution.checkpointing.savepoint-dir`` (1.20 to 2.3 still read the old key, as a deprecated one, with a warning).
* **The config file.** 2.x reads ``conf/config.yaml`` only. 1.19 and 1.20 read ``conf/flink-conf.yaml`` (flat lines,
  the legacy parser) whenever it exists, and ``config.yaml`` only when it does not: a key written into config.yaml
  beside a flink-conf.yaml is silently ignored.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import timedelta

import yaml

from placement.flink.config import flatten, merge_legacy, nest, parse_legacy
from placement.flink.versions import FlinkVersion

CONFIG_YAML = "config.yaml"
LEGACY_CONFIG = "flink-conf.yaml"


def duration(value: timedelta) -> int:
    """A duration option's value as whole milliseconds (what every supported version parses; see above)."""
    ms = value / timedelta(milliseconds=1)
    if ms < 0 or ms != int(ms):
        raise ValueError(f"{value} is not a whole, non-negative number of milliseconds")
    return int(ms)


def jobmanager_bind_host(version: FlinkVersion, address: str) -> str:
    """Where a JobManager whose RPC address is ``address`` binds. Before 2.2 a REST jar run (the EmbeddedExecutor)
    uploads the job's files to the blob server at localhost: it asks the dispatcher for the blob port only (2.2 asks
    for the address too), so a JobManager bound to another address refuses every jar run ("Could not connect to
    BlobServer at address localhost/127.0.0.1"). There it binds every interface."""
    return address if version.at_least(2, 2) else "0.0.0.0"


def savepoint_dir_key(version: FlinkVersion) -> str:
    """The option naming the default savepoint directory in ``version``."""
    return "execution.checkpointing.savepoint-dir" if version.at_least(1, 20) else "state.savepoints.dir"


def config_file_names(version: FlinkVersion) -> tuple[str, ...]:
    """The files ``version`` looks for in its conf dir, in its order: it reads the first that exists."""
    return (CONFIG_YAML,) if version.at_least(2, 0) else (LEGACY_CONFIG, CONFIG_YAML)


def config_file(version: FlinkVersion, existing: Collection[str]) -> str:
    """The file of a conf dir holding the files ``existing`` that ``version`` reads, so where a setting must go;
    config.yaml when it holds neither (what a new conf dir gets)."""
    return next((name for name in config_file_names(version) if name in existing), CONFIG_YAML)


def read_config(text: str | None, file_name: str) -> dict[str, object]:
    """The dotted keys a config file sets (``text`` None or empty: none); a config.yaml that is not valid YAML or
    not a mapping raises :class:`yaml.YAMLError` / :class:`ValueError`."""
    if file_name == LEGACY_CONFIG:
        return dict(parse_legacy(text or ""))
    data = yaml.safe_load(text or "") or {}
    if not isinstance(data, dict):
        raise ValueError("expected a mapping of Flink config keys")
    return flatten(data)


def render_config(flat: Mapping[str, object]) -> str:
    """A new config.yaml (nested YAML, every supported version's default file) from dotted keys."""
    return yaml.safe_dump(nest(dict(flat)), sort_keys=True)


def update_config(text: str | None, updates: Mapping[str, object], file_name: str) -> str:
    """``text`` of the config file ``file_name`` with ``updates`` set: flink-conf.yaml edited line by line (its
    comments kept), config.yaml re-rendered from its keys."""
    if file_name == LEGACY_CONFIG:
        return merge_legacy(text or "", updates)
    return render_config({**read_config(text, file_name), **updates})
