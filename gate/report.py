"""Renders a verdict and its runs as plain text (terminal, CI log) or Markdown (files, PRs)."""

from __future__ import annotations

from gate.contract import STAGES
from gate.record import RunRecord
from gate.verdict import Verdict

MARK = {"pass": "PASS", "fail": "FAIL", "undecided": "UNDECIDED"}


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rows(records: list[RunRecord]) -> list[list[str]]:
    rows = []
    for r in records:
        stage_scores = [_fmt(s.score) for s in r.stages]
        outcome = _fmt(r.outcome.value) if r.outcome else "-"
        rows.append(
            [
                r.name,
                str(r.seed),
                r.verdict.upper(),
                _fmt(r.overall_score),
                _fmt(r.workflow_score),
                outcome,
                *stage_scores,
                r.rating,
                ",".join(r.codes) or "none",
            ]
        )
    return rows


HEADER = [
    "run",
    "seed",
    "verdict",
    "overall",
    "workflow",
    "outcome",
    *[f"S{i}" for i in range(1, len(STAGES) + 1)],
    "rating",
    "error codes",
]


def render_text(verdict: Verdict, records: list[RunRecord]) -> str:
    rows = [HEADER, *_rows(records)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    out = [f"medgate verdict: {MARK[verdict.decision]} ({len(records)} runs judged)", "", *lines]
    if verdict.reasons:
        out += ["", "Reasons:"] + [f"  - {r}" for r in verdict.reasons]
    return "\n".join(out)


def render_markdown(verdict: Verdict, records: list[RunRecord]) -> str:
    out = [f"## medgate: {MARK[verdict.decision]}", ""]
    if verdict.reasons:
        out += ["**Reasons**", ""] + [f"- {r}" for r in verdict.reasons] + [""]
    out += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(row) + " |" for row in _rows(records)]
    return "\n".join(out) + "\n"
