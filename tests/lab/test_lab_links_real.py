"""The lab's links with delay, jitter and loss, for real: the namespaces, veths and htb of ``lab up`` for a WAN
profile, its emulation (tc netem where the kernel has it, else the delay lines), ``lab status``' report of it, a Pi's
power loss that leaves its link's delay in place, and ``lab down`` leaving nothing — no line, no iptables rule —
without Flink; then ``lab up --wan-profile`` with it (TaskManagers registered over the emulated links, a new profile
restarting the lab).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from placement.inventory import load_inventory
from placement.inventory.wan_profiles import load_profile
from placement.lab import faults, runner, wan
from placement.lab import topology as topo
from placement.netns import netns_available, ns_exec
from placement.polling import poll
from support import real_parts
from support.lab import links_without_flink

pytestmark = [pytest.mark.netns, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "inventory" / "lab.yaml"


def _rtt_ms(namespace: str, address: str, samples: int = 9) -> float:
    """The quickest of refused TCP connects from ``namespace`` to ``address``: one round trip over the link."""
    probe = (
        "import contextlib, socket, sys, time\n"
        "best = 1e9\n"
        f"for _ in range({samples}):\n"
        "    s = socket.socket(); s.settimeout(5); t = time.perf_counter()\n"
        "    with contextlib.suppress(ConnectionRefusedError): s.connect((sys.argv[1], 9))\n"
        "    best = min(best, (time.perf_counter() - t) * 1000); s.close()\n"
        "print(best)\n"
    )
    out = subprocess.run(
        ns_exec(namespace, ["python3", "-c", probe, address]), capture_output=True, text=True, timeout=60, check=True
    )
    return float(out.stdout)


@pytest.fixture
def lte_links(tmp_path: Path):
    """rpi1 on the LTE profile (delay 35 ± 10 ms), rpi2 on its inventory link (rate only), as ``lab up`` makes them."""
    real_parts.require(netns_available())
    emulators = wan.probe()
    if not (emulators.netem or emulators.delay_line):
        real_parts.missing(f"neither tc netem nor the delay line here: {wan.delay_line_unavailable()}")
    inv = load_inventory(LAB)
    plan = topo.plan_lab(inv, tmp_path, machine_cores=2, emulators=emulators, profiles={"rpi1": load_profile("lte")})
    with links_without_flink(tmp_path, plan, str(LAB), lambda: runner._emulate_links(plan)) as state:
        yield plan, state


def test_the_profiles_link_gets_its_round_trip_and_the_other_stays_rate_only(lte_links, tmp_path: Path) -> None:
    plan, _state = lte_links
    rpi1, rpi2 = plan.host("rpi1"), plan.host("rpi2")
    assert rpi1.emulation in (topo.NETEM, topo.DELAY_LINE) and rpi2.emulation == topo.RATE_ONLY
    # 35 ± 10 ms each way: the quickest round trip of nine lies between 2 x 25 and 2 x 45 ms
    slow, fast = _rtt_ms("pl-lab-rpi1", topo.SERVER_ADDRESS), _rtt_ms("pl-lab-rpi2", topo.SERVER_ADDRESS)
    print(f"round trip rpi1 (LTE) {slow:.1f} ms, rpi2 (rate only) {fast:.2f} ms")
    assert 50.0 <= slow <= 90.0 * 1.05 and fast < 5.0
    st = runner.status(tmp_path)
    links = {h["name"]: h.get("link") for h in st["hosts"]}
    assert links["rpi2"]["emulation"] == "rate only"
    assert links["rpi1"]["emulation"] == rpi1.emulation and links["rpi1"]["wan"]["delay_ms"] == 35
    if rpi1.emulation == topo.DELAY_LINE:
        assert links["rpi1"]["uplink"]["running"] and links["rpi1"]["downlink"]["running"]
        assert links["rpi1"]["uplink"]["queue"] == wan.UPLINK_QUEUE_BASE + 1
        assert len(wan.lab_rules()) == 1  # the uplink's, in the root namespace; the downlink's is in pl-lab-rpi1
    json.dumps(st, default=str)  # what `lab status --json` prints


def test_a_pi_that_loses_power_keeps_its_links_delay(lte_links) -> None:
    plan, state = lte_links
    sleeper = subprocess.Popen(ns_exec("pl-lab-rpi1", ["sleep", "300"]))
    # `ip netns exec` joins the namespace a moment after it starts; the Pi's processes are those inside it
    _, inside = poll(
        lambda: faults.namespace_pids("pl-lab-rpi1"), lambda pids: sleeper.pid in pids, timeout=10, every=0.05
    )
    assert inside, "the sleeper never entered rpi1's namespace"
    try:
        assert faults.power_loss(state, "rpi1") >= 1
    finally:
        sleeper.wait(timeout=10)
    if plan.host("rpi1").emulation == topo.DELAY_LINE:
        link = wan.link_status(next(h for h in state["hosts"] if h["name"] == "rpi1"), state["processes"])
        assert link["uplink"]["running"] and link["downlink"]["running"]
    rtt = _rtt_ms("pl-lab-rpi1", topo.SERVER_ADDRESS)
    print(f"round trip after rpi1's power loss: {rtt:.1f} ms")
    assert rtt >= 50.0


def test_down_removes_the_lines_and_their_rules(lte_links, tmp_path: Path) -> None:
    plan, state = lte_links
    runner.down(tmp_path)
    assert wan.lab_rules() == [] and wan.lab_line_pids() == set()
    assert not any(runner.leftovers(tmp_path).values())


@pytest.mark.flink
@pytest.mark.timeout(600)
def test_lab_up_on_a_wan_profile_runs_flink_over_its_links_and_a_new_profile_restarts_it(tmp_path: Path) -> None:
    real_parts.require(netns_available())
    work = tmp_path / "lab"
    lte = {h: load_profile("lte") for h in ("rpi1", "rpi2")}
    try:
        first = runner.up(str(LAB), work, profiles=lte)
        assert not first.already_up and runner.healthy(first.state)  # every TaskManager registered over its link
        links = {h["name"]: h.get("link") for h in runner.status(work)["hosts"] if h.get("namespace")}
        assert {link["emulation"] for link in links.values()} <= {topo.NETEM, topo.DELAY_LINE}
        assert all(link["wan"]["delay_ms"] == 35 for link in links.values())
        rtt = _rtt_ms("pl-lab-rpi2", topo.SERVER_ADDRESS)
        print(f"LTE lab: round trip rpi2 → server {rtt:.1f} ms")
        assert 50.0 <= rtt <= 90.0 * 1.05
        assert runner.up(str(LAB), work, profiles=lte).already_up
        again = runner.up(str(LAB), work, profiles={"rpi1": load_profile("3g")})  # other links: a new lab
        assert not again.already_up
        hosts = {h["name"]: h for h in again.state["hosts"]}
        assert (hosts["rpi1"]["profile"], hosts["rpi2"]["profile"]) == ("3g", None)
        assert hosts["rpi2"]["emulation"] == topo.RATE_ONLY
    finally:
        runner.down(work)
    assert not any(runner.leftovers(work).values())
