"""Profiling windows with one Spark session for the whole watch (no JVM start per decision).

:func:`placement.profile.pipeline.build_profile` is ``placement profile``'s own function; it takes a session, so the
loop makes one (``spark_job.spark_session``) on the first window and hands it to every later one. The class
archive Spark's first run on a machine dumps is published when the watch ends (``finish_spark``), as the CLI does
after its one run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from placement.profile.format import JobProfile
from placement.profile.pipeline import Engine, build_profile


@dataclass
class WindowProfiler:
    engine: Engine = "spark"
    spark_master: str | None = None
    inventory: Path | None = None
    warmup_s: float = 60.0
    profiles: int = 0  # windows profiled so far
    _spark: Any = field(default=None, repr=False)

    @property
    def session(self):
        """The Spark session every window is profiled with (started on first use)."""
        if self._spark is None:
            from placement.profile.spark_job import spark_session

            self._spark = spark_session(self.spark_master)
        return self._spark

    def profile(self, metrics_dir: Path, *, job: str | None = None) -> JobProfile:
        spark = self.session if self.engine == "spark" else None
        profile = build_profile(
            metrics_dir, job=job, warmup_s=self.warmup_s, engine=self.engine, spark=spark, inventory=self.inventory
        )
        self.profiles += 1
        return profile

    def close(self) -> None:
        if self._spark is not None:
            from placement.profile.spark_job import finish_spark

            finish_spark()
