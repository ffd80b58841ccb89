"""The workspace contract: the one interface between the gate and an agent.

Both sides import this module: the gate to check a finished workspace, agents to write it.
Paths are relative to the workspace root. Keep it free of heavy imports (no torch, no mlflow).
"""

from __future__ import annotations

import csv
import hashlib
import json
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gate.errors import ArtifactError

CONTRACT_VERSION = "1.0"


class Stage(StrEnum):
    PLAN = "plan"
    SETUP = "setup"
    VALIDATE = "validate"
    INFERENCE = "inference"
    SUBMIT = "submit"


STAGES: tuple[Stage, ...] = tuple(Stage)
STAGE_LABELS: dict[Stage, str] = {s: f"S{i} {s.value.title()}" for i, s in enumerate(STAGES, 1)}

# Files the gate writes.
BRIEF_FILE = "BRIEF.md"
TASK_FILE = "task.json"
DATA_DIR = "data"
CASES_FILE = "data/cases.csv"

# Files the agent writes.
PLAN_FILE = "plan.yaml"
SETUP_DIR = "setup"
SETUP_CODE_DIR = "setup/code"
ENVIRONMENT_FILE = "setup/environment.txt"
SMOKE_FILE = "setup/smoke.json"
VALIDATION_DIR = "validation"
SPLIT_FILE = "validation/split.csv"
VALIDATION_PREDICTIONS_DIR = "validation/predictions"
VALIDATION_REPORT_FILE = "validation/report.json"
PREDICTIONS_DIR = "predictions"
SUBMISSION_DIR = "submission"
MANIFEST_FILE = "submission/manifest.json"
TRACE_FILE = "trace.jsonl"

STAGE_ARTIFACTS: dict[Stage, tuple[str, ...]] = {
    Stage.PLAN: (PLAN_FILE,),
    Stage.SETUP: (SETUP_CODE_DIR, ENVIRONMENT_FILE, SMOKE_FILE),
    Stage.VALIDATE: (SPLIT_FILE, VALIDATION_PREDICTIONS_DIR, VALIDATION_REPORT_FILE),
    Stage.INFERENCE: (PREDICTIONS_DIR,),
    Stage.SUBMIT: (SUBMISSION_DIR, MANIFEST_FILE),
}

SPLIT_COLUMNS = ("case_id", "patient_id", "fold")


class TaskType(StrEnum):
    SEGMENTATION = "segmentation"
    ENHANCEMENT = "enhancement"
    DETECTION = "detection"
    CLASSIFICATION = "classification"
    VQA = "vqa"
    REPORT_GENERATION = "report_generation"


class PredictionKind(StrEnum):
    """How one case's prediction is stored; every track maps to one of these."""

    IMAGE = "image"  # one image file per case (label map, enhanced image)
    TABLE = "table"  # rows of a CSV keyed by case_id (class scores, boxes)
    TEXT = "text"  # one JSON line per case with a text field (answers, reports)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------- task.json (gate -> agent)


class MetricSpec(_Model):
    name: str
    greater_is_better: bool
    aggregation: str = Field(description="how per-case values become one number, e.g. 'macro_mean'")
    description: str = ""


class ColumnSpec(_Model):
    name: str
    dtype: Literal["str", "int", "float"]
    min: float | None = None
    max: float | None = None
    allowed: list[Any] | None = None


class PredictionSpec(_Model):
    kind: PredictionKind
    file_pattern: str = Field(description="relative to predictions/, '{case_id}' is replaced")
    dtype: str | None = None
    same_grid_as_input: bool = False


class SubmissionSpec(_Model):
    kind: PredictionKind
    index_file: str = Field(description="relative to the workspace, lists one row per test case")
    columns: list[ColumnSpec]
    files_dir: str | None = Field(None, description="for image submissions: folder of the files")


class DataLayout(_Model):
    cases: str = CASES_FILE
    train_images: str
    train_labels: str
    test_images: str
    image_pattern: str = "{case_id}.nii.gz"


class TaskContract(_Model):
    """The machine-readable task contract published as ``task.json``."""

    contract_version: str = CONTRACT_VERSION
    task: str
    task_type: TaskType
    title: str
    description: str
    modality: str
    labels: dict[str, str] = Field(description="label value (as text) -> name; 0 is background")
    metric: MetricSpec
    grouping_key: str = "patient_id"
    data: DataLayout
    prediction: PredictionSpec
    submission: SubmissionSpec
    expected_artifacts: dict[str, list[str]]
    budget: dict[str, Any]
    tier: str
    seed: int

    def foreground_labels(self) -> list[int]:
        return sorted(int(k) for k in self.labels if int(k) != 0)


# ---------------------------------------------------------------- S1 plan


class SplitPlan(_Model):
    strategy: Literal["group_holdout", "group_kfold", "random_holdout", "kfold"]
    group_key: str | None = None
    n_folds: int = Field(1, ge=1)
    validation_fraction: float | None = Field(None, gt=0, lt=1)


class MethodLane(_Model):
    name: str
    hypothesis: str
    budget_s: float = Field(ge=0)


class Plan(_Model):
    task_type: TaskType
    metric: str
    greater_is_better: bool
    split: SplitPlan
    lanes: list[MethodLane] = Field(min_length=1)
    budget_s: float = Field(ge=0)
    notes: str = ""


# ---------------------------------------------------------------- S2 setup


class SmokeRecord(_Model):
    ok: bool
    batch_shape: list[int]
    loss: float | None = None
    seconds: float = Field(ge=0)
    device: str
    code_sha256: str = Field(description="sha256_tree of setup/code when the smoke batch ran")


# ---------------------------------------------------------------- S3 validate


class EpochLog(_Model):
    epoch: int
    value: float
    loss: float | None = None


class ValidationReport(_Model):
    metric: str
    greater_is_better: bool
    value: float = Field(description="the claimed validation metric")
    per_label: dict[str, float] = {}
    validation_folds: list[int] = Field(min_length=1)
    n_cases: int = Field(ge=0)
    history: list[EpochLog] = []
    selected_epoch: int | None = None


# ---------------------------------------------------------------- S5 submit


class FileChecksum(_Model):
    path: str = Field(description="relative to the workspace")
    sha256: str


class Manifest(_Model):
    contract_version: str = CONTRACT_VERSION
    agent: str
    files: list[FileChecksum] = Field(min_length=1)
    claimed: dict[str, float] = {}
    model: FileChecksum | None = None
    code_sha256: str | None = None


# ---------------------------------------------------------------- helpers shared by both sides


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_tree(root: Path) -> str:
    """A content hash of every file below ``root``, stable across machines and file orders."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(sha256_file(path).encode())
    return digest.hexdigest()


M = TypeVar("M", bound=BaseModel)


def _describe(exc: ValidationError) -> tuple[str, str]:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "(root)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return field, f"{first['msg']}{more}"


def read_model(workspace: Path, rel: str, model: type[M]) -> M:
    """Parse a JSON or YAML artifact into ``model``; raise ArtifactError naming file and field."""
    path = workspace / rel
    if not path.is_file():
        raise ArtifactError(rel, "", "file is missing")
    try:
        text = path.read_text()
        data = yaml.safe_load(text) if rel.endswith((".yaml", ".yml")) else json.loads(text)
    except (yaml.YAMLError, ValueError, RecursionError, OSError) as exc:  # JSON/Unicode errors too
        raise ArtifactError(rel, "", f"does not parse: {exc}".splitlines()[0]) from None
    try:
        return model.model_validate(data)
    except RecursionError:
        raise ArtifactError(rel, "", "nested too deeply to read") from None
    except ValidationError as exc:
        field, problem = _describe(exc)
        raise ArtifactError(rel, field, problem, f"see gate.contract.{model.__name__}") from None


def write_model(workspace: Path, rel: str, obj: BaseModel) -> Path:
    path = workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    data = obj.model_dump(mode="json")
    if rel.endswith((".yaml", ".yml")):
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    else:
        path.write_text(json.dumps(data, indent=2))
    return path


def read_task(workspace: Path) -> TaskContract:
    return read_model(workspace, TASK_FILE, TaskContract)


def read_cases(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def write_split(workspace: Path, rows: list[tuple[str, str, int]]) -> Path:
    path = workspace / SPLIT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(SPLIT_COLUMNS)
        writer.writerows(rows)
    return path


def append_trace(workspace: Path, event: str, **fields: Any) -> None:
    """Append one event to trace.jsonl (optional for agents; shown as evidence, never scored)."""
    import time

    with open(workspace / TRACE_FILE, "a") as fh:
        fh.write(json.dumps({"t": time.time(), "event": event, **fields}) + "\n")
