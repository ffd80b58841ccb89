"""Everything the rubrics may look at for one finished run, loaded lazily and at most once.

The gate reads artifacts only: nothing here imports or runs agent code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
from pydantic import BaseModel

from gate.config import BudgetConfig, TaskConfig
from gate.contract import (
    MANIFEST_FILE,
    PLAN_FILE,
    SMOKE_FILE,
    SPLIT_COLUMNS,
    SPLIT_FILE,
    VALIDATION_REPORT_FILE,
    Manifest,
    Plan,
    SmokeRecord,
    TaskContract,
    ValidationReport,
    read_model,
)
from gate.errors import ArtifactError
from gate.images import load_volume, prediction_problems
from gate.metrics import Metric
from gate.record import Finding, ProcessResult, RubricItem, StageResult
from gate.tasks import TaskViews

M = TypeVar("M", bound=BaseModel)


@dataclass
class Evidence:
    workspace: Path
    contract: TaskContract
    views: TaskViews
    task_cfg: TaskConfig
    budget: BudgetConfig
    process: ProcessResult
    metric: Metric
    # the case table as read before the agent ran, so an agent cannot rewrite the truth
    case_table: pd.DataFrame | None = None

    @cached_property
    def cases(self) -> pd.DataFrame:
        """The task's own case table: the truth an agent's split is compared against."""
        table = self.case_table if self.case_table is not None else self.views.cases()
        return table.set_index("case_id", drop=False)

    @cached_property
    def train_ids(self) -> set[str]:
        return set(self.cases.loc[self.cases["split"] == "train", "case_id"])

    @cached_property
    def test_ids(self) -> list[str]:
        return sorted(self.cases.loc[self.cases["split"] == "test", "case_id"])

    @cached_property
    def labels(self) -> set[int]:
        return {int(k) for k in self.contract.labels}

    def image_path(self, case_id: str) -> Path:
        split = self.cases.at[case_id, "split"]
        folder = (
            self.contract.data.train_images if split == "train" else self.contract.data.test_images
        )
        name = self.contract.data.image_pattern.format(case_id=case_id)
        return self.views.public / Path(folder).relative_to("data") / name

    def reference_path(self, case_id: str) -> Path:
        """Labels: public for training cases, hidden for test cases (never in the workspace)."""
        name = self.contract.data.image_pattern.format(case_id=case_id)
        if self.cases.at[case_id, "split"] == "train":
            return (
                self.views.public / Path(self.contract.data.train_labels).relative_to("data") / name
            )
        return self.views.hidden / "labelsTs" / name

    def path(self, rel: str) -> Path:
        return self.workspace / rel

    def present(self, rel: str) -> bool:
        p = self.path(rel)
        return (p.is_file() and p.stat().st_size > 0) or (p.is_dir() and any(p.iterdir()))

    def model(self, rel: str, model: type[M]) -> M | ArtifactError:
        try:
            return read_model(self.workspace, rel, model)
        except ArtifactError as exc:
            return exc

    @cached_property
    def plan(self) -> Plan | ArtifactError:
        return self.model(PLAN_FILE, Plan)

    @cached_property
    def smoke(self) -> SmokeRecord | ArtifactError:
        return self.model(SMOKE_FILE, SmokeRecord)

    @cached_property
    def report(self) -> ValidationReport | ArtifactError:
        return self.model(VALIDATION_REPORT_FILE, ValidationReport)

    @cached_property
    def manifest(self) -> Manifest | ArtifactError:
        return self.model(MANIFEST_FILE, Manifest)

    @cached_property
    def validation_ids(self) -> list[str] | ArtifactError:
        """Training cases the split puts in the folds the report says it validated on."""
        split, report = self.split, self.report
        if isinstance(split, ArtifactError):
            return split
        if isinstance(report, ArtifactError):
            return report
        chosen = split["fold"].isin(set(report.validation_folds)) & split["case_id"].isin(
            self.train_ids
        )
        return sorted(set(split.loc[chosen, "case_id"]))

    def prediction_path(self, folder: str, case_id: str) -> Path:
        return self.path(folder) / self.contract.prediction.file_pattern.format(case_id=case_id)

    def score_cases(
        self, folder: str, case_ids: list[str]
    ) -> tuple[dict[str, list[str]], dict[str, dict[int, float]]]:
        """Problems per case (empty list: valid) and per-label scores; invalid cases score worst."""
        labels = self.contract.foreground_labels()
        problems: dict[str, list[str]] = {}
        scores: dict[str, dict[int, float]] = {}
        for cid in case_ids:
            pred_path = self.prediction_path(folder, cid)
            problems[cid] = prediction_problems(pred_path, self.image_path(cid), self.labels)
            if problems[cid]:
                scores[cid] = {lab: self.metric.worst for lab in labels}
            else:
                ref = load_volume(self.reference_path(cid)).data
                scores[cid] = self.metric.per_label(load_volume(pred_path).data, ref, labels)
        return problems, scores

    @cached_property
    def split(self) -> pd.DataFrame | ArtifactError:
        path = self.path(SPLIT_FILE)
        if not path.is_file():
            return ArtifactError(SPLIT_FILE, "", "file is missing")
        try:
            df = pd.read_csv(path, dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            return ArtifactError(SPLIT_FILE, "", f"does not parse: {exc}".splitlines()[0])
        missing = [c for c in SPLIT_COLUMNS if c not in df.columns]
        if missing:
            return ArtifactError(
                SPLIT_FILE,
                ",".join(missing),
                "columns missing",
                f"write columns {','.join(SPLIT_COLUMNS)}",
            )
        num = pd.to_numeric(df["fold"], errors="coerce")
        bad = num.isna() | (num != num.round()) | (num.abs() > 10_000)  # inf, 1e20, 1.5, "x"
        if bad.any():
            return ArtifactError(
                SPLIT_FILE,
                "fold",
                f"{int(bad.sum())} rows have a fold that is "
                f"not a small integer (first: {df.loc[bad, 'case_id'].iloc[0]!r})",
            )
        return df.assign(fold=num.astype(int))


@dataclass
class StageBuilder:
    """Collects a stage's rubric items and findings; the stage score is the mean of its items."""

    stage: str
    items: list[RubricItem] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    checks: dict[str, Any] = field(default_factory=dict)

    def item(self, name: str, score: float | bool, reason: str) -> float:
        value = float(max(0.0, min(1.0, float(score))))
        self.items.append(RubricItem(name=name, score=value, reason=reason))
        return value

    def code(self, code: str, message: str) -> None:
        self.findings.append(Finding.of(code, message))

    def absorb(
        self, name: str, items: list[RubricItem], findings: list[Finding], result: Any
    ) -> None:
        """Take in a check's items, codes and GX result (logged as checks/<name>.json)."""
        self.items.extend(items)
        self.findings.extend(findings)
        self.checks[name] = result

    def result(self, artifacts: list[str]) -> StageResult:
        score = sum(i.score for i in self.items) / len(self.items) if self.items else None
        return StageResult(
            stage=self.stage,
            status="judged" if self.items else "unjudged",
            score=score,
            items=self.items,
            findings=self.findings,
            artifacts=artifacts,
            checks=self.checks,
        )


def first_few(values: list[str], n: int = 3) -> str:
    """'a, b, c (+4 more)' — the rows or files at fault, first few with a count."""
    head = ", ".join(str(v) for v in values[:n])
    return head + (f" (+{len(values) - n} more)" if len(values) > n else "")
