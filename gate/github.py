"""Publish a verdict to GitHub: one pull-request comment kept up to date, and a commit status.

The only module that imports github3.py. With GitHub App credentials the verdict becomes a check
run instead of a commit status, because github3 allows check runs only under app installation
auth (a plain token, including the ``GITHUB_TOKEN`` of Actions, is refused).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import github3
import jwt
import requests
from github3.exceptions import GitHubError, GitHubException, TransportError
from github3.repos.repo import Repository

MARKER = "<!-- medgate:report -->"
CONTEXT = "medgate"
DEFAULT_API_URL = "https://api.github.com"

# GitHub's own limits; past them the API answers 422 and nothing is published.
COMMENT_LIMIT = 65536
CHECK_OUTPUT_LIMIT = 65535
STATUS_DESCRIPTION_LIMIT = 140

_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_APP_VARS = (
    "MEDGATE_GITHUB_APP_ID",
    "MEDGATE_GITHUB_APP_PRIVATE_KEY",
    "MEDGATE_GITHUB_INSTALLATION_ID",
)


class GitHubPublishError(Exception):
    """Publishing failed (network, auth, permissions); the CLI reports it as a warning."""


class GitHubConfigError(GitHubPublishError):
    """The GitHub settings are wrong; the message names the variable or file to fix."""


@dataclass(frozen=True)
class GitHubTarget:
    """Where a verdict goes: the repository, the commit, the pull request and the credentials."""

    repo: str  # "owner/name"
    sha: str
    pr_number: int | None = None
    api_url: str = DEFAULT_API_URL
    token: str | None = field(default=None, repr=False)
    app_id: str | None = None
    app_private_key: str | None = field(default=None, repr=False)  # PEM text
    installation_id: str | None = None

    @property
    def uses_app(self) -> bool:
        return bool(self.app_id and self.app_private_key and self.installation_id)


@dataclass(frozen=True)
class PublishResult:
    """What publish() did, for the log line and for tests."""

    comment_id: int | None = None
    comment_action: Literal["created", "updated"] | None = None
    comment_url: str | None = None
    status_id: int | None = None
    check_run_id: int | None = None
    check_run_url: str | None = None

    def summary(self) -> str:
        parts = []
        if self.comment_action:
            parts.append(f"pull-request comment {self.comment_action} ({self.comment_url})")
        if self.status_id is not None:
            parts.append(f"commit status '{CONTEXT}' set")
        if self.check_run_id is not None:
            parts.append(f"check run '{CONTEXT}' created ({self.check_run_url})")
        return "; ".join(parts) or "nothing published"


def target_from_env(
    environ: Mapping[str, str],
    repo: str | None = None,
    pr: int | None = None,
    sha: str | None = None,
) -> GitHubTarget | None:
    """The target described by the Actions environment and explicit flags, or None to skip.

    ``resolve_target`` gives the same answer plus the reason for skipping.
    """
    return resolve_target(environ, repo=repo, pr=pr, sha=sha)[0]


def resolve_target(
    environ: Mapping[str, str],
    repo: str | None = None,
    pr: int | None = None,
    sha: str | None = None,
) -> tuple[GitHubTarget | None, str]:
    """(target, "") when publishing is possible, else (None, a notice saying why it is skipped).

    Explicit arguments win over the environment. For a pull_request event the PR number and its
    head SHA come from the event file: ``GITHUB_SHA`` is then the temporary merge commit, and a
    status on it would not show on the pull request.
    """
    token = environ.get("GITHUB_TOKEN", "").strip() or None
    app_id, app_key, installation_id = _app_credentials(environ)
    if not token and not app_id:
        return None, (
            "GITHUB_TOKEN is not set (nor MEDGATE_GITHUB_APP_*): skipping the "
            "pull-request comment and commit status"
        )
    repo = repo or environ.get("GITHUB_REPOSITORY", "").strip() or None
    if not repo:
        return None, (
            "no repository: set GITHUB_REPOSITORY or pass --repo owner/name; "
            "skipping the pull-request comment and commit status"
        )
    if not _REPO_RE.match(repo):
        raise GitHubConfigError(
            f"repository {repo!r} (GITHUB_REPOSITORY or --repo) is not of the form owner/name"
        )
    event_pr, event_sha = _pull_request_from_event(environ.get("GITHUB_EVENT_PATH", ""))
    sha = sha or event_sha or environ.get("GITHUB_SHA", "").strip() or None
    if not sha:
        return None, (
            "no commit: set GITHUB_SHA or pass --sha; skipping the pull-request "
            "comment and commit status"
        )
    api_url = (environ.get("GITHUB_API_URL", "").strip() or DEFAULT_API_URL).rstrip("/")
    target = GitHubTarget(
        repo=repo,
        sha=sha,
        pr_number=pr if pr is not None else event_pr,
        api_url=api_url,
        token=token,
        app_id=app_id,
        app_private_key=app_key,
        installation_id=installation_id,
    )
    return target, ""


def run_url_from_env(environ: Mapping[str, str]) -> str | None:
    """The web page of the current Actions run: the natural details link of a status."""
    server = environ.get("GITHUB_SERVER_URL", "").rstrip("/")
    repo = environ.get("GITHUB_REPOSITORY", "")
    run_id = environ.get("GITHUB_RUN_ID", "")
    if server and repo and run_id:
        return f"{server}/{repo}/actions/runs/{run_id}"
    return None


def _app_credentials(environ: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    app_id = environ.get("MEDGATE_GITHUB_APP_ID", "").strip() or None
    key = environ.get("MEDGATE_GITHUB_APP_PRIVATE_KEY", "").strip() or None
    key_file = environ.get("MEDGATE_GITHUB_APP_PRIVATE_KEY_FILE", "").strip() or None
    installation_id = environ.get("MEDGATE_GITHUB_INSTALLATION_ID", "").strip() or None
    if key is None and key_file is not None:
        try:
            key = Path(key_file).read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise GitHubConfigError(
                f"MEDGATE_GITHUB_APP_PRIVATE_KEY_FILE={key_file}: cannot "
                f"read the app's private key ({exc.strerror})"
            ) from exc
    given = dict(zip(_APP_VARS, (app_id, key, installation_id), strict=True))
    if not any(given.values()):
        return None, None, None
    missing = [name for name, value in given.items() if not value]
    if missing:
        raise GitHubConfigError(
            "GitHub App credentials are incomplete: set "
            + ", ".join(missing)
            + " (the key may come from "
            "MEDGATE_GITHUB_APP_PRIVATE_KEY_FILE), or unset the others to "
            "use GITHUB_TOKEN"
        )
    for name in ("MEDGATE_GITHUB_APP_ID", "MEDGATE_GITHUB_INSTALLATION_ID"):
        if not str(given[name]).isdigit():
            raise GitHubConfigError(
                f"{name}={given[name]!r} must be the numeric id shown in the app's settings"
            )
    return app_id, key, installation_id


def _pull_request_from_event(event_path: str) -> tuple[int | None, str | None]:
    if not event_path:
        return None, None
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise GitHubConfigError(
            f"GITHUB_EVENT_PATH={event_path}: cannot read the event file ({exc.strerror})"
        ) from exc
    except json.JSONDecodeError as exc:
        raise GitHubConfigError(f"GITHUB_EVENT_PATH={event_path}: not JSON ({exc})") from exc
    pull = event.get("pull_request") if isinstance(event, dict) else None
    if not isinstance(pull, dict):
        return None, None  # push, release, workflow_dispatch: no pull request to comment on
    try:
        return int(pull["number"]), str(pull["head"]["sha"])
    except (KeyError, TypeError, ValueError) as exc:
        raise GitHubConfigError(
            f"GITHUB_EVENT_PATH={event_path}: pull_request has no number or head.sha ({exc!r})"
        ) from exc


def publish(
    target: GitHubTarget,
    *,
    passed: bool,
    undecided: bool = False,
    title: str,
    body_markdown: str,
    details_url: str | None = None,
) -> PublishResult:
    """Upsert the one medgate comment on the pull request and record the verdict on the commit.

    Raises GitHubPublishError on network, auth or permission failures.
    """
    gh = _client(target)
    owner, name = target.repo.split("/", 1)
    with _step(target, f"reading repository {target.repo}"):
        repo = gh.repository(owner, name)
    # The verdict on the commit first: a comment that cannot be edited (someone else's comment
    # carrying the marker, say) must not keep the status from being set.
    result: dict[str, Any] = {}
    if target.uses_app:
        with _step(target, f"creating the check run on {target.sha}"):
            run = repo.create_check_run(
                name=CONTEXT,
                head_sha=target.sha,
                details_url=details_url,
                status="completed",
                conclusion="success" if passed else "failure",
                completed_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                output={
                    "title": _clip(title, CHECK_OUTPUT_LIMIT),
                    "summary": _clip(title, CHECK_OUTPUT_LIMIT),
                    "text": _clip(body_markdown, CHECK_OUTPUT_LIMIT),
                },
            )
        result.update(check_run_id=run.id, check_run_url=run.html_url)
    else:
        with _step(target, f"setting the commit status on {target.sha}"):
            status = repo.create_status(
                target.sha,
                # "error": the gate could not decide, which is neither a pass nor a fail
                "error" if undecided else "success" if passed else "failure",
                target_url=details_url,
                description=_clip(title, STATUS_DESCRIPTION_LIMIT),
                context=CONTEXT,
            )
        result.update(status_id=status.id)
    if target.pr_number is not None:
        with _step(target, f"updating the comment on pull request #{target.pr_number}"):
            result.update(_upsert_comment(repo, target.pr_number, body_markdown))
    return PublishResult(**result)


def _upsert_comment(repo: Repository, pr_number: int, body_markdown: str) -> dict[str, Any]:
    body = _clip(f"{MARKER}\n{body_markdown}", COMMENT_LIMIT)
    issue = repo.issue(pr_number)  # a pull request's conversation is its issue
    # Walk every page: on a busy pull request the report may sit far back.
    for existing in issue.comments():
        if (existing.body or "").lstrip().startswith(MARKER):
            if not existing.edit(body):
                raise GitHubPublishError(f"GitHub did not accept the edit of comment {existing.id}")
            return {
                "comment_id": existing.id,
                "comment_action": "updated",
                "comment_url": existing.html_url,
            }
    created = issue.create_comment(body)
    return {"comment_id": created.id, "comment_action": "created", "comment_url": created.html_url}


def _client(target: GitHubTarget) -> github3.GitHub:
    api_url = target.api_url.rstrip("/")
    if api_url == DEFAULT_API_URL:
        gh = github3.GitHub()
    elif api_url.endswith("/api/v3"):
        # GitHub Enterprise Server; github3 wants the host and appends /api/v3 itself.
        gh = github3.GitHubEnterprise(api_url.removesuffix("/api/v3"))
    else:
        # API hosts without the /api/v3 suffix (GitHub Enterprise Cloud with data residency).
        gh = github3.GitHub()
        gh.session.base_url = api_url
    if target.uses_app:
        try:
            key = str(target.app_private_key).encode()
            with _step(
                target,
                f"authenticating as installation {target.installation_id} of app {target.app_id}",
            ):
                # The app id goes in as a string although github3 documents an int: PyJWT
                # 2.10+ refuses a non-string "iss" claim, and GitHub accepts either.
                gh.login_as_app_installation(
                    key, str(target.app_id), int(str(target.installation_id))
                )
        except (jwt.PyJWTError, ValueError, TypeError) as exc:  # PyJWT on a bad key
            raise GitHubConfigError(
                f"MEDGATE_GITHUB_APP_PRIVATE_KEY is not a usable PEM RSA private key ({exc})"
            ) from exc
    elif target.token:
        gh.login(token=target.token)
    else:
        raise GitHubConfigError(
            "no GitHub credentials: set GITHUB_TOKEN or the MEDGATE_GITHUB_APP_* variables"
        )
    return gh


@contextmanager
def _step(target: GitHubTarget, doing: str) -> Iterator[None]:
    """Turn github3's and requests' errors into one GitHubPublishError naming the step."""
    try:
        yield
    except GitHubPublishError:
        raise
    except GitHubError as exc:
        raise GitHubPublishError(
            f"GitHub answered {exc.code} while {doing} at "
            f"{target.api_url}: {exc.msg}{_hint(exc.code)}"
        ) from exc
    except TransportError as exc:  # github3 wraps requests' connection errors in this
        raise GitHubPublishError(
            f"could not reach {target.api_url} while {doing}: {exc.exception}"
        ) from exc
    except GitHubException as exc:
        raise GitHubPublishError(f"github3 failed while {doing}: {exc}") from exc
    except requests.RequestException as exc:
        raise GitHubPublishError(f"could not reach {target.api_url} while {doing}: {exc}") from exc


def _hint(code: int) -> str:
    if code == 401:
        return " (the token is invalid or expired)"
    if code in (403, 404):
        return (
            " (the token may lack permission: the workflow needs `pull-requests: write` and "
            "`statuses: write`; pull requests from forks get a read-only token)"
        )
    return ""


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    note = "\n\n… (truncated by medgate)" if limit > 200 else "…"
    return text[: limit - len(note)] + note
