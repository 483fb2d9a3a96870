"""The watch's collector: :class:`placement.collect.collector.Collector` in a thread of its own, writing one rolling
history per watched job and starting again on the job of the same name after a redeploy."""

from __future__ import annotations

import threading
from pathlib import Path

from placement.collect.collector import CollectOptions, Collector
from placement.errors import PlacementError
from placement.inventory import Inventory
from placement.watch.options import Status, WatchOptions


class CollectorThread:
    """A collector that keeps collecting the job called ``job_name`` (default: the options') into one rolling
    history, across redeploys. Several jobs watched: one each, each into its own history."""

    def __init__(
        self,
        rest_url: str,
        options: WatchOptions,
        history: Path,
        stop: threading.Event,
        status: Status,
        job_name: str | None = None,
        inventory: Inventory | None = None,
    ):
        self.rest_url, self.o, self.history, self.stop_event, self.status = rest_url, options, history, stop, status
        self.inventory = inventory  # the hosts: each TaskManager's CPU per thread is read too (the re-plans' CPU)
        self.job_name = job_name or options.job_name
        self.thread = threading.Thread(target=self._run, name=f"watch-collector-{self.job_name}", daemon=True)
        self.error: str | None = None

    def start(self) -> None:
        self.thread.start()

    def _sleep(self, seconds: float) -> None:
        if self.stop_event.wait(seconds):
            raise KeyboardInterrupt  # the collector's own way to stop: it flushes what it has and returns

    def _run(self) -> None:
        o = self.o
        while not self.stop_event.is_set():
            collector = Collector(
                CollectOptions(
                    rest_url=self.rest_url,
                    out_dir=self.history,
                    job_name=self.job_name,
                    duration_s=1e9,
                    interval_s=o.sample_s,
                    flush_s=o.flush_s,
                    keep_s=o.keep_s,
                    keep_bytes=o.keep_bytes,
                    inventory=self.inventory,
                ),
                sleep=self._sleep,
            )
            try:
                self._say("waiting for the job")
                manifest = collector.run(on_progress=lambda p: self._say(f"collecting ({p.rows:,} samples)"))
                self._say(f"run {manifest.run_id} ended: {manifest.stopped}")
            except KeyboardInterrupt:
                return
            except PlacementError as exc:  # no running job (a redeploy in progress), REST down: try again
                self.error = str(exc)
                self._say(f"retrying: {exc}")
            if self.stop_event.wait(2.0):
                return

    def _say(self, state: str) -> None:
        """The collector's state on the status: its own line, and (the first job's, or the only one) ``collector``."""
        self.status.collectors[self.job_name] = state
        if len(self.status.collectors) == 1 or next(iter(self.status.collectors)) == self.job_name:
            self.status.collector = state

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)
