"""gate.github driven through the real github3.py client against a local GitHub REST server,
and gate.actions against temporary Actions files."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from gate import actions
from gate.github import (
    MARKER,
    GitHubConfigError,
    GitHubPublishError,
    GitHubTarget,
    publish,
    resolve_target,
    target_from_env,
)
from tests.github_server import ACTIONS_BOT, FakeGitHub

REPO = "medgate-org/medgate"
PR = 7
HEAD_SHA = "a" * 40
TOKEN = "ghp_test"
COMMENTS = r"/repos/medgate-org/medgate/issues/7/comments"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub().running() as fake:
        fake.add_repo(REPO)
        fake.add_pull_request(REPO, PR)
        yield fake


def _target(fake: FakeGitHub, **overrides: object) -> GitHubTarget:
    fields: dict[str, object] = {
        "repo": REPO,
        "sha": HEAD_SHA,
        "pr_number": PR,
        "api_url": fake.api_url,
        "token": TOKEN,
    }
    fields.update(overrides)
    return GitHubTarget(**fields)  # type: ignore[arg-type]


def _marked(fake: FakeGitHub) -> list[dict]:
    return [c for c in fake.comments(REPO, PR) if c["body"].startswith(MARKER)]


# ---- publish: comment and commit status -----------------------------------------------------


def test_second_run_updates_the_one_comment_in_place_and_sets_a_new_status(github):
    first = publish(
        _target(github),
        passed=False,
        title="medgate: FAIL (2 reasons)",
        body_markdown="## medgate\nrun 1: VALID-LEAK-PATIENT",
        details_url="https://ci.example/run/1",
    )
    second = publish(
        _target(github),
        passed=True,
        title="medgate: PASS",
        body_markdown="## medgate\nrun 2: all stages judged",
    )

    assert first.comment_action == "created"
    assert second.comment_action == "updated"
    assert second.comment_id == first.comment_id
    marked = _marked(github)
    assert len(marked) == 1
    assert marked[0]["body"] == f"{MARKER}\n## medgate\nrun 2: all stages judged"
    assert len(github.requests_to("POST", COMMENTS)) == 1
    edits = github.requests_to("PATCH", rf"/repos/{REPO}/issues/comments/{first.comment_id}")
    assert [e.json for e in edits] == [{"body": marked[0]["body"]}]

    status_posts = github.requests_to("POST", rf"/repos/{REPO}/statuses/{HEAD_SHA}")
    assert [p.json for p in status_posts] == [
        {
            "state": "failure",
            "description": "medgate: FAIL (2 reasons)",
            "target_url": "https://ci.example/run/1",
            "context": "medgate",
        },
        {"state": "success", "description": "medgate: PASS", "context": "medgate"},
    ]
    assert second.status_id == github.statuses(REPO)[-1]["id"]
    assert all(r.headers["Authorization"] == f"token {TOKEN}" for r in github.requests)
    assert not github.check_runs(REPO)


def test_existing_report_beyond_the_first_pages_is_found_and_edited():
    with FakeGitHub(max_per_page=10).running() as fake:
        fake.add_repo(REPO)
        fake.add_pull_request(REPO, PR)
        for i in range(34):
            fake.add_comment(REPO, PR, f"review comment {i}")
        old_id = fake.add_comment(REPO, PR, f"{MARKER}\nold report", login=ACTIONS_BOT)

        result = publish(
            _target(fake), passed=True, title="medgate: PASS", body_markdown="new report"
        )

        assert result.comment_action == "updated"
        assert result.comment_id == old_id
        assert len(fake.comments(REPO, PR)) == 35
        assert _marked(fake)[0]["body"] == f"{MARKER}\nnew report"
        pages = [r.query.get("page", "1") for r in fake.requests_to("GET", COMMENTS)]
        assert pages == ["1", "2", "3", "4"]
        assert not fake.requests_to("POST", COMMENTS)


def test_quoted_marker_in_someone_elses_comment_is_not_taken_for_the_report(github):
    github.add_comment(REPO, PR, f"> {MARKER}\n> the gate said fail, why?")
    result = publish(_target(github), passed=True, title="ok", body_markdown="report")
    assert result.comment_action == "created"
    assert len(github.comments(REPO, PR)) == 2


def test_long_title_and_body_are_clipped_to_github_limits(github):
    publish(_target(github), passed=False, title="x" * 500, body_markdown="y" * 70000)
    status = github.statuses(REPO)[0]
    assert len(status["description"]) == 140
    assert len(_marked(github)[0]["body"]) == 65536
    assert _marked(github)[0]["body"].endswith("(truncated by medgate)")


def test_no_pull_request_sets_only_the_status(github):
    result = publish(
        _target(github, pr_number=None),
        passed=True,
        title="release gate: PASS",
        body_markdown="report",
    )
    assert result.comment_id is None
    assert result.status_id is not None
    assert not github.requests_to("GET", COMMENTS)


def test_enterprise_server_base_url():
    with FakeGitHub(prefix="/api/v3").running() as fake:
        fake.add_repo(REPO)
        fake.add_pull_request(REPO, PR)
        assert fake.api_url.endswith("/api/v3")

        result = publish(_target(fake), passed=True, title="medgate: PASS", body_markdown="r")

        assert result.comment_action == "created"
        assert len(fake.statuses(REPO)) == 1
        assert fake.requests  # every one arrived under /api/v3, or the fake would 404


def test_bad_token_raises_a_publish_error_naming_the_cause(github):
    with pytest.raises(GitHubPublishError, match=r"401 .*Bad credentials.*invalid or expired"):
        publish(_target(github, token="ghp_wrong"), passed=True, title="t", body_markdown="b")


def test_unreachable_server_raises_a_publish_error():
    with FakeGitHub().running() as fake:
        api_url = fake.api_url
    with pytest.raises(GitHubPublishError, match="could not reach"):
        publish(
            GitHubTarget(repo=REPO, sha=HEAD_SHA, pr_number=PR, api_url=api_url, token=TOKEN),
            passed=True,
            title="t",
            body_markdown="b",
        )


# ---- publish: GitHub App → check run --------------------------------------------------------


@pytest.fixture
def app_key() -> tuple[str, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


def test_app_credentials_create_a_check_run_instead_of_a_status(app_key):
    private, public = app_key
    with FakeGitHub(app_id=4242, app_public_key_pem=public, installation_id=99).running() as fake:
        fake.add_repo(REPO)
        fake.add_pull_request(REPO, PR)
        target = _target(
            fake, token=None, app_id="4242", app_private_key=private, installation_id="99"
        )

        result = publish(
            target,
            passed=False,
            title="medgate: FAIL",
            body_markdown="z" * 70000,
            details_url="https://ci.example/run/3",
        )

        token_requests = fake.requests_to("POST", r"/app/installations/99/access_tokens")
        assert len(token_requests) == 1
        assert token_requests[0].headers["Authorization"].startswith("Bearer ")
        run = fake.check_runs(REPO)[0]
        assert result.check_run_id == run["id"]
        assert result.status_id is None and not fake.statuses(REPO)
        assert (run["name"], run["head_sha"], run["status"], run["conclusion"]) == (
            "medgate",
            HEAD_SHA,
            "completed",
            "failure",
        )
        assert run["details_url"] == "https://ci.example/run/3"
        assert len(run["output"]["text"]) == 65535
        assert run["output"]["title"] == "medgate: FAIL"
        # the comment is posted with the installation token, as the app's bot
        assert _marked(fake)[0]["user"]["login"] == "medgate-app[bot]"


def test_a_key_that_is_not_pem_is_a_config_error(github):
    target = _target(
        github, token=None, app_id="1", app_private_key="not a key", installation_id="2"
    )
    with pytest.raises(GitHubConfigError, match="MEDGATE_GITHUB_APP_PRIVATE_KEY"):
        publish(target, passed=True, title="t", body_markdown="b")


# ---- target_from_env ------------------------------------------------------------------------


def _event(tmp_path: Path, payload: dict) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return str(path)


def test_pull_request_event_gives_the_pr_and_its_head_sha(tmp_path):
    head = "b" * 40
    env = {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_SHA": "c" * 40,
        "GITHUB_API_URL": "https://ghe.example.com/api/v3",
        "GITHUB_EVENT_PATH": _event(
            tmp_path,
            {
                "action": "synchronize",
                "number": 12,
                "pull_request": {"number": 12, "head": {"sha": head}},
            },
        ),
    }
    target = target_from_env(env)
    assert target == GitHubTarget(
        repo=REPO, sha=head, pr_number=12, api_url="https://ghe.example.com/api/v3", token=TOKEN
    )
    assert target_from_env(env, repo="other/repo", pr=3, sha="d" * 40) == GitHubTarget(
        repo="other/repo",
        sha="d" * 40,
        pr_number=3,
        api_url="https://ghe.example.com/api/v3",
        token=TOKEN,
    )


def test_push_event_uses_github_sha_and_no_pr(tmp_path):
    env = {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_SHA": "c" * 40,
        "GITHUB_EVENT_PATH": _event(tmp_path, {"ref": "refs/heads/main"}),
    }
    target = target_from_env(env)
    assert target is not None
    assert (target.sha, target.pr_number, target.api_url) == (
        "c" * 40,
        None,
        "https://api.github.com",
    )


def test_no_token_skips_with_a_reason():
    env = {"GITHUB_REPOSITORY": REPO, "GITHUB_SHA": "c" * 40}
    assert target_from_env(env) is None
    target, reason = resolve_target(env)
    assert target is None and "GITHUB_TOKEN is not set" in reason


def test_no_repository_skips_with_a_reason():
    target, reason = resolve_target({"GITHUB_TOKEN": TOKEN, "GITHUB_SHA": "c" * 40})
    assert target is None and "--repo" in reason


def test_app_credentials_from_a_key_file(tmp_path, app_key):
    key_file = tmp_path / "app.pem"
    key_file.write_text(app_key[0], encoding="utf-8")
    env = {
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_SHA": "c" * 40,
        "MEDGATE_GITHUB_APP_ID": "5",
        "MEDGATE_GITHUB_APP_PRIVATE_KEY_FILE": str(key_file),
        "MEDGATE_GITHUB_INSTALLATION_ID": "6",
    }
    target = target_from_env(env)
    assert target is not None and target.uses_app
    assert target.app_private_key == app_key[0].strip()


@pytest.mark.parametrize(
    ("env", "match"),
    [
        (
            {"MEDGATE_GITHUB_APP_ID": "5"},
            "MEDGATE_GITHUB_APP_PRIVATE_KEY, MEDGATE_GITHUB_INSTALLATION_ID",
        ),
        (
            {
                "MEDGATE_GITHUB_APP_ID": "five",
                "MEDGATE_GITHUB_APP_PRIVATE_KEY": "k",
                "MEDGATE_GITHUB_INSTALLATION_ID": "6",
            },
            "MEDGATE_GITHUB_APP_ID='five'",
        ),
        (
            {"MEDGATE_GITHUB_APP_PRIVATE_KEY_FILE": "/nonexistent/app.pem"},
            "MEDGATE_GITHUB_APP_PRIVATE_KEY_FILE=/nonexistent/app.pem",
        ),
        ({"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": "no-slash"}, "owner/name"),
        (
            {
                "GITHUB_TOKEN": TOKEN,
                "GITHUB_REPOSITORY": REPO,
                "GITHUB_EVENT_PATH": "/nonexistent/e",
            },
            "GITHUB_EVENT_PATH=/nonexistent/e",
        ),
    ],
)
def test_bad_settings_name_what_to_fix(env, match):
    with pytest.raises(GitHubConfigError, match=match):
        target_from_env(env)


def test_malformed_event_file_names_the_file(tmp_path):
    path = tmp_path / "event.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(GitHubConfigError, match=f"GITHUB_EVENT_PATH={path}: not JSON"):
        target_from_env(
            {"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": REPO, "GITHUB_EVENT_PATH": str(path)}
        )


# ---- gate.actions ---------------------------------------------------------------------------


def test_step_summary_appends_and_is_skipped_outside_actions(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    assert actions.write_step_summary("## medgate\nPASS", env)
    assert summary.read_text(encoding="utf-8") == "earlier step\n## medgate\nPASS\n"
    assert not actions.write_step_summary("x", {})


def test_output_single_and_multiline(tmp_path):
    out = tmp_path / "output"
    env = {"GITHUB_OUTPUT": str(out)}
    assert actions.set_output("verdict", "pass", env)
    assert actions.set_output("reasons", "one\ntwo", env)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "verdict=pass"
    name, delimiter = lines[1].split("<<")
    assert name == "reasons" and delimiter.startswith("ghadelimiter_")
    assert lines[2:] == ["one", "two", delimiter]
    assert not actions.set_output("verdict", "pass", {})
    with pytest.raises(ValueError, match="output name"):
        actions.set_output("bad=name", "x", env)


def test_annotations_escape_percent_and_newlines():
    stream = io.StringIO()
    actions.annotate_errors(["VALID-LEAK-PATIENT: 100% of\r\npatients", "plain"], stream)
    assert stream.getvalue().splitlines() == [
        "::error title=medgate::VALID-LEAK-PATIENT: 100%25 of%0D%0Apatients",
        "::error title=medgate::plain",
    ]
    assert actions.escape_property("a:b,c") == "a%3Ab%2Cc"


def test_undecided_verdict_sets_an_error_status(github):
    publish(_target(github), passed=False, undecided=True, title="medgate: COULD NOT DECIDE",
            body_markdown="no runs")
    assert [s["state"] for s in github.statuses(REPO)] == ["error"]


def test_a_comment_that_cannot_be_edited_does_not_stop_the_status(github):
    github.add_comment(REPO, PR, f"{MARKER}\nforged PASS", login="someone-else")
    with pytest.raises(GitHubPublishError, match="403"):
        publish(_target(github), passed=False, title="medgate: FAIL", body_markdown="report")
    assert [s["state"] for s in github.statuses(REPO)] == ["failure"]
