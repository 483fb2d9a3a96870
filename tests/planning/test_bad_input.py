"""Malformed inventories, profiles and options: each is one line on stderr naming the file and field, exit code 2,
and no plan directory."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from support.cli import run_main

REPO = Path(__file__).resolve().parents[2]
INVENTORY = yaml.safe_load((REPO / "inventory" / "edge-lab.yaml").read_text())
PROFILE = json.loads((REPO / "examples" / "profiles" / "iot-sensors.json").read_text())


def _set(path: str, value):
    def mutate(doc):
        *parents, last = path.split(".")
        node = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if value is DELETE:
            del node[int(last) if isinstance(node, list) else last]
        else:
            node[int(last) if isinstance(node, list) else last] = value

    return mutate


DELETE = object()

INVENTORY_CASES = {
    "unknown field": (_set("hosts.0.colour", "red"), "hosts[0].colour: unknown field"),
    "missing address": (_set("hosts.1.address", DELETE), "hosts[1].address: required field is missing"),
    "bandwidth fast": (_set("links.0.bandwidth", "fast"), "links[0].bandwidth: 'fast' is not a rate like '50mbit'"),
    "negative delay": (_set("links.0.delay", "-5ms"), "links[0].delay: '-5ms' is not a time"),
    "loss over 100%": (_set("links.1.loss", "150%"), "links[1].loss: '150%' is more than 100%"),
    "unit typo": (_set("links.0.bandwidth", "50mbits"), "links[0].bandwidth: '50mbits' has unknown unit"),
    "unknown model": (_set("hosts.2.model", "rpi9"), "hosts[2].model: unknown host model 'rpi9'"),
    "duplicate host": (_set("hosts.2.name", "rpi1"), "hosts[2].name: duplicate host name 'rpi1'"),
    "link from unknown": (_set("links.0.from", "rpi7"), "links[0].from: unknown host 'rpi7'"),
    "link from server": (_set("links.0.from", "server"), "links[0].from: 'server' is not an edge host"),
    "edge without link": (_set("links.2", DELETE), "hosts[3]: edge host 'rpi3' has no link to a server"),
    "no server": (_set("hosts.0.role", "edge"), "hosts: at least one host must have role 'server'"),
    "bad role": (_set("hosts.1.role", "cloud"), "hosts[1].role: Input should be 'server' or 'edge'"),
    "generic without cores": (
        _set("hosts.0.cores", DELETE),
        "hosts[0].cores: host 'server' of model 'generic' needs 'cores'",
    ),
    "memory lots": (_set("hosts.0.memory", "lots"), "hosts[0].memory: 'lots' is not a size"),
    "bad rest url": (_set("flink.rest_url", "localhost:8081"), "flink.rest_url: String should match pattern"),
    "cpu target": (
        _set("policy.cpu_utilisation_target", 1.5),
        "policy.cpu_utilisation_target: Input should be less than or equal to 1",
    ),
    "pin unknown host": (
        _set("pins.sources.Source: Sensors", ["rpi1", "rpi9", "rpi3"]),
        "pins.sources.Source: Sensors: unknown host 'rpi9'",
    ),
    "pin count": (
        _set("pins.sources.Source: Sensors", ["rpi1", "rpi2"]),
        "pins.sources.Source: Sensors: lists 2 hosts but 'Source: Sensors' has parallelism 3",
    ),
    "pin non-source": (_set("pins.sources.Parse", "rpi1"), "pins.sources.Parse: 'Parse' is not a source"),
    "jobmanager unknown": (_set("flink.jobmanager", "nas"), "flink.jobmanager: unknown host 'nas'"),
    "bad mode": (_set("flink.placement_mode", "magic"), "flink.placement_mode: Input should be 'custom' or 'vanilla'"),
    "unsupported flink": (
        _set("flink.version", "1.18.1"),
        "flink.version: Flink 1.18.1 is not supported (supported: 1.19, 1.20, 2.0, 2.1, 2.2, 2.3)",
    ),
    "flink release line": (
        _set("flink.version", "1.20"),
        "flink.version: '1.20' is a release line: give the exact release, 1.20.<patch>",
    ),
    "flink not a version": (
        _set("flink.version", "latest"),
        "flink.version: cannot tell the Flink version from 'latest'",
    ),
    "bad interface": (_set("hosts.1.interface", "eth0; rm -rf /"), "hosts[1].interface: String should match pattern"),
    "address with semicolon": (
        _set("hosts.1.address", "10.0.0.1;x"),
        "hosts[1].address: '10.0.0.1;x' is not a host address",
    ),
    # issue 46, item 9: what passed without a word before
    "address octet over 255": (
        _set("hosts.1.address", "999.1.1.1"),
        "hosts[1].address: '999.1.1.1' is not an IPv4 address (four numbers 0-255, no leading zeros)",
    ),
    "two hosts one address": (
        _set("hosts.2.address", "192.168.1.181"),
        "hosts[2].address: '192.168.1.181' is also host 'rpi1''s address (hosts[1]): each host needs "
        "its own, schedulercfg and tc filters tell hosts by address",
    ),
    "bandwidth absurd": (
        _set("links.0.bandwidth", "1e30gbit"),
        "links[0].bandwidth: '1e30gbit' is more than 10tbit: no link is that fast",
    ),
    "latency bound not a time": (
        _set("policy.max_latency_ms", "fast"),
        "policy.max_latency_ms: takes a time like '50ms' or a mapping to times like '50ms', not 'fast'",
    ),
    "latency bound entry": (
        _set("policy.max_latency_ms", {"Sink: Alerts": "soon"}),
        "policy.max_latency_ms.Sink: Alerts: 'soon' is not a time like '50ms'",
    ),
    "pin not a name": (
        _set("pins.forbid", {"Parse": 5}),
        "pins.forbid.Parse: takes a string or a list of strings, not 5",
    ),
    "cores NaN": (_set("hosts.0.cores", float("nan")), "hosts[0].cores: NaN is not a number"),
    "link profile unknown": (
        _set("links.0", {"from": "rpi1", "to": "server", "profile": "5g-dream"}),
        "links[0].profile: unknown WAN profile '5g-dream' (known: 3g, constrained-5mbit, lte, "
        "satellite, wan-50mbit-50ms): a link without its own bandwidth takes its profile's",
    ),
}

PROFILE_CASES = {
    "forward parallelism": (
        _set("vertices.4.parallelism", 3),
        "vertices[4].subtasks: vertex 'Window Aggregate' has parallelism 3 but 2 subtasks",
    ),
    "unknown vertex": (_set("edges.0.target", "nope"), "edges[0].target: unknown vertex id 'nope'"),
    "unknown strategy": (
        _set("edges.1.ship_strategy", "TELEPORT"),
        "edges[1].ship_strategy: unknown ship strategy 'TELEPORT'",
    ),
    "negative rate": (
        _set("vertices.1.subtasks.0.records_in_per_s", -3),
        "vertices[1].subtasks[0].records_in_per_s: Input should be greater than or equal to 0",
    ),
    "busy over 1000": (
        _set("vertices.1.subtasks.0.busy_ms_per_s", 1200),
        "vertices[1].subtasks[0].busy_ms_per_s: Input should be less than or equal to 1000",
    ),
    "wrong format": (_set("format", "other/v9"), "format: Input should be 'placement.profile/v1'"),
    "no vertices": (_set("vertices", []), "vertices: List should have at least 1 item"),
    # issue 46, item 9: Python's json reads NaN, which JSON has not; a profile says null where Flink reported NaN
    "busy NaN": (
        _set("vertices.1.subtasks.0.busy_ms_per_s", float("nan")),
        "vertices[1].subtasks[0].busy_ms_per_s: NaN is not a number (JSON has no NaN: write null where Flink "
        "reported NaN)",
    ),
    "no edges": (
        _set("edges", DELETE),
        "edges: required field is missing: 6 vertices and no edges would plan each as "
        "its own source and sink (write [] if that is meant)",
    ),
    "rate infinite": (
        _set("vertices.1.subtasks.0.records_in_per_s", float("inf")),
        "vertices[1].subtasks[0].records_in_per_s: Infinity is not a number",
    ),
}


def assert_one_line_error(code, out, err, *fragments):
    assert code == 2, (code, err)
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    assert "function-" not in err and "list[" not in err, err  # what the field takes, not pydantic's validator names
    for fragment in fragments:
        assert fragment in err, (fragment, err)


@pytest.mark.parametrize("case", sorted(INVENTORY_CASES))
def test_malformed_inventory(case, tmp_path, capsys):
    mutate, expected = INVENTORY_CASES[case]
    doc = copy.deepcopy(INVENTORY)
    mutate(doc)
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump(doc, allow_unicode=True))
    code, out, err = run_main(
        [
            "plan",
            "--inventory",
            inv,
            "--profile",
            REPO / "examples/profiles/iot-sensors.json",
            "--out",
            tmp_path / "out",
        ],
        capsys,
    )
    assert_one_line_error(code, out, err, str(inv), expected)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", sorted(PROFILE_CASES))
def test_malformed_profile(case, tmp_path, capsys):
    mutate, expected = PROFILE_CASES[case]
    doc = copy.deepcopy(PROFILE)
    mutate(doc)
    prof = tmp_path / "profile.json"
    prof.write_text(json.dumps(doc))
    code, out, err = run_main(
        ["plan", "--inventory", REPO / "inventory/edge-lab.yaml", "--profile", prof, "--out", tmp_path / "out"], capsys
    )
    assert_one_line_error(code, out, err, str(prof), expected)
    assert not (tmp_path / "out").exists()


def test_cycle_in_profile(tmp_path, capsys):
    doc = copy.deepcopy(PROFILE)
    doc["edges"].append(
        {"source": doc["vertices"][2]["id"], "target": doc["vertices"][1]["id"], "ship_strategy": "REBALANCE"}
    )
    prof = tmp_path / "cycle.json"
    prof.write_text(json.dumps(doc))
    code, out, err = run_main(
        ["plan", "--inventory", REPO / "inventory/edge-lab.yaml", "--profile", prof, "--out", tmp_path / "o"], capsys
    )
    assert_one_line_error(code, out, err, str(prof), "edges: the job graph has a cycle")


@pytest.mark.parametrize(
    "text,expected",
    [
        ("hosts: [\n  - name: a\n   bad", "invalid YAML at line"),
        # the pure-Python parser's words, which libyaml (the fast parser tried first) puts otherwise
        ("name: lab\n hosts: []\n", "invalid YAML at line 2 column 7: mapping values are not allowed here"),
        ("hosts: [a, b\n", "invalid YAML at line 2 column 1: expected ',' or ']', but got '<stream end>'"),
        ("name: lab\n\t- x\n", "invalid YAML at line 2 column 1: found character '\\t' that cannot start any token"),
        ("- just\n- a list\n", "expected a mapping at the top level"),
        ("", "expected a mapping at the top level, found NoneType"),
    ],
)
def test_unparseable_inventory(text, expected, tmp_path, capsys):
    inv = tmp_path / "broken.yaml"
    inv.write_text(text)
    code, out, err = run_main(["inventory", "validate", inv], capsys)
    assert_one_line_error(code, out, err, str(inv), expected)


def test_unparseable_profile_and_missing_files(tmp_path, capsys):
    prof = tmp_path / "p.json"
    prof.write_text("{ not json")
    code, out, err = run_main(
        ["plan", "--inventory", REPO / "inventory/edge-lab.yaml", "--profile", prof, "--out", tmp_path / "o"], capsys
    )
    assert_one_line_error(code, out, err, str(prof), "invalid JSON at line 1 column 3")
    code, out, err = run_main(
        ["plan", "--inventory", tmp_path / "none.yaml", "--profile", prof, "--out", tmp_path / "o"], capsys
    )
    assert_one_line_error(code, out, err, "none.yaml: file not found")
    code, out, err = run_main(["inventory", "validate", tmp_path], capsys)
    assert code == 2 and err.count("\n") == 1


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--time-limit", "0"], "Invalid value for '--time-limit'"),
        (["--solver", "gurobi"], "Invalid value for '--solver'"),
        (["--rate-scale", "-1"], "Invalid value for '--rate-scale'"),
        (["--gap", "1.5"], "Invalid value for '--gap'"),
        (["--objective", "fastest"], "Invalid value for '--objective'"),
        (["--bogus"], "No such option '--bogus'"),
    ],
)
def test_bad_options(args, expected, tmp_path, capsys):
    code, out, err = run_main(
        [
            "plan",
            "--inventory",
            REPO / "inventory/edge-lab.yaml",
            "--profile",
            REPO / "examples/profiles/iot-sensors.json",
            "--out",
            tmp_path / "o",
            *args,
        ],
        capsys,
    )
    assert_one_line_error(code, out, err, expected)


@pytest.mark.parametrize(
    "command",
    [
        [
            "plan",
            "--inventory",
            REPO / "inventory/edge-lab.yaml",
            "--profile",
            REPO / "examples/profiles/iot-sensors.json",
        ],
        ["inventory", "ansible", REPO / "inventory/edge-lab.yaml"],
    ],
    ids=["plan", "inventory ansible"],
)
def test_an_empty_out_is_not_the_current_directory(command, tmp_path, capsys, monkeypatch):
    """``--out ''`` wrote the plan's files into the current directory (issue 46, item 9)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main([*command, "--out", ""], capsys)
    assert_one_line_error(
        code,
        out,
        err,
        "Invalid value for '--out': empty: name a file or directory (an empty path is the current directory)",
    )
    assert not list(tmp_path.iterdir())


def test_missing_required_option(capsys):
    code, out, err = run_main(["plan", "--inventory", REPO / "inventory/edge-lab.yaml"], capsys)
    assert_one_line_error(code, out, err, "Missing option '--profile'")


def test_label_collision_is_a_warning_in_both_modes(tmp_path, capsys):
    """The scheduler extension matches labels exactly before any substring: "Map (1/3)" places Map, not FlatMap.
    The seed projects' contains() would not, so the plan says so."""
    doc = copy.deepcopy(PROFILE)
    doc["vertices"][1]["name"] = "Map"  # "Map (1/3)" is part of "FlatMap (1/3)"
    doc["vertices"][2]["name"] = "FlatMap"
    prof = tmp_path / "clash.json"
    prof.write_text(json.dumps(doc))
    for mode in ("custom", "vanilla"):
        code, _out, err = run_main(
            [
                "plan",
                "--inventory",
                REPO / "inventory/edge-lab.yaml",
                "--profile",
                prof,
                "--out",
                tmp_path / mode,
                "--mode",
                mode,
            ],
            capsys,
        )
        assert code == 0, err
        plan = json.loads((tmp_path / mode / "plan.json").read_text())
        assert any("label 'Map (1/3)' is part of task name 'FlatMap (1/3)'" in w for w in plan["warnings"])
        lines = (tmp_path / mode / "schedulercfg").read_text().splitlines()
        assert any(line.startswith("Map (1/3); ") for line in lines) and any(
            line.startswith("FlatMap (1/3); ") for line in lines
        )


@pytest.mark.parametrize(
    "births,expected",
    [
        (
            {"Source: Sensors": ["rpi1", "rpi2", "rpi3"]},
            "pins.operators.Source: Sensors: a source's host is where its data is born",
        ),
        ({}, "pins.operators.Source: Sensors: a source's host is where its data is born"),  # no birth pin: same rule
    ],
    ids=["born-on-the-pis", "no-birth-pin"],
)
def test_operator_pin_on_a_source_is_bad_input(births, expected, tmp_path, capsys):
    doc = copy.deepcopy(INVENTORY)
    doc["pins"] = {"sources": births, "operators": {"Source: Sensors": "rpi1"}}
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump(doc, allow_unicode=True))
    for extra in ([], ["--compare"]):  # the baselines are never asked about a pin the solver refuses
        code, out, err = run_main(
            [
                "plan",
                "--inventory",
                inv,
                "--profile",
                REPO / "examples/profiles/iot-sensors.json",
                "--out",
                tmp_path / "out",
                *extra,
            ],
            capsys,
        )
        assert_one_line_error(code, out, err, str(inv), expected, "pins.sources")
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "text,field,where",
    [
        ("policy:\n  wan_headroom: 0.5\npolicy:\n  objective: weighted\n", "policy", "lines 1 and 3"),
        ("hosts:\n  - {name: rpi1, role: edge, name: rpi2}\n", "hosts[0].name", "line 2, columns 6 and 30"),
    ],
    ids=["section twice", "key twice in a flow mapping"],
)
def test_a_yaml_key_given_twice_is_refused(text, field, where, tmp_path, capsys):
    """YAML keeps the last of two equal keys: a second ``policy:`` silently replaced the first (issue 46, item 9)."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(text)
    code, out, err = run_main(["inventory", "validate", inv], capsys)
    assert_one_line_error(code, out, err, f"{inv}: {field}: given twice ({where}): YAML would keep only the second")


@pytest.mark.parametrize("path", sorted((REPO / "inventory").glob("*.yaml")), ids=lambda p: p.name)
def test_a_shipped_inventory_reads_the_same_with_libyaml_as_without(path):
    """read_document parses with libyaml when PyYAML has it: the document is the one the pure-Python parser reads."""
    from placement.loading import read_document

    assert read_document(path) == yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)


def test_yaml_merge_keys_are_no_duplicates(tmp_path):
    from placement.loading import read_document

    doc = tmp_path / "merge.yaml"
    doc.write_text("a: &d {x: 1, y: 1}\nb:\n  <<: *d\n  x: 2\n")  # a merged key set again is YAML's override
    assert read_document(doc) == {"a": {"x": 1, "y": 1}, "b": {"x": 2, "y": 1}}


def test_a_link_naming_a_wan_profile_alone_takes_its_figures(tmp_path, capsys):
    """inventory/README.md: ``profile: lte`` takes the figures of a named WAN profile; it was refused with
    "links[0].bandwidth: required field is missing" (issue 46, item 9). Figures the link gives itself stay its own."""
    doc = copy.deepcopy(INVENTORY)
    doc["links"][0] = {"from": "rpi1", "to": "server", "profile": "lte"}
    doc["links"][1] = {"from": "rpi2", "to": "server", "profile": "3g", "delay": "10ms"}
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump(doc, allow_unicode=True))
    code, out, err = run_main(["inventory", "validate", inv, "--json"], capsys)
    assert code == 0, err
    links = json.loads(out)["links"]
    assert {k: links[0][k] for k in ("bandwidth", "delay", "jitter", "loss", "correlation", "profile")} == {
        "bandwidth": 20.0,
        "delay": 35.0,
        "jitter": 10.0,
        "loss": 0.1,
        "correlation": 25.0,
        "profile": "lte",
    }
    assert (links[1]["bandwidth"], links[1]["delay"]) == (2.0, 10.0)
