"""A local stand-in for GitHub's REST API, just the endpoints gate.github calls through github3.

It speaks the protocol (paths, token and app JWT auth, Link-header pagination, status codes,
response bodies with the fields github3's models read), keeps its state in memory and records
every request so tests can assert on what the real github3 client sent.
"""

from __future__ import annotations

import html
import json
import re
import secrets
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt

GITHUB_DEFAULT_PER_PAGE = 30
GITHUB_MAX_PER_PAGE = 100
ACTIONS_BOT = "github-actions[bot]"
APP_BOT = "medgate-app[bot]"


@dataclass
class RecordedRequest:
    method: str
    path: str  # without the Enterprise prefix and without the query
    query: dict[str, str]
    headers: dict[str, str]
    json: Any


@dataclass
class _Repo:
    owner: str
    name: str
    id: int
    # issue number → list of comment dicts (oldest first, as GitHub lists them)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    check_runs: list[dict[str, Any]] = field(default_factory=list)


class FakeGitHub:
    """In-memory GitHub; ``prefix="/api/v3"`` makes it look like GitHub Enterprise Server."""

    def __init__(
        self,
        *,
        prefix: str = "",
        tokens: tuple[str, ...] = ("ghp_test",),
        max_per_page: int = GITHUB_MAX_PER_PAGE,
        app_id: int | None = None,
        app_public_key_pem: bytes | None = None,
        installation_id: int | None = None,
    ) -> None:
        self.prefix = prefix.rstrip("/")
        self.max_per_page = max_per_page
        self.app_id = app_id
        self.app_public_key_pem = app_public_key_pem
        self.installation_id = installation_id
        self.requests: list[RecordedRequest] = []
        self._tokens: dict[str, str] = {t: ACTIONS_BOT for t in tokens}  # token → user login
        self._installation_tokens: set[str] = set()
        self._repos: dict[str, _Repo] = {}
        self._next_id = 1000
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # ---- set-up -------------------------------------------------------------------------------

    @property
    def root(self) -> str:
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return self.root + self.prefix

    def add_repo(self, full_name: str) -> None:
        owner, name = full_name.split("/")
        self._repos[full_name] = _Repo(owner, name, self._new_id())

    def add_pull_request(self, full_name: str, number: int) -> None:
        self._repos[full_name].comments.setdefault(number, [])

    def add_comment(self, full_name: str, number: int, body: str, login: str = "octocat") -> int:
        repo = self._repos[full_name]
        comment = self._comment_json(repo, number, self._new_id(), body, login)
        repo.comments[number].append(comment)
        return int(comment["id"])

    def comments(self, full_name: str, number: int) -> list[dict[str, Any]]:
        return list(self._repos[full_name].comments[number])

    def statuses(self, full_name: str) -> list[dict[str, Any]]:
        return list(self._repos[full_name].statuses)

    def check_runs(self, full_name: str) -> list[dict[str, Any]]:
        return list(self._repos[full_name].check_runs)

    def requests_to(self, method: str, pattern: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method and re.fullmatch(pattern, r.path)]

    # ---- life cycle ---------------------------------------------------------------------------

    @contextmanager
    def running(self) -> Iterator[FakeGitHub]:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join(timeout=5)

    # ---- request handling ---------------------------------------------------------------------

    def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], Any]:
        parts = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        payload = json.loads(body) if body else None
        path = parts.path
        with self._lock:
            if self.prefix:
                if not path.startswith(self.prefix + "/"):
                    return 404, {}, _error("Not Found")
                path = path[len(self.prefix) :]
            self.requests.append(RecordedRequest(method, path, query, headers, payload))
            for route_method, pattern, action in self._routes():
                match = re.fullmatch(pattern, path)
                if match and route_method == method:
                    return action(match, query, headers, payload)
            return 404, {}, _error("Not Found")

    def _routes(self) -> list[tuple[str, str, Callable[..., tuple[int, dict[str, str], Any]]]]:
        repo = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
        return [
            ("POST", r"/app/installations/(?P<id>\d+)/access_tokens", self._access_token),
            ("GET", repo, self._get_repo),
            ("GET", repo + r"/issues/(?P<number>\d+)", self._get_issue),
            ("GET", repo + r"/issues/(?P<number>\d+)/comments", self._list_comments),
            ("POST", repo + r"/issues/(?P<number>\d+)/comments", self._create_comment),
            ("PATCH", repo + r"/issues/comments/(?P<id>\d+)", self._edit_comment),
            ("POST", repo + r"/statuses/(?P<sha>[0-9a-f]{40})", self._create_status),
            ("POST", repo + r"/check-runs", self._create_check_run),
        ]

    def _user(self, headers: dict[str, str]) -> str | None:
        scheme, _, token = headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "token":
            return self._tokens.get(token)
        return None

    def _repo(self, match: re.Match[str]) -> _Repo | None:
        return self._repos.get(f"{match['owner']}/{match['name']}")

    def _access_token(
        self, match: re.Match[str], query: dict[str, str], headers: dict[str, str], payload: Any
    ) -> tuple[int, dict[str, str], Any]:
        scheme, _, token = headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer" or self.app_public_key_pem is None:
            return 401, {}, _error("A JSON web token could not be decoded")
        try:
            claims = jwt.decode(
                token,
                self.app_public_key_pem,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"], "verify_iss": False},
            )
        except jwt.PyJWTError as exc:
            return 401, {}, _error(f"A JSON web token could not be decoded: {exc}")
        if str(claims["iss"]) != str(self.app_id) or int(match["id"]) != self.installation_id:
            return 404, {}, _error("Not Found")
        installation_token = "ghs_" + secrets.token_hex(18)
        self._tokens[installation_token] = APP_BOT
        self._installation_tokens.add(installation_token)
        expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return (
            201,
            {},
            {
                "token": installation_token,
                "expires_at": expires,
                "permissions": {
                    "checks": "write",
                    "pull_requests": "write",
                    "issues": "write",
                    "statuses": "write",
                },
                "repository_selection": "all",
            },
        )

    def _get_repo(
        self, match: re.Match[str], query: dict[str, str], headers: dict[str, str], payload: Any
    ) -> tuple[int, dict[str, str], Any]:
        if self._user(headers) is None:
            return 401, {}, _error("Bad credentials")
        repo = self._repo(match)
        if repo is None:
            return 404, {}, _error("Not Found")
        return 200, {}, self._repo_json(repo)

    def _get_issue(
        self, match: re.Match[str], query: dict[str, str], headers: dict[str, str], payload: Any
    ) -> tuple[int, dict[str, str], Any]:
        if self._user(headers) is None:
            return 401, {}, _error("Bad credentials")
        repo = self._repo(match)
        number = int(match["number"])
        if repo is None or number not in repo.comments:
            return 404, {}, _error("Not Found")
        return 200, {}, self._issue_json(repo, number)

    def _list_comments(
        self, match: re.Match[str], query: dict[str, str], headers: dict[str, str], payload: Any
    ) -> tuple[int, dict[str, str], Any]:
        if self._user(headers) is None:
            return 401, {}, _error("Bad credentials")
        repo = self._repo(match)
        number = int(match["number"])
        if repo is None or number not in repo.comments:
            return 404, {}, _error("Not Found")
        per_page = min(int(query.get("per_page", GITHUB_DEFAULT_PER_PAGE)), self.max_per_page)
        page = int(query.get("page", 1))
        items = repo.comments[number]
        last = max(1, -(-len(items) // per_page))
        link_base = f"{self.api_url}/repos/{repo.owner}/{repo.name}/issues/{number}/comments"
        links = []
        if page < last:
            links.append(
                f'<{link_base}?{urlencode({"per_page": per_page, "page": page + 1})}>; rel="next"'
            )
            links.append(
                f'<{link_base}?{urlencode({"per_page": per_page, "page": last})}>; rel="last"'
            )
        response_headers = {"Link": ", ".join(links)} if links else {}
        return 200, response_headers, items[(page - 1) * per_page : page * per_page]

    def _create_comment(
        self, match: re.Match[str], query: dict[str, str], headers: dict[str, str], payload: Any
    ) -> tuple[int, dict[str, str], Any]:
        login = self._user(headers)
        if login is None:
            return 401, {}, _error("Bad credentials")
        repo = self._repo(match)
        number = int(match["number"])
        if repo is None or number not in repo.comments:
            return 404, {}, _error("Not Found")
        if not isinstance(payload, dict) or not payload.get("body"):
            return 422, {}, _error("Validation Failed")
        comment = self._comment_json(repo, number, self._new_id(), payload["body"], login)
        repo.comments[number].append(comment)
        return 201, {}, comment

    def _edit_comment(
        self, match: re.Match[str], query: dict[str, str], headers: dict[str, str], payload: Any
    ) -> tuple[int, dict[str, str], Any]:
        login = self._user(headers)
        if login is None:
            return 401, {}, _error("Bad credentials")
        repo = self._repo(match)
        if repo is None:
            return 404, {}, _error("Not Found")
        for comments in repo.comments.values():
            for comment in comments:
                if comment["id"] == int(match["id"]):
                    if comment["user"]["login"] != login:
                        return 403, {}, _error("Resource not accessible by integration")
                    if not isinstance(payload, dict) or not payload.get("body"):
                        return 422, {}, _error("Validation Failed")
                    comment.update(
                        body=payload["body"],
                        body_text=payload["body"],
                        body_html=_html(payload["body"]),
                        updated_at=_now(),
                    )
                    return 200, {}, comment
        return 404, {}, _error("Not Found")

    def _create_status(
        self, match: re.Match[str], query: dict[str, str], headers: dict[str, str], payload: Any
    ) -> tuple[int, dict[str, str], Any]:
        login = self._user(headers)
        if login is None:
            return 401, {}, _error("Bad credentials")
        repo = self._repo(match)
        if repo is None:
            return 404, {}, _error("Not Found")
        if (
            payload.get("state") not in ("error", "failure", "pending", "success")
            or len(payload.get("description") or "") > 140
        ):
            return 422, {}, _error("Validation Failed")
        status_id = self._new_id()
        status = {
            "url": f"{self.api_url}/repos/{repo.owner}/{repo.name}/statuses/{match['sha']}",
            "avatar_url": None,
            "id": status_id,
            "node_id": f"SC_{status_id}",
            "state": payload["state"],
            "description": payload.get("description"),
            "target_url": payload.get("target_url"),
            "context": payload.get("context", "default"),
            "created_at": _now(),
            "updated_at": _now(),
            "creator": self._user_json(login),
            "sha": match["sha"],
        }
        repo.statuses.append(status)
        return 201, {}, status

    def _create_check_run(
        self, match: re.Match[str], query: dict[str, str], headers: dict[str, str], payload: Any
    ) -> tuple[int, dict[str, str], Any]:
        login = self._user(headers)
        if login is None:
            return 401, {}, _error("Bad credentials")
        token = headers.get("Authorization", "").partition(" ")[2]
        if token not in self._installation_tokens:
            return 403, {}, _error("You must authenticate via a GitHub App.")
        repo = self._repo(match)
        if repo is None:
            return 404, {}, _error("Not Found")
        output = payload.get("output") or {}
        if any(len(output.get(k) or "") > 65535 for k in ("title", "summary", "text")):
            return 422, {}, _error("Validation Failed")
        run_id = self._new_id()
        run = {
            "id": run_id,
            "node_id": f"CR_{run_id}",
            "head_sha": payload["head_sha"],
            "external_id": payload.get("external_id", ""),
            "url": f"{self.api_url}/repos/{repo.owner}/{repo.name}/check-runs/{run_id}",
            "html_url": f"{self.root}/{repo.owner}/{repo.name}/runs/{run_id}",
            "details_url": payload.get("details_url"),
            "status": payload.get("status", "queued"),
            "conclusion": payload.get("conclusion"),
            "started_at": _now(),
            "completed_at": payload.get("completed_at"),
            "name": payload["name"],
            "output": {
                "title": output.get("title"),
                "summary": output.get("summary"),
                "text": output.get("text"),
                "annotations_count": 0,
                "annotations_url": f"{self.api_url}/repos/{repo.owner}/{repo.name}"
                f"/check-runs/{run_id}/annotations",
            },
            "check_suite": {"id": self._new_id()},
            "app": self._app_json(),
            "pull_requests": [],
        }
        repo.check_runs.append(run)
        return 201, {}, run

    # ---- response bodies ----------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _user_json(self, login: str) -> dict[str, Any]:
        api = f"{self.api_url}/users/{login}"
        return {
            "login": login,
            "id": zlib.crc32(login.encode()),
            "node_id": f"U_{login}",
            "avatar_url": f"{self.root}/avatars/{login}",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.root}/{login}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": "Bot" if login.endswith("[bot]") else "User",
            "site_admin": False,
        }

    def _app_json(self) -> dict[str, Any]:
        return {
            "id": self.app_id,
            "slug": "medgate-app",
            "node_id": "A_1",
            "owner": self._user_json("medgate-org"),
            "name": "medgate-app",
            "description": "",
            "external_url": self.root,
            "html_url": f"{self.root}/apps/medgate-app",
            "created_at": _now(),
            "updated_at": _now(),
            "permissions": {},
            "events": [],
        }

    def _repo_json(self, repo: _Repo) -> dict[str, Any]:
        api = f"{self.api_url}/repos/{repo.owner}/{repo.name}"
        web = f"{self.root}/{repo.owner}/{repo.name}"
        templated = {
            "archive_url": "/{archive_format}{/ref}",
            "assignees_url": "/assignees{/user}",
            "blobs_url": "/git/blobs{/sha}",
            "branches_url": "/branches{/branch}",
            "collaborators_url": "/collaborators{/collaborator}",
            "comments_url": "/comments{/number}",
            "commits_url": "/commits{/sha}",
            "compare_url": "/compare/{base}...{head}",
            "contents_url": "/contents/{+path}",
            "git_commits_url": "/git/commits{/sha}",
            "git_refs_url": "/git/refs{/sha}",
            "git_tags_url": "/git/tags{/sha}",
            "issue_comment_url": "/issues/comments{/number}",
            "issue_events_url": "/issues/events{/number}",
            "issues_url": "/issues{/number}",
            "keys_url": "/keys{/key_id}",
            "labels_url": "/labels{/name}",
            "milestones_url": "/milestones{/number}",
            "notifications_url": "/notifications{?since,all,participating}",
            "pulls_url": "/pulls{/number}",
            "releases_url": "/releases{/id}",
            "statuses_url": "/statuses/{sha}",
            "trees_url": "/git/trees{/sha}",
        }
        plain = [
            "contributors",
            "deployments",
            "downloads",
            "events",
            "forks",
            "hooks",
            "languages",
            "merges",
            "stargazers",
            "subscribers",
            "subscription",
            "tags",
            "teams",
        ]
        data: dict[str, Any] = {key: api + suffix for key, suffix in templated.items()}
        data.update({f"{key}_url": f"{api}/{key}" for key in plain})
        data.update(
            {
                "id": repo.id,
                "node_id": f"R_{repo.id}",
                "name": repo.name,
                "full_name": f"{repo.owner}/{repo.name}",
                "owner": self._user_json(repo.owner),
                "private": False,
                "html_url": web,
                "description": "medgate test repository",
                "fork": False,
                "url": api,
                "archived": False,
                "clone_url": web + ".git",
                "created_at": "2026-01-05T10:00:00Z",
                "updated_at": _now(),
                "pushed_at": _now(),
                "default_branch": "main",
                "forks_count": 0,
                "git_url": web.replace("http", "git"),
                "has_downloads": True,
                "has_issues": True,
                "has_pages": False,
                "has_projects": True,
                "has_wiki": False,
                "homepage": None,
                "language": "Python",
                "license": None,
                "mirror_url": None,
                "network_count": 0,
                "open_issues_count": 1,
                "size": 100,
                "ssh_url": f"git@127.0.0.1:{repo.owner}/{repo.name}.git",
                "stargazers_count": 0,
                "subscribers_count": 0,
                "svn_url": web,
                "watchers_count": 0,
            }
        )
        return data

    def _issue_json(self, repo: _Repo, number: int) -> dict[str, Any]:
        api = f"{self.api_url}/repos/{repo.owner}/{repo.name}"
        web = f"{self.root}/{repo.owner}/{repo.name}"
        return {
            "url": f"{api}/issues/{number}",
            "repository_url": api,
            "labels_url": f"{api}/issues/{number}/labels{{/name}}",
            "comments_url": f"{api}/issues/{number}/comments",
            "events_url": f"{api}/issues/{number}/events",
            "html_url": f"{web}/pull/{number}",
            "id": repo.id * 1000 + number,
            "node_id": f"PR_{number}",
            "number": number,
            "title": "Improve the agent",
            "user": self._user_json("octocat"),
            "labels": [],
            "state": "open",
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": len(repo.comments[number]),
            "created_at": "2026-01-06T09:00:00Z",
            "updated_at": _now(),
            "closed_at": None,
            "closed_by": None,
            "author_association": "CONTRIBUTOR",
            "body": "",
            "body_html": "",
            "body_text": "",
            "pull_request": {
                "url": f"{api}/pulls/{number}",
                "html_url": f"{web}/pull/{number}",
                "diff_url": f"{web}/pull/{number}.diff",
                "patch_url": f"{web}/pull/{number}.patch",
            },
        }

    def _comment_json(
        self, repo: _Repo, number: int, comment_id: int, body: str, login: str
    ) -> dict[str, Any]:
        api = f"{self.api_url}/repos/{repo.owner}/{repo.name}"
        return {
            "id": comment_id,
            "node_id": f"IC_{comment_id}",
            "url": f"{api}/issues/comments/{comment_id}",
            "html_url": f"{self.root}/{repo.owner}/{repo.name}/pull/{number}"
            f"#issuecomment-{comment_id}",
            "issue_url": f"{api}/issues/{number}",
            "user": self._user_json(login),
            "created_at": _now(),
            "updated_at": _now(),
            "author_association": "NONE",
            "body": body,
            "body_text": body,
            "body_html": _html(body),
            "performed_via_github_app": None,
        }


def _handler_for(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            status, headers, payload = fake.handle(
                self.command, self.path, dict(self.headers.items()), body
            )
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep pytest output clean; the requests are recorded instead

    return Handler


def _error(message: str) -> dict[str, str]:
    return {"message": message, "documentation_url": "https://docs.github.com/rest"}


def _html(body: str) -> str:
    return f"<p>{html.escape(body)}</p>"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
