"""Turns a finished workspace into a run record: stage rubrics, outcome, error codes, scores."""

from __future__ import annotations

import math

from gate.contract import PREDICTIONS_DIR, STAGES, Stage
from gate.evidence import Evidence
from gate.metrics import macro_aggregate
from gate.record import CaseResult, Finding, Outcome, StageResult
from gate.rubrics import RUBRICS


def judge_stages(ev: Evidence) -> list[StageResult]:
    return [RUBRICS.get(stage.value)(ev) for stage in STAGES]


def score_outcome(ev: Evidence) -> Outcome:
    """Score S4 predictions against the hidden labels; a missing or invalid case scores worst."""
    labels = ev.contract.foreground_labels()
    problems, scores = ev.score_cases(PREDICTIONS_DIR, ev.test_ids)
    agg = macro_aggregate(scores, labels)
    cases = [
        CaseResult(
            case_id=cid,
            present=problems[cid] != ["missing"],
            valid=not problems[cid],
            per_label={str(k): v for k, v in scores[cid].items()},
            value=agg.per_case[cid],
        )
        for cid in ev.test_ids
    ]
    return Outcome(
        metric=ev.metric.name,
        greater_is_better=ev.metric.greater_is_better,
        value=agg.value,
        per_label={str(k): v for k, v in agg.per_label.items()},
        n_cases=agg.n_cases,
        n_missing=sum(1 for c in cases if not c.present),
        n_nan=agg.n_nan,
        cases=cases,
    )


def run_findings(ev: Evidence, stages: list[StageResult]) -> list[Finding]:
    """RUN-* codes: what happened to the agent process itself."""
    p = ev.process
    out = []
    if p.timed_out:
        out.append(
            Finding.of(
                "RUN-TIMEOUT",
                f"stopped after {p.wall_s:.1f} s; budget {ev.budget.wall_clock_s:g} s",
            )
        )
    elif p.memory_exceeded:
        out.append(
            Finding.of(
                "RUN-MEMORY",
                f"resident memory {p.peak_rss_mb:.0f} MB > budget {ev.budget.memory_gb:g} GB",
            )
        )
    elif p.exit_code != 0:
        out.append(Finding.of("RUN-CRASH", f"exit code {p.exit_code}; see {p.stderr_log}"))
    else:
        empty = [s.stage for s in stages if not s.artifacts]
        if empty:
            out.append(
                Finding.of(
                    "RUN-INCOMPLETE", f"exited 0 without artifacts for stages {', '.join(empty)}"
                )
            )
    return out


def workflow_score(stages: list[StageResult], weights: dict[str, float]) -> float:
    """Weighted mean over the judged stages; unjudged stages are reported, not scored 0."""
    judged = [(weights.get(s.stage, 0.0), s.score) for s in stages if s.score is not None]
    total = sum(w for w, _ in judged)
    return sum(w * v for w, v in judged) / total if total else 0.0


def overall_score(workflow: float, outcome: Outcome | None) -> float:
    value = outcome.value if outcome and not math.isnan(outcome.value) else 0.0
    if outcome and not outcome.greater_is_better:
        raise NotImplementedError("overall score for lower-is-better outcomes needs a task scale")
    return 0.5 * workflow + 0.5 * value


def rating(overall: float, thresholds: dict[str, float]) -> str:
    for grade, bound in sorted(thresholds.items(), key=lambda kv: -kv[1]):
        if overall >= bound:
            return grade
    return "F"


__all__ = [
    "Stage",
    "judge_stages",
    "overall_score",
    "rating",
    "run_findings",
    "score_outcome",
    "workflow_score",
]
