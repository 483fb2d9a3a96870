"""Strict mode (tests/support/real_parts.py) for real: pytest runs in a subprocess on a tiny test file whose real part
is missing — a PATH without a JDK, a namespace probe that failed, a bare skip — once with the switch on and once off.
On: the run fails and names the part. Off: the same tests skip. Allowed kernel-level skips skip in both modes and are
listed in the summary."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from support.real_parts import ENV

TESTS = Path(__file__).resolve().parents[1]

TINY = """
import pytest
from support import real_parts
from support.flink import lab_jobs_jar  # the fixture every Flink test uses; it needs java, javac and jar


def test_needs_the_jdk(lab_jobs_jar):
    assert lab_jobs_jar.is_file()


@real_parts.needs("cannot create a network namespace: Operation not permitted")
def test_needs_namespaces():
    pass


def test_bare_skip():
    pytest.skip("someone skipped by hand")


def test_kernel_fact():
    real_parts.kernel_fact("no-sch-netem", "tc: Specified qdisc kind is unknown")


def test_unknown_fact():
    real_parts.kernel_fact("no-such-fact")
"""


def run_tiny(tmp_path: Path, *, strict: str | None, options: tuple[str, ...] = (), source: str = TINY):
    test_file = tmp_path / "test_tiny.py"
    test_file.write_text(source)
    no_jdk = tmp_path / "empty-bin"  # a PATH without java, javac and jar, for real
    no_jdk.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env |= {"PATH": str(no_jdk), "PYTHONPATH": str(TESTS)}
    if strict is not None:
        env[ENV] = strict
    report = tmp_path / "report.xml"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "support.real_parts",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rs",
            "--rootdir",
            str(tmp_path),
            f"--junitxml={report}",
            *options,
            str(test_file),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    outcomes = {}  # test name (without test_) -> passed | failure | error | skipped, from the JUnit report
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[case.get("name", "").removeprefix("test_")] = kinds[0] if kinds else "passed"
    return proc, outcomes


@pytest.mark.parametrize("how", ["env", "option"])
def test_strict_mode_fails_every_missing_part_and_keeps_allowed_kernel_facts(tmp_path, how):
    proc, outcomes = run_tiny(
        tmp_path, strict="1" if how == "env" else None, options=("--strict-real",) if how == "option" else ()
    )
    assert proc.returncode == 1, proc.stdout[-3000:]
    # a part missing at set-up (a fixture, a mark) is an error, one missing inside the test a failure
    assert outcomes == {
        "needs_the_jdk": "error",
        "needs_namespaces": "error",
        "bare_skip": "failure",
        "kernel_fact": "skipped",
        "unknown_fact": "failure",
    }, proc.stdout[-3000:]
    assert (
        "real part missing (strict mode, PLACEMENT_STRICT=1): needs a JDK 17 (java, javac, jar not found on PATH)"
        in proc.stdout
    )
    assert "cannot create a network namespace" in proc.stdout
    assert (
        "skipped without an allowed kernel-level reason (strict mode, PLACEMENT_STRICT=1): someone skipped by hand"
        in proc.stdout
    )
    assert "'no-such-fact' is not an allowed kernel-level skip" in proc.stdout
    summary = proc.stdout[proc.stdout.index("real parts") :]
    assert "strict mode (PLACEMENT_STRICT=1 / --strict-real): ON" in summary
    assert "no-sch-netem: 1 test(s) skipped" in summary and "test_tiny.py::test_kernel_fact" in summary
    assert "has-sch-netem: 0 test(s) skipped" in summary


def test_without_the_switch_missing_parts_skip(tmp_path):
    proc, outcomes = run_tiny(tmp_path, strict=None)
    assert proc.returncode == 1, proc.stdout[-3000:]  # only the unknown kernel fact fails: it is a bug in the test
    assert outcomes == {
        "needs_the_jdk": "skipped",
        "needs_namespaces": "skipped",
        "bare_skip": "skipped",
        "kernel_fact": "skipped",
        "unknown_fact": "failure",
    }, proc.stdout[-3000:]
    assert "needs a JDK 17 (java, javac, jar not found on PATH) (a failure under PLACEMENT_STRICT=1)" in proc.stdout
    summary = proc.stdout[proc.stdout.index("real parts") :]
    assert "strict mode (PLACEMENT_STRICT=1 / --strict-real): off" in summary
    assert "no-sch-netem: 1 test(s) skipped" in summary
    assert "3 other skip(s) for missing real parts: each is a failure under PLACEMENT_STRICT=1" in summary


def test_a_module_skipped_at_collection_fails_in_strict_mode(tmp_path):
    source = 'import pytest\npytest.importorskip("no_such_module_for_placement")\n\ndef test_module_skip():\n    pass\n'
    strict, _ = run_tiny(tmp_path, strict="1", source=source)
    assert strict.returncode != 0 and "module skipped without an allowed kernel-level reason" in strict.stdout
    relaxed, _ = run_tiny(tmp_path, strict="0", source=source)
    assert relaxed.returncode == pytest.ExitCode.NO_TESTS_COLLECTED and "1 skipped" in relaxed.stdout
