"""Policy + run records → a verdict that lists every reason, never stopping at the first.

Exit codes: 0 pass, 1 fail, 2 could not decide (nothing to judge, a run without a record).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gate.config import PolicyConfig
from gate.errors import is_critical
from gate.record import RunRecord

Decision = Literal["pass", "fail", "undecided"]
EXIT_CODES: dict[str, int] = {"pass": 0, "fail": 1, "undecided": 2}


@dataclass(frozen=True)
class Reason:
    """One reason a verdict is not a pass; names the run, the metric, the value and the bound."""

    kind: Literal["critical_code", "threshold", "unjudged", "missing_record", "no_runs"]
    run: str
    message: str
    metric: str | None = None
    value: float | None = None
    bound: float | None = None
    stage: str | None = None
    decisive: bool = True  # False: reported but does not change a pass into a fail

    def __str__(self) -> str:
        return f"{self.run}: {self.message}"


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reasons: list[Reason] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    @property
    def passed(self) -> bool:
        return self.decision == "pass"


def judge_record(record: RunRecord, policy: PolicyConfig) -> list[Reason]:
    """Every way one run falls short of the policy."""
    run = f"{record.name} seed={record.seed}"
    reasons: list[Reason] = []
    if policy.fail_on_critical:
        for f in record.findings:
            if is_critical(f.code):
                reasons.append(
                    Reason(
                        "critical_code",
                        run,
                        f"{f.code} ({f.stage}): {f.message}. Fix: {f.fix}",
                        stage=f.stage,
                    )
                )
    bounds = [
        ("score.overall", record.overall_score, policy.min_overall),
        ("score.workflow", record.workflow_score, policy.min_workflow),
    ]
    if record.outcome:
        bounds.append(
            (f"outcome.{record.outcome.metric}", record.outcome.value, policy.min_outcome)
        )
    for metric, value, bound in bounds:
        if bound is not None and not value >= bound:  # NaN fails too
            reasons.append(
                Reason(
                    "threshold",
                    run,
                    f"{metric} = {value:.4f} < {bound:.4f}",
                    metric=metric,
                    value=value,
                    bound=bound,
                )
            )
    if policy.fail_on_unjudged:
        for s in record.stages:
            if s.status == "unjudged":
                reasons.append(
                    Reason("unjudged", run, f"stage {s.stage} could not be judged", stage=s.stage)
                )
    return reasons


def judge(
    records: list[RunRecord], policy: PolicyConfig, unreadable: list[str] | None = None
) -> Verdict:
    """The verdict over several runs: any decisive reason fails; nothing judged is undecided."""
    unreadable = unreadable or []
    reasons = [
        Reason(
            "missing_record",
            run_id,
            "run has no evaluation record (the gate did not finish it); re-run it",
        )
        for run_id in unreadable
    ]
    for record in records:
        reasons += judge_record(record, policy)
    names = [f"{r.name} seed={r.seed}" for r in records]
    if not records:
        return Verdict("undecided", [*reasons, Reason("no_runs", "-", "no runs to judge")], names)
    if unreadable:
        return Verdict("undecided", reasons, names)
    return Verdict("fail" if any(r.decisive for r in reasons) else "pass", reasons, names)
