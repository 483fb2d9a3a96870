"""The shipped examples work as the documents print them: every example job plans on the shipped inventory without a
warning and its plan loads for `apply` (alone and as a fleet); the measured history plans on the inventory its page
names; the README is a user's entry, with the reference in docs/; completion and a quiet `make demo` setup."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from placement.apply.fleet import load_fleet
from placement.apply.request import load_request
from placement.cli import main
from placement.inventory import load_inventory

REPO = Path(__file__).resolve().parents[2]
EDGE_LAB = REPO / "inventory" / "edge-lab.yaml"
MEASURED = REPO / "inventory" / "edge-lab-measured.yaml"
PROFILES = sorted((REPO / "examples" / "profiles").glob("*.json"))
HISTORY = REPO / "examples" / "metrics" / "iot-sensors"


def run(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in argv])
    return exit_info.value.code, *capsys.readouterr()


def job_of(profile: Path) -> str:
    return json.loads(profile.read_text())["job"]["name"]


# every example job has its entry in the shipped inventory ------------------------------------------------------------


def test_the_shipped_inventory_resubmits_every_example_job_as_itself():
    inv = load_inventory(EDGE_LAB)
    assert len(PROFILES) == 3
    for profile in PROFILES:
        job = inv.for_job(job_of(profile)).job
        assert job.name == job_of(profile)
        assert job.name == inv.job.name or job.entry_class != inv.job.entry_class, job.name  # not the IoT job's class


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_each_example_plans_without_a_warning_and_its_plan_loads_for_apply(profile, tmp_path, capsys):
    out = tmp_path / profile.stem
    code, _, err = run(["plan", "--inventory", EDGE_LAB, "--profile", profile, "--out", out, "--quiet"], capsys)
    assert code == 0 and "warning" not in err, err
    req = load_request(out, EDGE_LAB)
    assert req.inventory.job.name == job_of(profile)
    assert req.inventory.job.entry_class in (out / "redeploy.sh").read_text()


def test_the_readme_fleet_plans_and_applies_as_one_change(tmp_path, capsys):
    """The README's fleet (IoT + the branching join) reached `apply --plan … --dry-run` and stopped at "jobs: no entry
    named 'camera-meter-join'"; now every job of it loads, each with its own entry."""
    out = tmp_path / "fleet"
    argv = ["plan", "--inventory", EDGE_LAB, "--out", out, "--quiet"]
    for profile in ("iot-sensors", "branching-join"):
        argv += ["--profile", REPO / "examples" / "profiles" / f"{profile}.json"]
    code, _, err = run(argv, capsys)
    assert code == 0 and "warning" not in err, err
    fleet = load_fleet(out, EDGE_LAB)
    assert {r.plan.job: r.inventory.job.entry_class for r in fleet.requests} == {
        "iot-sensors": "placement.lab.IotSensorJob",
        "camera-meter-join": "placement.lab.BranchingJob",
    }


# the measured history ------------------------------------------------------------------------------------------------


def test_the_measured_inventory_is_edge_lab_but_for_its_cpu_target():
    ours, base = yaml.safe_load(MEASURED.read_text()), yaml.safe_load(EDGE_LAB.read_text())
    assert ours["policy"].pop("cpu_utilisation_target") == 0.9 and base["policy"].pop("cpu_utilisation_target") == 0.8
    assert ours.pop("name") == "edge-lab-measured" and base.pop("name") == "edge-lab"
    assert ours == base


def test_the_measured_history_plans_on_the_inventory_its_page_names(tmp_path, capsys):
    profile = tmp_path / "iot-profile.json"
    code, _, err = run(["profile", HISTORY, "--out", profile, "--inventory", EDGE_LAB, "--engine", "pandas"], capsys)
    assert code == 0, err
    code, _, err = run(
        ["plan", "--inventory", EDGE_LAB, "--profile", profile, "--out", tmp_path / "a", "--quiet"], capsys
    )
    assert code == 3 and "Parse (3/3) cannot keep up on rpi3: one thread would need 0.84 of a core, 0.80 usable" in err
    code, _, err = run(
        ["plan", "--inventory", MEASURED, "--profile", profile, "--out", tmp_path / "b", "--quiet"], capsys
    )
    assert code == 0, err
    page = (REPO / "docs" / "profile.md").read_text() + (REPO / "examples" / "metrics" / "README.md").read_text()
    assert page.count("--inventory inventory/edge-lab-measured.yaml --profile out/iot-profile.json") == 2


def test_the_rescale_example_is_feasible_and_rescales(tmp_path, capsys):
    """`--rescale --rate-scale 2` fits no shipped profile (their sources' threads cannot keep up at 2×); the printed
    example plans the Nexmark query at 1.2× and chooses another parallelism for its window."""
    assert "--rescale --rate-scale 1.2 --compare" in (REPO / "docs" / "plan.md").read_text()
    out = tmp_path / "nexmark"
    code, _, err = run(
        [
            "plan",
            "--inventory",
            EDGE_LAB,
            "--profile",
            REPO / "examples" / "profiles" / "nexmark-hot-items.json",
            "--out",
            out,
            "--rescale",
            "--rate-scale",
            "1.2",
            "--quiet",
        ],
        capsys,
    )
    assert code == 0, err
    assert json.loads((out / "plan.json").read_text())["rescale"]["changed"]


# the README is an entry, the reference is in docs/ -----------------------------------------------------------------


def test_the_readme_is_short_and_links_every_docs_page():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)", readme))
    assert {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")} <= linked
    for heading in ("## Install", "## The demo", "## Your own job in five commands", "## The stages", "## Read on"):
        assert heading in readme


def test_no_document_uses_words_a_user_cannot_know():
    for doc in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        text = doc.read_text()
        for word in (r"\bissue \d+", r"\bsession \d+", r"\bseed (projects?|forks?)\b"):
            assert not re.search(word, text, flags=re.IGNORECASE), f"{doc.name}: {word}"


# shell completion and a quiet setup ----------------------------------------------------------------------------------


def test_shell_completion_completes_commands_and_is_documented():
    env = {**os.environ, "_PLACEMENT_COMPLETE": "bash_complete", "COMP_WORDS": "placement pl", "COMP_CWORD": "1"}
    code = "import sys; from placement.cli import main; sys.argv[0] = 'placement'; main()"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and "plain,plan" in done.stdout.splitlines(), done.stdout + done.stderr
    assert "_PLACEMENT_COMPLETE=bash_source placement" in (REPO / "README.md").read_text()


def fake_venv(copy: Path) -> Path:
    """A `.venv` whose pip records how it was called (arguments and PYTHONWARNINGS) instead of installing."""
    bin_dir = copy / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    log = copy / "pip-calls.jsonl"
    (bin_dir / "pip").write_text(
        f"#!{sys.executable}\nimport json, os, sys\nwith open({str(log)!r}, 'a') as f:\n"
        "    f.write(json.dumps({'argv': sys.argv[1:], 'warnings': os.environ.get('PYTHONWARNINGS', '')}) + '\\n')\n"
    )
    (bin_dir / "pip").chmod(0o755)
    return log


def editable_install_call(tmp_path: Path) -> dict:
    """How scripts/setup.sh (what `make demo` runs first) calls pip for the editable install, in a clone's copy."""
    copy = tmp_path / "clone"
    shutil.copytree(REPO / "scripts", copy / "scripts")
    for name in ("pyproject.toml", "constraints.txt"):
        shutil.copy(REPO / name, copy / name)
    log = fake_venv(copy)
    done = subprocess.run(
        [copy / "scripts" / "setup.sh"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": ""},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    (editable,) = [c for c in calls if "-e" in c["argv"]]
    return editable


def test_setup_filters_only_setuptools_editable_install_notice(tmp_path):
    call = editable_install_call(tmp_path)
    assert call["warnings"] == "ignore:Editable installation" and "-q" in call["argv"]


def installed_placement() -> str | None:
    """Where this interpreter's environment has placement installed from (its distribution's files), if it has."""
    code = (
        "import importlib.metadata as m; d = m.distribution('placement'); print(sorted(str(f) for f in d.files or []))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    return done.stdout if done.returncode == 0 else None


@pytest.mark.packaging
def test_the_editable_install_make_demo_runs_prints_no_warning_block(tmp_path):
    """The real install, as setup.sh calls pip (its filter), of a copy into a prefix: no asterisk block."""
    before = installed_placement()
    call = editable_install_call(tmp_path)
    source = tmp_path / "source"
    shutil.copytree(REPO / "placement", source / "placement", ignore=shutil.ignore_patterns("__pycache__", "data"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, source / name)
    # --ignore-installed: with --prefix alone pip first uninstalls the placement this interpreter has installed
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--ignore-installed",
            "--prefix",
            tmp_path / "prefix",
            "-e",
            source,
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": call["warnings"]},
    )
    assert done.returncode == 0, done.stderr
    assert "*****" not in done.stderr and "!!" not in done.stderr, done.stderr
    assert installed_placement() == before  # the test's own environment untouched


# the playbooks ship ---------------------------------------------------------------------------------------------------


def test_the_help_says_where_the_playbooks_are(capsys):
    code, out, _ = run(["inventory", "ansible", "--help"], capsys)
    assert code == 0 and "does not carry" not in out
    assert "placement examples --copy DIR" in " ".join(out.split()) and "cd ex/ansible" in out
    code, out, _ = run(["examples"], capsys)
    assert code == 0 and "site.yml" in out
