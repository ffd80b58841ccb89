"""`medgate gate` as CI runs it: GitHub Actions files, the pull-request comment and status on a
local GitHub server driven by github3.py, baselines promoted and compared, a real MLflow server."""

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import medgate
from tests.github_server import FakeGitHub

pytestmark = pytest.mark.e2e
REPO, PR, HEAD = "medgate-org/medgate", 7, "b" * 40
CRASH = ["task=seg_phantom_tiny", "agent=crasher", "budget=ci"]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory) -> Path:
    """A work folder with two logged crasher runs (cheap: the agent fails in a second)."""
    wd = tmp_path_factory.mktemp("gate")
    for seed in ("0", "1"):
        proc = medgate(wd, "run", *CRASH, f"seed={seed}")
        assert proc.returncode == 0, proc.stderr
    return wd


def _actions_env(tmp: Path, fake: FakeGitHub) -> dict[str, str]:
    event = tmp / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR, "head": {"sha": HEAD}}}))
    return {"GITHUB_ACTIONS": "true", "GITHUB_TOKEN": "ghp_test", "GITHUB_REPOSITORY": REPO,
            "GITHUB_EVENT_PATH": str(event), "GITHUB_SHA": "c" * 40,
            "GITHUB_API_URL": fake.api_url, "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
            "GITHUB_OUTPUT": str(tmp / "output.txt")}


def test_pull_request_comment_is_updated_in_place_and_status_set(crashed, tmp_path):
    with FakeGitHub().running() as fake:
        fake.add_repo(REPO)
        fake.add_pull_request(REPO, PR)
        env = _actions_env(tmp_path, fake)
        first = medgate(crashed, "gate", "--report", str(tmp_path / "r.md"), env=env)
        assert first.returncode == 1, first.stdout + first.stderr
        assert "::error title=medgate::" in first.stdout
        assert "RUN-CRASH" in (tmp_path / "summary.md").read_text()
        assert "verdict=fail" in (tmp_path / "output.txt").read_text()
        comments = fake.comments(REPO, PR)
        assert len(comments) == 1 and "RUN-CRASH" in comments[0]["body"]
        first_id, first_body = comments[0]["id"], comments[0]["body"]
        statuses = fake.statuses(REPO)
        assert [(s["context"], s["state"], s["sha"]) for s in statuses] == \
            [("medgate", "failure", HEAD)]

        second = medgate(crashed, "gate", "policy=pr", env=env)
        assert second.returncode == 1
        comments_after = fake.comments(REPO, PR)
        assert len(comments_after) == 1
        assert comments_after[0]["id"] == first_id
        assert comments_after[0]["body"] != first_body
        assert "policy `pr`" in comments_after[0]["body"]
        assert len(fake.requests_to("PATCH", rf"/repos/{REPO}/issues/comments/{first_id}")) == 1
        assert len(fake.statuses(REPO)) == 2


def test_without_a_token_the_report_is_skipped_with_a_notice(crashed, tmp_path):
    proc = medgate(crashed, "gate", env={"GITHUB_TOKEN": "", "GITHUB_REPOSITORY": REPO})
    assert proc.returncode == 1
    assert "notice: GITHUB_TOKEN is not set" in proc.stdout


def test_markdown_report_names_stage_code_and_fix(crashed, tmp_path):
    proc = medgate(crashed, "gate", "--report", str(tmp_path / "report.md"))
    assert proc.returncode == 1
    text = (tmp_path / "report.md").read_text()
    assert text.startswith("## ❌ medgate: FAIL")
    assert "`RUN-CRASH`" in text and "stderr log" in text  # the code and its fix
    assert "S3 Validate" in text
    assert (tmp_path / "report.stages.png").stat().st_size > 1000


def test_promoted_baseline_is_compared_and_release_needs_one(crashed, tmp_path):
    no_base = medgate(crashed, "gate", "policy=release", "tier=standard")
    assert no_base.returncode == 1  # critical codes decide before the missing baseline
    assert "no baseline" in no_base.stdout
    wd = tmp_path
    run = medgate(wd, "run", *CRASH)
    assert run.returncode == 0
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{wd}/mlflow.db")
    exp = client.get_experiment_by_name("medgate").experiment_id
    (parent,) = client.search_runs([exp], "tags.`medgate.kind` = 'parent'")
    promoted = medgate(wd, "baseline", "promote", parent.info.run_id)
    assert promoted.returncode == 0, promoted.stderr
    assert client.get_run(parent.info.run_id).data.tags["medgate.baseline"] == "true"
    again = medgate(wd, "run", *CRASH)
    assert again.returncode == 0
    gate = medgate(wd, "gate", "policy=pr")
    assert gate.returncode == 1
    assert "delta vs baseline +0.000" in gate.stdout
    assert "no baseline" not in gate.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_runs_logged_to_a_real_mlflow_server_are_judged(tmp_path):
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", f"sqlite:///{tmp_path}/server.db",
         "--artifacts-destination", str(tmp_path / "artifacts"), "--workers", "1"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        env = {"MLFLOW_TRACKING_URI": url}
        work = tmp_path / "work"
        work.mkdir()
        run = medgate(work, "run", *CRASH, "tracking=server", env=env)
        assert run.returncode == 0, run.stderr
        assert not (work / "mlflow.db").exists()
        gate = medgate(work, "gate", "tracking=server", env=env)
        assert gate.returncode == 1, gate.stdout + gate.stderr
        assert "RUN-CRASH" in gate.stdout and f"--backend-store-uri {url}" in gate.stdout
    finally:
        server.terminate()
        server.wait(timeout=30)
