"""What can be checked of the Dockerfile without a container engine."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    joined = re.sub(r"\\\n", " ", text)
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, args = line.partition(" ")
            result.append((keyword.upper(), args.strip()))
    return result


def _pins() -> dict[str, str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(d.split("==", 1) for d in deps["dependencies"] if d.startswith("torch"))


def test_base_image_is_an_argument_defaulting_to_python_slim():
    steps = _instructions()
    assert steps[0] == ("ARG", "BASE_IMAGE=python:3.11-slim")
    assert steps[1] == ("FROM", "${BASE_IMAGE}")
    assert [s for s in steps if s[0] == "FROM"] == [steps[1]]


def test_torch_is_installed_first_from_the_index_argument_with_the_pyproject_pins():
    steps = _instructions()
    assert ("ARG", "TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu") in steps
    runs = [args for kw, args in steps if kw == "RUN"]
    torch_run = next(r for r in runs if "torch==" in r)
    assert '--index-url "${TORCH_INDEX_URL}"' in torch_run
    pins = _pins()
    assert set(pins) == {"torch", "torchvision"}
    for name, version in pins.items():
        assert f"{name}=={version}" in torch_run.split(), f"{name} pin differs from pyproject"
    assert runs.index(torch_run) < next(i for i, r in enumerate(runs) if "pip install -e ." in r)


def test_runs_as_a_non_root_user_with_medgate_as_entry_point():
    steps = _instructions()
    users = [args for kw, args in steps if kw == "USER"]
    assert users, "the image must switch to a non-root user"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    useradd = next(args for kw, args in steps if kw == "RUN" and "useradd" in args)
    assert "medgate" in useradd and f"--uid {user}" in useradd
    assert ("WORKDIR", "/work") in steps
    assert json.loads(dict(steps)["ENTRYPOINT"]) == ["medgate"]
    assert json.loads(dict(steps)["CMD"]) == ["--help"]


def test_conf_and_agents_sit_beside_the_editable_gate_package():
    """gate/config.py finds conf/ and agents/ next to the gate package."""
    steps = _instructions()
    copies = {args.split()[0].rstrip("/"): args.split()[1] for kw, args in steps if kw == "COPY"}
    assert copies["gate"] == "gate/" and copies["conf"] == "conf/"
    assert copies["agents"] == "agents/"


def test_every_copied_file_exists_and_is_not_docker_ignored():
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for kw, args in _instructions():
        if kw != "COPY":
            continue
        sources = [a for a in args.split()[:-1] if not a.startswith("--")]
        for source in sources:
            path = ROOT / source
            assert path.exists(), f"Dockerfile copies {source}, which is not in the repository"
            name = source.rstrip("/")
            assert not any(fnmatch.fnmatch(name, pattern) for pattern in ignored), (
                f"Dockerfile copies {source}, but .dockerignore excludes it"
            )
