"""The versioned run record the gate writes as ``evaluation.json`` and logs to MLflow.

Old records stay readable: bump ``SCHEMA_VERSION`` when a field changes meaning, and only add
fields with defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gate.errors import lookup

SCHEMA_VERSION = 1
RECORD_FILE = "evaluation.json"


class _Record(BaseModel):
    # NaN (an empty reference, a failed metric) must survive the JSON round trip to MLflow
    model_config = ConfigDict(ser_json_inf_nan="constants")


class RubricItem(_Record):
    name: str
    score: float = Field(ge=0, le=1)
    reason: str


class Finding(_Record):
    """One error code earned by a run, with the evidence that earned it."""

    code: str
    stage: str
    severity: str
    message: str
    fix: str

    @classmethod
    def of(cls, code: str, message: str) -> Finding:
        entry = lookup(code)
        return cls(
            code=code,
            stage=entry.stage,
            severity=entry.severity.value,
            message=message,
            fix=entry.fix,
        )


class StageResult(_Record):
    stage: str
    status: Literal["judged", "unjudged"] = "judged"
    score: float | None = None
    items: list[RubricItem] = []
    findings: list[Finding] = []
    artifacts: list[str] = []  # workspace-relative paths of the stage's artifacts found
    checks: dict[str, Any] = {}  # check name -> its result (Great Expectations JSON)


class CaseResult(_Record):
    case_id: str
    present: bool
    valid: bool
    per_label: dict[str, float]
    value: float


class Outcome(_Record):
    metric: str
    greater_is_better: bool
    value: float
    per_label: dict[str, float]
    n_cases: int
    n_missing: int
    n_nan: int
    cases: list[CaseResult]


class ProcessResult(_Record):
    argv: list[str]
    exit_code: int | None
    timed_out: bool = False
    memory_exceeded: bool = False
    wall_s: float
    peak_rss_mb: float | None = None
    leftover_processes: int = 0  # descendants of the agent still alive when it was stopped
    stdout_log: str
    stderr_log: str


class RunRecord(_Record):
    schema_version: int = SCHEMA_VERSION
    name: str  # <task>/<agent>/<tier>
    task: str
    agent: str
    tier: str
    seed: int
    invocation: str
    mlflow_run_id: str | None = None
    mlflow_experiment_id: str | None = None
    data_key: str | None = None  # content key of the task data: baselines must share it
    git_sha: str | None = None
    workspace: str
    started_at: float
    finished_at: float
    process: ProcessResult
    stages: list[StageResult]
    outcome: Outcome | None
    findings: list[Finding]
    workflow_score: float
    overall_score: float
    rating: str
    verdict: Literal["pass", "fail"]
    reasons: list[str]
    config: dict[str, Any] = {}

    @property
    def codes(self) -> list[str]:
        return sorted({f.code for f in self.findings})

    def stage(self, name: str) -> StageResult:
        return next(s for s in self.stages if s.stage == name)

    def save(self, path: Path) -> Path:
        path.write_text(self.model_dump_json(indent=2))
        return path

    @classmethod
    def load(cls, path: Path) -> RunRecord:
        return cls.model_validate_json(path.read_text())
