"""Shared fixtures: tests compose the same configs users run, overridden to tiny sizes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gate.cli import compose
from gate.config import RunConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cfg_factory():
    def make(*overrides: str) -> RunConfig:
        return compose(["task=seg_phantom_tiny", "budget=ci", *overrides])

    return make


def medgate(cwd: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the real `medgate` command in ``cwd`` (MLflow's default store lands there)."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("MEDGATE_INVOCATION", None)
    return subprocess.run([sys.executable, "-m", "gate.cli", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
