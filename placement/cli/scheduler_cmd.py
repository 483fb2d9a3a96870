"""``placement scheduler``: build, install and check the scheduler extension that makes stock Flink read
schedulercfgs."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from placement.cli.params import HTTP_URL, echo_json, json_option, nonempty_path, quiet_option

# what a reader of --json checks before it relies on the keys
BUILD_FORMAT = "placement.scheduler-build/v1"
STATUS_FORMAT = "placement.scheduler-status/v1"

if TYPE_CHECKING:  # imported where used: the CLI starts without loading the Flink modules
    from placement.flink.home import FlinkHome

FLINK_HOME = click.option(
    "--flink-home",
    "flink_home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Flink installation (has lib/flink-dist-*.jar); default $FLINK_HOME, else the pyflink wheel",
)
FLINK_VERSION = click.option(
    "--flink-version",
    "flink_version",
    default=None,
    metavar="X.Y[.Z]",
    help="for a cluster of this Flink (e.g. 1.20.5; a line such as 1.20: its newest release): this machine's "
    "installation when it is that version, else that version's jars fetched once into the cache (with "
    "--flink-home: that installation must be this version)",
)


def _home(flink_home: Path | None, flink_version: str | None = None) -> FlinkHome:
    from placement.errors import BadInput
    from placement.flink.distribution import resolve_flink_home

    if flink_home is not None and not (flink_home / "lib").is_dir():
        raise BadInput(f"{flink_home}: no lib/ directory (not a Flink installation)", field="--flink-home")
    return resolve_flink_home(flink_home, flink_version)


@click.group()
def scheduler() -> None:
    """The Java extension that lets stock Flink place every subtask of an unmodified job where a schedulercfg says
    (see README.md in the scheduler folder of the installed package). Install it into the JobManager's Flink home, then
    restart the JobManager."""


@scheduler.command("build")
@FLINK_HOME
@FLINK_VERSION
@click.option(
    "--cache",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="where built jars are kept (default: a placement-scheduler dir in the temp dir)",
)
@json_option("the built jar (path, digest, seconds) as JSON on stdout")
@quiet_option("errors and the one-line result (or the --json document) only (it prints no more)")
def build_cmd(
    flink_home: Path | None, flink_version: str | None, cache: Path | None, as_json: bool, quiet: bool
) -> None:
    """Compile the extension with javac against the installation's jars (cached by sources + Flink version)."""
    from placement.scheduler import build_extension

    home = _home(flink_home, flink_version)
    started = time.monotonic()
    jar = build_extension(home, cache)
    seconds = time.monotonic() - started
    if as_json:
        echo_json({"format": BUILD_FORMAT, **asdict(jar), "path": str(jar.path), "seconds": round(seconds, 3)})
    else:
        click.echo(
            f"{jar.path} (Flink {jar.flink_version}, build {jar.digest}, {jar.path.stat().st_size} bytes, "
            f"{seconds:.1f}s)"
        )


@scheduler.command("install")
@FLINK_HOME
@FLINK_VERSION
@click.option(
    "--jar",
    "jar_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="a jar made by `placement scheduler build` (default: build it for this installation)",
)
def install_cmd(flink_home: Path | None, flink_version: str | None, jar_path: Path | None) -> None:
    """Put the extension into <flink home>/lib/ (idempotent; older copies removed); with --flink-version alone, into
    that version's fetched installation (the one `placement lab` runs for that version)."""
    from placement.scheduler import install_extension, installed_extension
    from placement.scheduler.build import jar_info

    home = _home(flink_home, flink_version)
    before = installed_extension(home)
    before_bytes = before.read_bytes() if before is not None else None
    target = install_extension(home, jar_info(jar_path) if jar_path else None)
    if before is not None and before == target and before_bytes == target.read_bytes():
        click.echo(f"already installed: {target}")
    else:
        click.echo(
            f"installed {target}; restart the JobManager to load it (launch it with bin/config.sh's classpath "
            "order: lib/*.jar sorted, flink-dist last)"
        )


@scheduler.command("status")
@FLINK_HOME
@click.option(
    "--rest",
    "rest_url",
    default=None,
    type=HTTP_URL,
    help="a running JobManager's REST URL: does it use the extension?",
)
@json_option("the status as JSON on stdout instead of lines")
@quiet_option("the installation's line only (the exit code says the rest), or the --json document")
def status_cmd(flink_home: Path | None, rest_url: str | None, as_json: bool, quiet: bool) -> None:
    """Is the extension installed, for which Flink, and (with --rest) does the running JobManager use it?

    Exits 1 when it is missing, built for another Flink, or not in effect on the given JobManager."""
    import sys

    from placement.flink.rest import FlinkRest
    from placement.scheduler import extension_status

    home = _home(flink_home)
    st = extension_status(home, FlinkRest(rest_url, timeout=10) if rest_url else None)
    ok = st.version_ok and st.active is not False and not (rest_url and st.active is None)
    if as_json:
        data = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(st).items()}
        echo_json({"format": STATUS_FORMAT, **data, "version_ok": st.version_ok, "ok": ok})
    else:
        if st.installed is None:
            click.echo(
                f"not installed in {home.lib} (Flink {st.flink_version}): placement scheduler install --flink-home "
                f"{home.path}"
            )
        else:
            verdict = "ok" if st.version_ok else f"MISMATCH: Flink here is {st.flink_version}, rebuild and reinstall"
            click.echo(f"installed: {st.installed} (built for Flink {st.built_for}, build {st.digest}): {verdict}")
        if rest_url and not quiet:
            word = {
                True: "yes (its jar is on the classpath before flink-dist)",
                False: "NO (not on its classpath, or after flink-dist: launch with bin/config.sh's order)",
                None: "cannot tell (GET /jobmanager/environment lists no classpath)",
            }[st.active]
            click.echo(f"JobManager {rest_url} uses it: {word}")
            click.echo(f"its placement.scheduler.dir: {st.scheduler_dir or '(not set: every job runs as stock Flink)'}")
    if not ok:
        sys.exit(1)


@scheduler.command("taskmanagers")
@click.option("--rest", "rest_url", required=True, type=HTTP_URL, help="the JobManager's REST URL")
@click.option(
    "--address",
    "addresses",
    multiple=True,
    metavar="ID=ADDRESS",
    help="another name for a TaskManager, as schedulercfg lines may use it (repeatable)",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    callback=nonempty_path,
    help="write here (e.g. <placement.scheduler.dir>/taskmanagers.cfg) instead of printing",
)
def taskmanagers_cmd(rest_url: str, addresses: tuple[str, ...], out: Path | None) -> None:
    """The TaskManager table (taskmanagers.cfg) from the registered TaskManagers: addresses and slot size of each."""
    from placement.errors import BadInput
    from placement.flink.rest import FlinkRest
    from placement.scheduler import render_taskmanagers

    extra: dict[str, list[str]] = {}
    for item in addresses:
        tm, sep, address = item.partition("=")
        if not sep or not tm or not address:
            raise BadInput(f"{item!r} is not ID=ADDRESS", field="--address")
        extra.setdefault(tm, []).append(address)
    text = render_taskmanagers(FlinkRest(rest_url, timeout=10).taskmanagers(), extra)
    if out is None:
        click.echo(text, nl=False)
    else:
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(text)
        tmp.replace(out)
        click.echo(f"wrote {out}")
