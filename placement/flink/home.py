"""Where a Flink installation is: ``lib/`` with flink-dist, its version, and the classpath its launchers build.

Used by the lab (to start JVMs), the lab jobs' and the scheduler extension's builds (to compile against the jars of
the installation they target), so it sits below all of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from placement.errors import PlacementError

# Flink's own scripts pass these to every JVM on Java 17+ (env.java.opts.all); without them a job fails at submit
# with InaccessibleObjectException (Kryo/reflection into java.util etc.). The lab's JVMs and the JobGraph submitter.
JAVA17_FLAGS: tuple[str, ...] = (
    *(
        f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
        for pkg in (
            "java.util",
            "java.lang",
            "java.lang.reflect",
            "java.io",
            "java.net",
            "java.nio",
            "sun.nio.ch",
            "java.text",
            "java.time",
            "java.util.concurrent",
            "java.util.concurrent.atomic",
            "java.util.concurrent.locks",
        )
    ),
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
)


@dataclass(frozen=True)
class FlinkHome:
    """A Flink installation: ``lib/`` with flink-dist, and where ``bash-java-utils.jar`` lives."""

    path: Path

    @property
    def lib(self) -> Path:
        return self.path / "lib"

    @property
    def classpath(self) -> str:
        # Java expands "dir/*" itself; it must not be shell-globbed.
        return str(self.lib / "*")

    @property
    def bash_java_utils(self) -> Path:
        for candidate in (self.path / "bin" / "bash-java-utils.jar", *sorted(self.lib.glob("bash-java-utils*.jar"))):
            if candidate.is_file():
                return candidate
        raise PlacementError(f"{self.path}: no bin/bash-java-utils.jar (needed to size TaskManager memory)")

    @property
    def version(self) -> str | None:
        for jar in self.lib.glob("flink-dist*.jar"):
            stem = jar.stem  # flink-dist-2.3.0 or flink-dist_2.12-1.17.0
            return stem.rsplit("-", 1)[-1]
        return None


def _has_flink_dist(path: Path) -> bool:
    return any((path / "lib").glob("flink-dist*.jar"))


def find_flink_home(explicit: str | os.PathLike[str] | None = None) -> FlinkHome:
    """``explicit``, else ``$FLINK_HOME`` (if it has lib/flink-dist*.jar), else the installed pyflink wheel."""
    tried: list[str] = []
    for candidate in (explicit, os.environ.get("FLINK_HOME")):
        if candidate:
            path = Path(candidate).expanduser()
            if _has_flink_dist(path):
                return FlinkHome(path.resolve())
            tried.append(str(path))
    try:
        import importlib.util

        spec = importlib.util.find_spec("pyflink")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations)))
        if _has_flink_dist(path):
            return FlinkHome(path.resolve())
        tried.append(str(path))
    where = f" (looked in {', '.join(tried)})" if tried else ""
    raise PlacementError(
        f"no Flink found{where}: set FLINK_HOME to a Flink 2.x dir with lib/, or pip install apache-flink-libraries"
    )
