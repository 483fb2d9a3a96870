"""The package installs like one: build a wheel from this checkout, install it (not editable) into a fresh venv
outside the checkout, and run the installed ``placement`` from another directory.

The fresh venv gets only the wheel (``--no-deps``, no index). Its dependencies (PySpark alone is ~300 MB) come from
the test venv through a plain path entry in a ``.pth`` file: a path entry, not a site directory, so the test venv's
own ``.pth`` files — among them the editable install's finder that maps ``placement`` to this checkout — are not
run. Every ``placement`` import in the fresh venv is the wheel's (asserted), and nothing points into the checkout:
no ``PLACEMENT_*`` variables, no ``PYTHONPATH``, a working directory elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from placement.resources import SHIPPED
from support.sources import NOT_SOURCE_PATTERNS

REPO = Path(__file__).resolve().parents[2]
PY = Path(sys.executable)
# What a working tree holds beside the sources (and every dot-file): the clean clone CI builds from has none of it.
NOT_SOURCES = shutil.ignore_patterns(*NOT_SOURCE_PATTERNS, ".*")

pytestmark = pytest.mark.packaging


def _run(argv, *, cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _clean_env(venv: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PLACEMENT_SPARK_CLASS_ARCHIVE"] = "0"  # the one PLACEMENT_ variable kept: no class archive in tests
    return env


class Installed:
    def __init__(self, root: Path, wheel: Path, venv: Path):
        self.root, self.wheel, self.venv = root, wheel, venv
        self.elsewhere = root / "elsewhere"  # the working directory: neither the checkout nor the venv
        self.elsewhere.mkdir(exist_ok=True)
        self.env = _clean_env(venv)

    def placement(self, *args, **kw) -> subprocess.CompletedProcess:
        return _run([self.venv / "bin" / "placement", *args], cwd=self.elsewhere, env=self.env, **kw)

    def python(self, code: str) -> str:
        done = _run([self.venv / "bin" / "python", "-c", code], cwd=self.elsewhere, env=self.env)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def data(self) -> Path:
        return Path(self.python("from placement.resources import PACKAGE_DATA; print(PACKAGE_DATA)"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"  # a copy: building writes build/ and *.egg-info, which must not land in the checkout
    shutil.copytree(REPO, source, ignore=NOT_SOURCES)
    done = _run(
        [
            PY,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            root / "dist",
            source,
        ],
        cwd=root,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = (root / "dist").glob("placement-*.whl")
    venv = root / "venv"
    done = _run([PY, "-m", "venv", "--without-pip", venv], cwd=root, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    done = _run(
        [PY, "-m", "pip", "--python", venv / "bin" / "python", "install", "--no-deps", "--no-index", "-q", wheel],
        cwd=root,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    fresh_site = Path(
        _run(
            [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=root,
            env=dict(os.environ),
        ).stdout.strip()
    )
    (fresh_site / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return Installed(root, wheel, venv)


def test_installed_placement_is_the_wheel_not_the_checkout(installed):
    where = Path(installed.python("import placement, placement.cli; print(placement.__file__)"))
    assert where.is_relative_to(installed.venv) and not where.is_relative_to(REPO)
    assert installed.data().is_relative_to(installed.venv)


def test_wheel_marks_the_package_typed(installed):
    assert "placement/py.typed" in zipfile.ZipFile(installed.wheel).namelist()  # PEP 561: mypy reads our annotations
    assert (Path(installed.python("import placement; print(placement.__file__)")).parent / "py.typed").is_file()


def test_console_script_runs_from_another_directory(installed):
    done = installed.placement("plan", "--help")
    assert done.returncode == 0, done.stderr
    assert "--inventory" in done.stdout and "Traceback" not in done.stderr
    done = installed.placement("--help")
    assert done.returncode == 0 and all(c in done.stdout for c in ("plan", "netem", "apply", "examples"))


def test_wheel_ships_every_repository_folder_as_it_is_in_the_checkout(installed):
    data = installed.data()
    for name in SHIPPED:
        ours, theirs = _files(REPO / name), _files(data / name)
        assert ours, f"{name}/ is empty in the checkout"
        assert theirs == ours, name
        for rel in ours:
            assert (data / name / rel).read_bytes() == (REPO / name / rel).read_bytes(), rel


def _files(top: Path) -> list[str]:
    """Files under ``top`` (relative), leaving out what NOT_SOURCES leaves out."""
    out = []
    for folder, dirs, names in os.walk(top):
        skip = NOT_SOURCES(folder, dirs + names)
        dirs[:] = [d for d in dirs if d not in skip]
        out += [str(Path(folder, n).relative_to(top)) for n in names if n not in skip]
    return sorted(out)


def test_netem_finds_its_profiles(installed):
    inventory = installed.data() / "inventory" / "edge-lab.yaml"
    done = installed.placement("netem", "apply", "--inventory", inventory, "--profile", "lte", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("htb rate 20mbit") == 3 and "delay 35ms 10ms" in done.stdout  # netem/lte.yaml's figures
    done = installed.placement("netem", "apply", "--inventory", inventory, "--profile", "nope", "--dry-run")
    assert done.returncode == 2 and "known: 3g, constrained-5mbit, lte" in done.stderr


def test_plan_on_a_shipped_example_writes_every_artifact(installed):
    out = installed.elsewhere / "plan"
    listing = installed.placement("examples")
    assert listing.returncode == 0, listing.stderr
    data = installed.data()
    assert str(data / "inventory") in listing.stdout and "edge-lab.yaml" in listing.stdout
    done = installed.placement(
        "plan",
        "--inventory",
        data / "inventory" / "edge-lab.yaml",
        "--profile",
        data / "examples" / "profiles" / "iot-sensors.json",
        "--out",
        out,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the solver says nothing unless asked (HiGHS >= 1.16 prints a banner when made)
    assert json.loads(done.stdout)["results"][0]["status"] == "optimal"  # stdout is the JSON alone
    redeploy = (out / "redeploy.sh").read_text()  # rendered from deploy/templates/redeploy.sh.tmpl
    assert redeploy.startswith("#!") and "savepoint" in redeploy
    assert (out / "plan.json").stat().st_size > 0 and (out / "schedulercfg").stat().st_size > 0


def test_examples_copy_gives_editable_inputs(installed):
    target = installed.elsewhere / "my-examples"
    done = installed.placement("examples", "--copy", target)
    assert done.returncode == 0, done.stderr
    assert (target / "inventory" / "edge-lab.yaml").read_bytes() == (REPO / "inventory" / "edge-lab.yaml").read_bytes()
    assert (target / "examples" / "profiles" / "iot-sensors.json").is_file()
    again = installed.placement("examples", "--copy", target)  # never overwrites what the user may have edited
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "exists" in again.stderr


def test_the_ansible_playbooks_ship_and_copy_beside_the_inventories(installed):
    """An installed package provisions hosts: its playbooks are listed, copied with the inventories, and the exported
    inventory goes beside them (where `cd DIR/ansible && ansible-playbook -i hosts.yml site.yml` runs)."""
    data = installed.data()
    for name in ("site.yml", "stop.yml", "netem.yml", "ansible.cfg", "roles/flink/tasks/main.yml"):
        assert (data / "ansible" / name).is_file(), name
    listing = installed.placement("examples")
    assert listing.returncode == 0 and str(data / "ansible") in listing.stdout and "site.yml" in listing.stdout
    target = installed.elsewhere / "with-playbooks"
    done = installed.placement("examples", "--copy", target)
    assert done.returncode == 0, done.stderr
    assert (target / "ansible" / "site.yml").read_bytes() == (REPO / "ansible" / "site.yml").read_bytes()
    done = installed.placement(
        "inventory", "ansible", target / "inventory" / "edge-lab.yaml", "--out", target / "ansible" / "hosts.yml"
    )
    assert done.returncode == 0, done.stderr
    assert (target / "ansible" / "hosts.yml").is_file()


def test_java_sources_of_the_lab_jobs_and_the_scheduler_are_found(installed):
    found = json.loads(
        installed.python(
            "import json; from placement.lab.jobs import JOBS_DIR; from placement.scheduler.build import SOURCES_DIR;"
            "from placement.flink.javabuild import source_files;"
            "print(json.dumps({'jobs': [str(p) for p in source_files(JOBS_DIR / 'src')],"
            " 'scheduler': [str(p) for p in source_files(SOURCES_DIR)]}))"
        )
    )
    for name, checkout in (("jobs", REPO / "deploy" / "jobs" / "src"), ("scheduler", REPO / "scheduler" / "src")):
        expected = sorted(p.name for p in checkout.rglob("*.java"))
        assert expected, f"no Java sources under {checkout}"
        assert sorted(Path(p).name for p in found[name]) == expected
        assert all(Path(p).is_relative_to(installed.venv) for p in found[name])
