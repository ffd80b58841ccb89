"""The GitHub Actions workflows pass actionlint, and actionlint here really catches mistakes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW_FILES = [WORKFLOWS / "pr.yml", WORKFLOWS / "release.yml"]


def _actionlint() -> Path:
    candidates = [Path(sys.executable).parent / "actionlint", ROOT / ".venv" / "bin" / "actionlint"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    pytest.fail(
        "actionlint is not installed (looked in "
        + ", ".join(str(c) for c in candidates)
        + "): run scripts/install-actionlint.sh"
    )


def _lint(*files: Path) -> subprocess.CompletedProcess[str]:
    # shellcheck and pyflakes are left out so the verdict does not depend on which of them
    # happen to be on a machine's PATH.
    return subprocess.run(
        [str(_actionlint()), "-no-color", "-shellcheck=", "-pyflakes=", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_workflows_pass_actionlint():
    for path in WORKFLOW_FILES:
        assert path.is_file(), f"missing workflow {path}"
    result = _lint(*WORKFLOW_FILES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_rejects_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: pull_request\n"
        "permissions:\n"
        "  pull-requests: wirte\n"
        "jobs:\n"
        "  gate:\n"
        "    runs-on: ubuntu-latest\n"
        "    needs: [missing]\n"
        "    steps:\n"
        "      - run: echo ${{ steps.nope.outputs.verdict }}\n",
        encoding="utf-8",
    )
    result = _lint(broken)
    assert result.returncode == 1, result.stdout + result.stderr
    assert '"wirte" is invalid' in result.stdout
    assert "[job-needs]" in result.stdout
    assert "[expression]" in result.stdout


def test_gate_steps_run_the_project_commands():
    """The workflows call the commands the Makefile and CLI define, with the right policy."""
    pr = yaml.safe_load((WORKFLOWS / "pr.yml").read_text(encoding="utf-8"))
    release = yaml.safe_load((WORKFLOWS / "release.yml").read_text(encoding="utf-8"))
    pr_runs = [s.get("run", "") for s in pr["jobs"]["gate"]["steps"]]
    release_runs = [s.get("run", "") for s in release["jobs"]["gate"]["steps"]]
    assert "make venv" in pr_runs and "make venv" in release_runs
    assert any("medgate run -m tier=lite" in r for r in pr_runs)
    assert any("medgate gate policy=pr" in r for r in pr_runs)
    assert any("tier=standard" in r and "tracking=server" in r for r in release_runs)
    assert any("medgate gate policy=release" in r for r in release_runs)
    # PyYAML reads the bare key `on` as True.
    assert set(release[True]) == {"release", "workflow_dispatch"}
    assert pr["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "statuses": "write",
    }
