"""``placement watch --apply auto`` on the real lab (inventory/lab.yaml, custom mode), lean:

the IoT job placed all-on-server (sources on the Pis, raw readings over the uplinks; rates and uplinks from
:mod:`placement.lab.watch_scenario`) at its low rate — steady: the watch decides several times and redeploys
nothing; then the job's own ``--rate-schedule`` steps to three times that (no resubmission), which saturates both
uplinks under that placement; the watch detects it, re-plans and
applies through ``placement apply`` (savepoint, schedulercfg, verify), and the sources run at the new rate again.

The watch runs as a user runs ``--apply ask``: on a terminal (a real pseudo-terminal, its live display on), where the
test declines the first proposal (logged as declined, nothing changes), accepts the next and declines any after the
apply (a follow-up on a window still settling is not what this test is about); Ctrl-C typed on that
terminal ends it cleanly (exit 0, a whole decision log). ``--apply auto`` takes the same path without the prompt;
its long proofs are in benchmarks/watch_recovery.py.

Run it under the lab lock: ``flock /tmp/placement-lab.lock .venv/bin/pytest -q tests/watch/test_watch_lab.py``.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from placement.flink.rest import FlinkRest
from placement.lab import watch_scenario as lab
from placement.netns import netns_available
from placement.watch.record import read_log
from placement.writers.planjson import load_plan
from support import real_parts
from support.lab import assert_nothing_left

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(900), real_parts.needs(netns_available())]

ROOT = Path(__file__).resolve().parents[2]
PLACEMENT = str(Path(sys.executable).with_name("placement"))
LOW, HIGH = lab.LOW, lab.HIGH  # readings/s per source subtask: 0.4 and 1.2 of an uplink's bandwidth in raw readings
STEP_S = 150  # on the schedule's clock: the placed job's warm-up (60 s meters + one 30 s window), steady decisions


def story(log: Path) -> None:
    """The loop's decisions, printed (shown when the test fails)."""
    for r in read_log(log) if log.exists() else []:
        if r["record"] != "decision":  # an effect line: its "decision" is the tick it follows up
            print(r)
            continue
        w = r.get("window") or {}
        print(
            r["record"],
            r.get("tick"),
            (r.get("decision") or {}).get("action"),
            (r.get("decision") or {}).get("reason"),
            w.get("source_rates"),
            w.get("fresh_source_rates"),
            [(x["host"], round(x["mbit"], 2)) for x in w.get("links", [])],
            r.get("apply"),
            r.get("notes"),
        )


class Terminal:
    """A process on a pseudo-terminal of its own (its controlling terminal: Ctrl-C typed on it is a real SIGINT)."""

    PROMPT = b"[y/N]: "

    def __init__(self, argv: list[str], **kwargs):
        master, slave = pty.openpty()
        self.master, self.output = master, bytearray()

        # setsid --ctty: a session of its own whose controlling terminal is its stdin, the pseudo-terminal
        self.proc = subprocess.Popen(
            ["setsid", "--ctty", "--wait", *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**os.environ, "COLUMNS": "160"},
            **kwargs,
        )
        os.close(slave)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the process closed the terminal
                return
            if not chunk:
                return
            self.output += chunk

    def prompts(self) -> int:
        return self.output.count(self.PROMPT)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def tail(self) -> str:
        return self.output[-3000:].decode(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def test_steady_then_a_saturating_step_is_detected_asked_on_a_terminal_and_applied(tmp_path):
    work = tmp_path / "lab"
    log = tmp_path / "decisions.jsonl"
    watch = None
    try:
        inventory = lab.lab_inventory(ROOT / "inventory" / "lab.yaml", tmp_path / "lab.yaml")
        up = subprocess.run(
            [PLACEMENT, "lab", "up", "--inventory", str(inventory), "--workdir", str(work)],
            check=False,
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
        )
        assert up.returncode == 0, up.stderr[-2000:]
        state = json.loads((work / "lab.json").read_text())
        rest = FlinkRest(state["rest_url"])
        placed = lab.place_all_on_server(state, tmp_path / "scenario", [(0, LOW), (STEP_S, HIGH)])
        step_at = placed.clock_ms / 1000 + STEP_S
        assert step_at - time.time() > 100, "placing the job took too long for a steady phase before the step"
        watch = Terminal(
            [
                PLACEMENT,
                "watch",
                "--inventory",
                str(placed.inventory),
                "--job-name",
                lab.JOB_NAME,
                "--apply",
                "ask",
                "--interval",
                "10",
                "--window",
                "30",
                "--flush",
                "5",
                "--sample",
                "2",
                "--engine",
                "pandas",
                "--cooldown",
                "60",
                "--settle",
                "5",
                "--work-dir",
                str(tmp_path / "watch"),
                "--log",
                str(log),
            ],
            cwd=ROOT,
        )
        applied, answered = None, 0
        while time.time() < step_at + 300 and applied is None:
            time.sleep(1)
            assert watch.proc.poll() is None, watch.tail()
            applied = next(
                (
                    r
                    for r in (read_log(log) if log.exists() else [])
                    if r["record"] == "decision" and r["apply"] and r["apply"]["status"] == "applied"
                ),
                None,
            )
            # the first proposal declined, the next accepted; the log is read first, so a follow-up asked in the
            # same second as the apply's record is left to decline_follow_ups, not accepted as a third
            if applied is None and watch.prompts() > answered:
                watch.type("n\n" if answered == 0 else "y\n")
                answered += 1
        assert applied is not None and answered == 2
        applied_at = time.time()

        def decline_follow_ups() -> None:
            nonlocal answered
            while watch.prompts() > answered:
                watch.type("n\n")
                answered += 1

        # restored: both sources at >= 90 % of the new rate (the re-placed tasks start on cold JIT, throttled Pis)
        rate = lab.source_rate(rest, 15)
        while rate < 0.9 * 2 * HIGH and time.time() < applied_at + 150:
            decline_follow_ups()
            rate = lab.source_rate(rest, 15)
        assert rate >= 0.9 * 2 * HIGH, f"the sources send {rate:.0f} records/s after the apply, not {2 * HIGH}"
        restored_at = time.time()
        # the new job's first warm window holds the applied plan to the rates it was made for
        checked = None
        while checked is None and time.time() < applied_at + 240:
            time.sleep(2)
            assert watch.proc.poll() is None, watch.tail()
            decline_follow_ups()
            checked = next(
                (
                    r
                    for r in read_log(log)
                    if r["record"] == "decision"
                    and r["tick"] > applied["tick"]
                    and r["window"]
                    and any("applied plan was made for" in n for n in r["notes"])
                ),
                None,
            )
        assert checked is not None, "no warm window of the new job"
        watch.type("\x03")  # Ctrl-C on the watch's terminal
        assert watch.proc.wait(120) == 0, watch.tail()
        time.sleep(0.5)  # the reader drains the terminal
        assert b"watch stopped after" in watch.output and b"1 applied" in watch.output

        records = [r for r in read_log(log) if r["record"] == "decision"]
        before = [r for r in records if r["at_ms"] < step_at * 1000]
        steady = [r for r in before if r["decision"]["action"] == "steady"]
        print(
            f"before the step: {len(before)} decisions, {len(steady)} steady, "
            f"{sum(1 for r in before if r['apply'])} applies; step -> decided {applied['at_ms'] / 1000 - step_at:.0f} "
            f"s, applied {applied['at_ms'] / 1000 + applied['apply']['took_s'] - step_at:.0f} s (apply "
            f"{applied['apply']['took_s']} s), source rate {rate:.0f}/s (target {2 * HIGH}) "
            f"{restored_at - step_at:.0f} s after the step"
        )
        assert len(steady) >= 2 and not any(r["apply"] for r in before)
        asked = [r for r in records if r["apply"]]
        statuses = [r["apply"]["status"] for r in asked]  # any after the apply are follow-ups the test declined
        assert statuses[:2] == ["declined", "applied"] and set(statuses[2:]) <= {"declined"}
        assert asked[0]["proposal"]["plan_dir"].encode() in watch.output  # the prompt named the plan it offered
        # relief (the running placement breaks an uplink under the new load) or cheaper with more room (it would
        # soon): either way the filter moves to the Pis and the uplinks carry a fraction of the raw readings
        p = applied["proposal"]
        assert applied["decision"]["kind"] == "relief" or (
            applied["decision"]["kind"] == "cheaper" and p["planned_peak"] < p["current_peak"]
        )
        assert {d["kind"] for d in applied["drifts"]} & {"rate", "link", "backpressure"}
        assert p["planned_wan_mbit"] < 0.2 * p["current_wan_mbit"]
        # both sources at the new rate again (the schedule paces them: no catch-up burst)
        assert rate == pytest.approx(2 * HIGH, rel=0.1)
        # the plan in effect: the applied one while the warm window's rates are within 10 % of what it was made for,
        # else a re-plan of the same placement for the rates the sources send now
        assert applied["plan_in_effect"] == p["plan_dir"] and before[-1]["plan_in_effect"] is None
        scale = load_plan(Path(p["plan_dir"])).rate_scale
        made_for = scale * applied["window"]["source_rates"][lab.SOURCE]
        now = {**checked["window"]["source_rates"], **checked["window"]["fresh_source_rates"]}[lab.SOURCE]
        off = abs(now / made_for - 1)
        print(
            f"applied plan made for {made_for:,.0f} records/s, first warm window {now:,.0f} ({off:+.0%}): "
            f"{checked['decision']['reason']}"
        )
        if off > 0.10:
            # (plan.json keeps the rate scale to 3 decimals)
            assert any(
                dr["kind"] == "rate" and dr["reference"] == pytest.approx(made_for, rel=1e-3)
                for dr in checked["drifts"]
            )
            if checked["decision"]["reason"] == "re-planned: the plan is already in effect":
                assert checked["plan_in_effect"] == checked["proposal"]["plan_dir"] != p["plan_dir"]
        else:
            assert not [dr for dr in checked["drifts"] if dr["kind"] == "rate"]
            assert checked["plan_in_effect"] == p["plan_dir"]
    finally:
        if watch is not None:
            watch.kill()
        subprocess.run(
            [PLACEMENT, "lab", "down", "--workdir", str(work)], check=False, capture_output=True, timeout=300
        )
        story(log)  # after the lab is down: nothing it could raise may leave the lab behind
    assert_nothing_left(work)
