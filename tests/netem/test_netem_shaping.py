"""`placement netem` on real veth pairs: real tc rules, real TCP transfers measured with iperf3.

The root namespace plays the edge host (its address is local, so the CLI shapes it locally) and a namespace the test
creates plays the server. Shaping sits on the root-side veth's egress, i.e. on edge -> server traffic.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from netem_helpers import (
    connect_rtt_ms,
    iperf_transfer,
    netem_missing_reason,
    root_qdisc,
    run_cli,
    socket_transfer,
    write_inventory,
)

from placement.netem import ops, tc
from placement.netns import Namespaces, VethPair, run
from placement.remote import CommandFailed, LocalExecutor
from support import real_parts

pytestmark = [pytest.mark.netns, pytest.mark.timeout(180)]


def _inventory(tmp_path: Path, wire: VethPair, **link: str) -> Path:
    return write_inventory(
        tmp_path / "inv.yaml",
        server_address=wire.ns_addr,
        edges=[
            {
                "name": "edge1",
                "address": wire.host_addr,
                "interface": wire.host_if,
                "link": {"bandwidth": "20mbit", **link},
            }
        ],
    )


def _show(capsys: pytest.CaptureFixture[str], inv: Path) -> dict:
    code, out, err = run_cli(capsys, "netem", "show", "--inventory", str(inv), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["format"] == "placement.netem-status/v1"
    [entry] = doc["hosts"]
    return entry


@pytest.mark.parametrize("rate", [5, 20, 50])
def test_achieved_rate_is_within_ten_percent(
    rate: int, wire: VethPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv = _inventory(tmp_path, wire, bandwidth=f"{rate}mbit")
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv))
    assert code == 0, err
    assert f"edge1 {wire.host_if}: shaped → {wire.ns_addr} {rate} Mbit/s" in out
    end = iperf_transfer(wire.ns, wire.ns_addr, seconds=4, omit=1)
    achieved = end["sum_received"]["bits_per_second"] / 1e6
    print(f"configured {rate} Mbit/s, TCP goodput {achieved:.2f} Mbit/s ({achieved / rate - 1:+.1%})")
    assert achieved == pytest.approx(rate, rel=0.10)


def test_unshaped_link_is_much_faster_than_the_limits(wire: VethPair) -> None:
    # guards the test above: without our rules the veth carries far more than 50 Mbit/s
    end = iperf_transfer(wire.ns, wire.ns_addr, seconds=1)
    print(f"unshaped: {end['sum_received']['bits_per_second'] / 1e6:.0f} Mbit/s")
    assert end["sum_received"]["bits_per_second"] / 1e6 > 200


def test_show_reports_the_bytes_the_transfer_sent(
    wire: VethPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv = _inventory(tmp_path, wire, bandwidth="50mbit")
    assert run_cli(capsys, "netem", "apply", "--inventory", str(inv))[0] == 0
    before = _show(capsys, inv)
    assert before["installed"] and before["classes"][0]["bytes"] < 10_000
    payload = 3_000_000
    assert socket_transfer(wire.ns, wire.ns_addr, payload) == payload
    after = _show(capsys, inv)
    [cls] = after["classes"]
    assert (cls["dest"], cls["rate_mbit"], cls["ceil_mbit"]) == (wire.ns_addr, 50.0, 50.0)
    # the class counts every frame to the server: the payload plus TCP/IP/Ethernet headers (~5 %)
    sent = cls["bytes"] - before["classes"][0]["bytes"]
    print(f"transfer payload {payload} B, tc class counted {sent} B ({sent / payload - 1:+.1%})")
    assert payload * 1.02 <= sent <= payload * 1.08 + 10_000
    assert cls["overlimits"] > 0  # the transfer ran into the limit
    code, out, _ = run_cli(capsys, "netem", "show", "--inventory", str(inv))
    assert code == 0 and wire.ns_addr in out and str(cls["bytes"]) in out


def test_clear_restores_the_original_root_and_apply_is_idempotent(
    wire: VethPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = root_qdisc(wire.host_if)
    assert original == ("noqueue", "0:")
    inv = _inventory(tmp_path, wire, bandwidth="20mbit")
    assert run_cli(capsys, "netem", "apply", "--inventory", str(inv))[0] == 0
    code, out, _ = run_cli(capsys, "netem", "apply", "--inventory", str(inv), "--profile", "constrained-5mbit")
    assert code == 0 and "reshaped" in out
    assert root_qdisc(wire.host_if) == ("htb", "ede:")
    entry = _show(capsys, inv)
    assert [c["rate_mbit"] for c in entry["classes"]] == [5.0]  # replaced, not added to
    code, out, _ = run_cli(capsys, "netem", "clear", "--inventory", str(inv))
    assert code == 0 and f"edge1 {wire.host_if}: cleared; root qdisc is noqueue 0: again" in out
    assert root_qdisc(wire.host_if) == original
    assert run(["tc", "class", "show", "dev", wire.host_if]).stdout.strip() == ""
    code, out, _ = run_cli(capsys, "netem", "clear", "--inventory", str(inv))
    assert code == 0 and "nothing to clear" in out
    # and the link is fast again
    assert iperf_transfer(wire.ns, wire.ns_addr, seconds=1)["sum_received"]["bits_per_second"] > 200e6


def test_someone_elses_root_qdisc_is_left_alone(
    wire: VethPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(
        [
            "tc",
            "qdisc",
            "add",
            "dev",
            wire.host_if,
            "root",
            "handle",
            "8:",
            "tbf",
            "rate",
            "10mbit",
            "burst",
            "10000",
            "latency",
            "50ms",
        ]
    )
    inv = _inventory(tmp_path, wire)
    code, _, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv))
    assert code == 1 and "already has a root qdisc placement did not install (tbf 8:)" in err
    code, out, _ = run_cli(capsys, "netem", "clear", "--inventory", str(inv))
    assert code == 0 and "nothing to clear (root qdisc tbf 8:)" in out
    assert root_qdisc(wire.host_if) == ("tbf", "8:")


def test_a_bad_host_later_in_the_list_changes_no_host(
    wire: VethPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv = write_inventory(
        tmp_path / "inv.yaml",
        server_address=wire.ns_addr,
        edges=[
            {"name": "edge1", "address": wire.host_addr, "interface": wire.host_if},
            {"name": "edge2", "address": "127.0.0.2", "interface": "pnnosuch1"},  # local too, an address of its own
        ],
    )
    code, _, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv))
    assert code == 2 and "hosts[2].interface: edge2: no interface 'pnnosuch1'" in err
    assert root_qdisc(wire.host_if) == ("noqueue", "0:")


def test_without_netem_the_rate_limit_still_applies(
    wire: VethPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if netem_missing_reason() is None:
        real_parts.kernel_fact("has-sch-netem")
    inv = _inventory(tmp_path, wire, bandwidth="20mbit", delay="50ms", loss="1%")
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv))
    assert code == 0, err
    notes = [line for line in out.splitlines() if "no netem" in line]
    assert notes == [
        (
            "edge1: kernel has no netem (Error: Specified qdisc kind is unknown.); rate limits applied, "
            "delay/jitter/loss NOT emulated (--require-delay makes this an error)"
        )
    ]
    [cls] = _show(capsys, inv)["classes"]
    assert (cls["rate_mbit"], cls["leaf"]) == (20.0, None)
    achieved = iperf_transfer(wire.ns, wire.ns_addr, seconds=3, omit=1)["sum_received"]["bits_per_second"] / 1e6
    assert achieved == pytest.approx(20, rel=0.10)
    # --require-delay: an error, and that host is left as it was before any apply
    run_cli(capsys, "netem", "clear", "--inventory", str(inv))
    code, _, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv), "--require-delay")
    assert code == 1 and "no netem qdisc" in err and f"{wire.host_if} was left unshaped" in err
    assert root_qdisc(wire.host_if) == ("noqueue", "0:")


def test_delay_is_added_to_the_round_trip(wire: VethPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reason = netem_missing_reason()
    if reason:
        real_parts.kernel_fact("no-sch-netem", reason)
    base = connect_rtt_ms(wire.ns_addr)
    inv = _inventory(tmp_path, wire, bandwidth="20mbit", delay="40ms")
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv), "--require-delay")
    assert code == 0, err
    assert "no netem" not in out
    shaped = connect_rtt_ms(wire.ns_addr)
    print(f"round trip {base:.2f} ms unshaped, {shaped:.2f} ms with 40 ms of delay")
    assert shaped - base == pytest.approx(40, abs=8)
    [cls] = _show(capsys, inv)["classes"]
    assert cls["leaf"] == "netem" and cls["delay_ms"] == pytest.approx(40)


def test_executor_inside_a_namespace_shapes_that_namespace(wire: VethPair) -> None:
    """The lab's path: ops + LocalExecutor(netns=...) shape the server side of the wire (server -> edge)."""
    ex = LocalExecutor("srv", netns=wire.ns)
    outcome = ops.apply_host(ex, wire.ns_if, [tc.Shape(wire.host_addr, 20)])
    assert not outcome.replaced and not outcome.netem_wanted
    assert root_qdisc(wire.ns_if, wire.ns) == ("htb", "ede:")
    assert root_qdisc(wire.host_if) == ("noqueue", "0:")  # the other end is untouched
    end = iperf_transfer(None, wire.host_addr, client_ns=wire.ns, seconds=3, omit=1)
    assert end["sum_received"]["bits_per_second"] / 1e6 == pytest.approx(20, rel=0.10)
    status = ops.show_host(ex, wire.ns_if)
    assert status.classes[0].dest == wire.host_addr and status.classes[0].bytes > 3_000_000
    cleared = ops.clear_host(ex, wire.ns_if)
    assert cleared.removed and cleared.root_after is not None and cleared.root_after.describe() == "noqueue 0:"


def test_a_failure_on_a_later_host_undoes_the_earlier_ones(
    netns_required: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Namespaces("pn-m") as nets:
        first = nets.add("a", "10.201.5.1", "10.201.5.2")
        second = nets.add("b", "10.201.5.5", "10.201.5.6")
        # the second edge's interface carries a qdisc someone else installed, which apply must not replace
        run(
            [
                "tc",
                "qdisc",
                "add",
                "dev",
                second.host_if,
                "root",
                "handle",
                "8:",
                "tbf",
                "rate",
                "10mbit",
                "burst",
                "10000",
                "latency",
                "50ms",
            ]
        )
        inv = write_inventory(
            tmp_path / "inv.yaml",
            server_address=first.ns_addr,
            edges=[
                {"name": "edge1", "address": first.host_addr, "interface": first.host_if},
                {"name": "edge2", "address": second.host_addr, "interface": second.host_if},
            ],
        )
        code, _, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv))
        assert code == 1 and "edge2" in err and "(tbf 8:)" in err
        assert root_qdisc(first.host_if) == ("noqueue", "0:")  # edge1 was shaped, then undone
        assert root_qdisc(second.host_if) == ("tbf", "8:")


class _CorruptingExecutor(LocalExecutor):
    """Real tc, but the filter command gets a bogus option so that tc rejects it (a failure mid-way through apply
    that a well-formed inventory cannot cause)."""

    def _run(self, argv: list[str], **kwargs: object) -> object:
        if argv[:3] == ["tc", "filter", "add"]:
            argv = [*argv[:-2], "pn-bogus-option", *argv[-2:]]
        return super()._run(argv, **kwargs)  # type: ignore[arg-type]


def test_fake_failure_mid_apply_removes_everything_installed(wire: VethPair) -> None:
    ex = _CorruptingExecutor("edge1")
    with pytest.raises(CommandFailed, match=r"^edge1: `tc filter add dev .* pn-bogus-option .*` failed: "):
        ops.apply_host(ex, wire.host_if, [tc.Shape(wire.ns_addr, 20)])
    assert root_qdisc(wire.host_if) == ("noqueue", "0:")
    assert run(["tc", "class", "show", "dev", wire.host_if]).stdout.strip() == ""


def test_dry_run_clear_and_show_touch_nothing(
    wire: VethPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv = _inventory(tmp_path, wire)
    assert run_cli(capsys, "netem", "apply", "--inventory", str(inv))[0] == 0
    code, out, _ = run_cli(capsys, "netem", "clear", "--inventory", str(inv), "--dry-run")
    assert code == 0 and out.splitlines() == [f"edge1: tc qdisc del dev {wire.host_if} root handle ede:"]
    assert root_qdisc(wire.host_if) == ("htb", "ede:")
    code, out, _ = run_cli(capsys, "netem", "apply", "--inventory", str(inv), "--dry-run", "--profile", "3g")
    assert code == 0 and f"edge1: tc class add dev {wire.host_if} parent ede: classid ede:10 htb rate 2mbit" in out
    assert [c["rate_mbit"] for c in _show(capsys, inv)["classes"]] == [20.0]  # still the real, earlier apply
