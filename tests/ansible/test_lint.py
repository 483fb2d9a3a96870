"""The playbooks parse (`ansible-playbook --syntax-check`) and pass ansible-lint's production profile."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from ansible_support import ANSIBLE_DIR, VENV_BIN, require_tool

PLAYBOOKS = ["site.yml", "stop.yml", "netem.yml"]

pytestmark = pytest.mark.ansible


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"),
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "NO_COLOR": "1",
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_syntax_check(playbook: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [require_tool("ansible-playbook"), "--syntax-check", "-i", "localhost,", playbook],
        cwd=ANSIBLE_DIR,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"playbook: {playbook}" in proc.stdout


def test_ansible_lint_production_profile_is_clean(tmp_path: Path) -> None:
    lint = require_tool("ansible-lint")
    # .ansible-lint in ansible/ selects the production profile; say it again so a changed config cannot weaken it
    proc = subprocess.run(
        [lint, "--profile", "production", "--offline", "--nocolor", "--strict"],
        cwd=ANSIBLE_DIR,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report
    assert "0 failure(s), 0 warning(s)" in report
    assert "Profile 'production' was required, and it passed" in report
