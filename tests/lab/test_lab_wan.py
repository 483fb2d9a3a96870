"""Which emulation each lab link gets and how it is spelled (pure: no root): profiles, the delay lines' rules and
command lines, the lab inventory that tells the plan what the lab emulates."""

from __future__ import annotations

from pathlib import Path

import pytest

from placement.cli.lab_cmd import _emulation
from placement.errors import BadInput
from placement.inventory import load_inventory
from placement.inventory.wan_profiles import load_profile
from placement.lab import topology as topo
from placement.lab import wan
from placement.netem import nfqueue
from placement.netem.tc import apply_commands
from support.cli import run_main

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "inventory" / "lab.yaml"
LINE_ONLY = topo.Emulators(delay_line=True)


def _plan(tmp_path: Path, emulators: topo.Emulators = LINE_ONLY, **profiles: str) -> topo.LabPlan:
    loaded = {host: load_profile(name) for host, name in profiles.items()}
    return topo.plan_lab(load_inventory(LAB), tmp_path, machine_cores=2, emulators=emulators, profiles=loaded)


def test_links_without_delay_jitter_or_loss_are_rate_only_whatever_the_machine_has(tmp_path: Path) -> None:
    for emulators in (topo.Emulators(), LINE_ONLY, topo.Emulators(netem=True)):
        plan = _plan(tmp_path, emulators)
        assert {h.emulation for h in plan.edges} == {topo.RATE_ONLY} and plan.notes == ()


def test_a_profile_for_every_host_takes_its_rate_delay_jitter_and_loss(tmp_path: Path) -> None:
    plan = _plan(tmp_path, rpi1="lte", rpi2="lte")
    for h in plan.edges:
        assert (h.emulation, h.profile, h.rate_mbit) == (topo.DELAY_LINE, "lte", 20.0)
        assert (h.wan.delay_ms, h.wan.jitter_ms, h.wan.loss_pct, h.wan.correlation_pct) == (35, 10, 0.1, 25)
        # the delay line does delay and loss: htb keeps the rate alone, no netem leaf
        assert h.shapes[0].rate_mbit == 20.0 and not h.shapes[0].needs_netem and h.not_emulated == ()


def test_where_the_kernel_has_netem_the_uplink_gets_a_netem_leaf_and_the_downlink_a_netem_root(tmp_path: Path) -> None:
    rpi1 = _plan(tmp_path, topo.Emulators(netem=True, delay_line=True), rpi1="satellite").host("rpi1")
    assert rpi1.emulation == topo.NETEM
    leaf = apply_commands(rpi1.ns_if or "", list(rpi1.shapes))[-1]
    netem = leaf[leaf.index("netem") :]
    assert netem[netem.index("delay") : netem.index("delay") + 2] == ["delay", "300ms"]
    assert netem[netem.index("loss") : netem.index("loss") + 2] == ["loss", "0.5%"]
    [down] = wan.downlink_netem_commands(rpi1)
    assert down[:6] == ["tc", "qdisc", "add", "dev", "pllab1h", "root"] and "loss" not in down
    assert down[down.index("delay") : down.index("delay") + 2] == ["delay", "300ms"]


def test_without_netem_or_a_delay_line_the_plan_says_what_is_not_emulated(tmp_path: Path) -> None:
    plan = _plan(tmp_path, topo.Emulators(), rpi2="3g")
    rpi2 = plan.host("rpi2")
    assert rpi2.emulation == topo.RATE_ONLY
    assert rpi2.not_emulated == ("delay 100ms", "jitter 25ms", "loss 1%")
    assert plan.notes and plan.notes[0].startswith("rpi2: delay 100ms, jitter 25ms, loss 1% not emulated")


@pytest.mark.parametrize(
    ("values", "want"),
    [
        (["lte"], {"rpi1": "lte", "rpi2": "lte"}),
        (["rpi2=3g"], {"rpi2": "3g"}),
        (["rpi1=satellite", "lte"], {"rpi1": "satellite", "rpi2": "lte"}),  # a host's own wins, whatever the order
        (["lte", "3g"], {"rpi1": "3g", "rpi2": "3g"}),
    ],
)
def test_wan_profile_values_name_a_profile_for_all_or_one_host(values: list[str], want: dict) -> None:
    assert topo.wan_profile_choices(values, ["rpi1", "rpi2"]) == want


@pytest.mark.parametrize("value", ["rpi9=lte", "=lte", "rpi1=", ""])
def test_a_wan_profile_value_that_names_no_edge_host_is_one_line_bad_input(value: str) -> None:
    with pytest.raises(BadInput) as info:
        topo.wan_profile_choices([value], ["rpi1", "rpi2"])
    assert info.value.field == "--wan-profile" and "\n" not in str(info.value)


def test_each_direction_is_held_at_its_receivers_ingress_matched_to_the_one_link(tmp_path: Path) -> None:
    rpi2 = _plan(tmp_path, rpi2="lte").host("rpi2")
    up, down = wan.uplink_rule(rpi2), wan.downlink_rule(rpi2)
    # uplink: in the root namespace (the server side), from the Pi's address on its root-side veth
    assert nfqueue.add_command(up) == [
        *("iptables", "-w", "-t", "mangle", "-A", "PREROUTING", "-i", "pllab2h", "-s", "10.203.2.2"),
        *("-m", "comment", "--comment", "placement-delayline pl-lab-rpi2 uplink"),
        *("-j", "NFQUEUE", "--queue-num", str(0xED02)),
    ]
    assert (down.interface, down.source, down.queue) == ("pllab2n", "10.203.0.0/16", 0xEE02)
    up_argv = wan.line_argv(up, rpi2, uplink=True)
    down_argv = wan.line_argv(down, rpi2, uplink=False)
    assert up_argv[1:3] == ["-m", "placement.netem.delayline"] and "--netns" not in up_argv
    assert up_argv[up_argv.index("--loss-pct") + 1] == "0.1" and up_argv[up_argv.index("--delay-ms") + 1] == "35"
    # the downlink's line binds its queue in the Pi's namespace and loses nothing
    assert down_argv[down_argv.index("--netns") + 1] == "pl-lab-rpi2" and "--loss-pct" not in down_argv
    assert wan.is_lab_line(up_argv) and wan.is_lab_line(down_argv)


def test_a_line_of_someone_else_is_not_the_labs() -> None:
    other = ["python", "-m", "placement.netem.delayline", "--queue", "7", "--label", "pn-dl uplink"]
    assert not wan.is_lab_line(other) and not wan.is_lab_line(["python", "-m", "placement.netem.delayline"])


def test_our_rules_are_found_in_a_listing_and_removed_as_listed() -> None:
    listing = "\n".join(
        [
            "-P PREROUTING ACCEPT",
            '-A PREROUTING -s 10.203.1.2/32 -i pllab1h -m comment --comment "placement-delayline pl-lab-rpi1 uplink" '
            "-j NFQUEUE --queue-num 60673",
            '-A PREROUTING -s 10.9.0.2/32 -i x -m comment --comment "placement-delayline pn-dl up" -j NFQUEUE',
            "-A PREROUTING -i eth0 -j ACCEPT",
        ]
    )
    [ours] = nfqueue.our_rules(listing, "pl-lab-")
    assert nfqueue.delete_listed_command(ours)[:7] == ["iptables", "-w", "-t", "mangle", "-D", "PREROUTING", "-s"]
    assert "placement-delayline pl-lab-rpi1 uplink" in nfqueue.delete_listed_command(ours)
    assert len(nfqueue.our_rules(listing)) == 2


def test_the_kernels_queue_table_is_read_per_queue() -> None:
    table = "60673  4242     3 1     0     0     5        9  1\n60674  4243     0 1     0     2     0        0  1\n"
    stats = nfqueue.parse_queue_table(table)
    assert stats[60673] == nfqueue.QueueStats(60673, 4242, 3, 0, 5)
    assert stats[60674].dropped_full == 2 and nfqueue.parse_queue_table("") == {}


def test_the_lab_inventory_carries_the_profiles_figures_so_the_plan_sees_the_emulated_link(tmp_path: Path) -> None:
    inv = load_inventory(LAB)
    plan = topo.plan_lab(inv, tmp_path, machine_cores=2, emulators=LINE_ONLY, profiles={"rpi1": load_profile("lte")})
    access = topo.LabAccess("http://127.0.0.1:8081", "custom", tmp_path, "lab", tmp_path / "k", tmp_path / "kh")
    links = {link["from"]: link for link in topo.lab_inventory(inv, plan, access)["links"]}
    assert {k: links["rpi1"][k] for k in ("profile", "bandwidth", "delay", "jitter", "loss")} == {
        "profile": "lte",
        "bandwidth": 20.0,
        "delay": 35.0,
        "jitter": 10.0,
        "loss": 0.1,
    }
    assert links["rpi2"]["bandwidth"] == 2.0 and links["rpi2"].get("delay", 0) == 0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("rpi9=lte", "--wan-profile: 'rpi9' is not an edge host of the inventory (rpi1, rpi2)"),
        ("moon", "--wan-profile: unknown WAN profile 'moon' (known: 3g, constrained-5mbit, lte, satellite"),
    ],
)
def test_lab_up_refuses_a_bad_wan_profile_in_one_line_before_anything_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, says: str
) -> None:
    code, _out, err = run_main(
        ["lab", "up", "--inventory", LAB, "--work-dir", tmp_path / "w", "--wan-profile", value], capsys
    )
    assert code == 2 and err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "w").exists()


def test_the_status_table_names_the_emulation_its_figures_and_a_line_that_is_down() -> None:
    row = {
        "profile": "lte",
        "link": {
            "emulation": "user-space delay line",
            "wan": {"delay_ms": 35, "jitter_ms": 10, "loss_pct": 0.1, "correlation_pct": 25},
            "uplink": {"running": True},
            "downlink": {"running": False},
        },
    }
    assert _emulation(row) == (
        "user-space delay line: delay 35 ms, ± 10 ms, loss 0.1 % (profile lte) [red](line down: downlink)[/]"
    )
    assert _emulation({"link": {"emulation": "rate only", "wan": {}}}) == "rate only"
