"""Everything the rubrics may look at for one finished run, loaded lazily and at most once.

The gate reads artifacts only: nothing here imports or runs agent code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TypeVar

import pandas as pd
from pydantic import BaseModel

from gate.config import BudgetConfig, TaskConfig
from gate.contract import SPLIT_COLUMNS, SPLIT_FILE, TaskContract, read_model
from gate.errors import ArtifactError
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

    @cached_property
    def cases(self) -> pd.DataFrame:
        """The task's own case table: the truth an agent's split is compared against."""
        return self.views.cases().set_index("case_id", drop=False)

    @cached_property
    def train_ids(self) -> set[str]:
        return set(self.views.train_ids())

    @cached_property
    def test_ids(self) -> list[str]:
        return self.views.test_ids()

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
        bad = pd.to_numeric(df["fold"], errors="coerce").isna()
        if bad.any():
            return ArtifactError(
                SPLIT_FILE,
                "fold",
                f"{int(bad.sum())} rows have a fold that is "
                f"not an integer (first: {df.loc[bad, 'case_id'].iloc[0]!r})",
            )
        return df.assign(fold=df["fold"].astype(int))


@dataclass
class StageBuilder:
    """Collects a stage's rubric items and findings; the stage score is the mean of its items."""

    stage: str
    items: list[RubricItem] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def item(self, name: str, score: float | bool, reason: str) -> float:
        value = float(max(0.0, min(1.0, float(score))))
        self.items.append(RubricItem(name=name, score=value, reason=reason))
        return value

    def code(self, code: str, message: str) -> None:
        self.findings.append(Finding.of(code, message))

    def result(self, artifacts: list[str]) -> StageResult:
        score = sum(i.score for i in self.items) / len(self.items) if self.items else None
        return StageResult(
            stage=self.stage,
            status="judged" if self.items else "unjudged",
            score=score,
            items=self.items,
            findings=self.findings,
            artifacts=artifacts,
        )


def first_few(values: list[str], n: int = 3) -> str:
    """'a, b, c (+4 more)' — the rows or files at fault, first few with a count."""
    head = ", ".join(str(v) for v in values[:n])
    return head + (f" (+{len(values) - n} more)" if len(values) > n else "")
