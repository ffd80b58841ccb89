"""Renders a verdict as plain text (terminal, CI log) and Markdown (file, job summary, PR).

A reader of the report alone should know what failed, in which stage, and what to change:
the verdict and its reasons come first, then one table per configuration, then the fixes.
"""

from __future__ import annotations

import math
from pathlib import Path

from gate.contract import STAGE_LABELS, STAGES
from gate.errors import lookup
from gate.record import RunRecord
from gate.stats import case_interval
from gate.verdict import Group, Reason, Verdict, per_case

MARK = {"pass": "PASS", "fail": "FAIL", "undecided": "COULD NOT DECIDE"}
ICON = {"pass": "✅", "fail": "❌", "undecided": "⚠️"}
EFFECT_TITLE = {"fail": "Failing", "undecided": "Could not decide", "notice": "Notices"}


def _f(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"


def run_url(record: RunRecord, ui_url: str | None) -> str | None:
    if not ui_url or not record.mlflow_run_id or not record.mlflow_experiment_id:
        return None
    return (
        f"{ui_url.rstrip('/')}/#/experiments/{record.mlflow_experiment_id}/runs/"
        f"{record.mlflow_run_id}"
    )


def outcome_cell(group: Group) -> str:
    cases = per_case(group.records)
    if not cases:
        return "-"
    low, high = case_interval(list(cases.values()))
    return f"{group.outcome} [{low:.3f}, {high:.3f}]"


def summary_line(verdict: Verdict) -> str:
    counts = {e: sum(1 for r in verdict.reasons if r.effect == e) for e in EFFECT_TITLE}
    parts = [f"{n} {e}" for e, n in counts.items() if n]
    runs = len(verdict.records)
    policy = f" by policy `{verdict.policy}`" if verdict.policy else ""
    return f"medgate: {MARK[verdict.decision]} — {runs} run{'s' * (runs != 1)} judged{policy}" + (
        f", {', '.join(parts)}" if parts else ""
    )


def _reasons_by_effect(reasons: list[Reason]) -> list[tuple[str, list[Reason]]]:
    return [
        (e, [r for r in reasons if r.effect == e])
        for e in EFFECT_TITLE
        if any(r.effect == e for r in reasons)
    ]


def stage_bars(group: Group, width: int = 20) -> list[str]:
    """A stage profile drawn in text, so it shows in logs and pull-request comments alike."""
    lines = []
    for stage in STAGES:
        value = group.stage(stage.value)
        filled = 0 if math.isnan(value.mean) else round(value.mean * width)
        lines.append(
            f"{STAGE_LABELS[stage]:<13} {'█' * filled}{'░' * (width - filled)} {_f(value.mean)}"
        )
    return lines


def render_text(verdict: Verdict) -> str:
    out = [summary_line(verdict)]
    for effect, reasons in _reasons_by_effect(verdict.reasons):
        out += ["", f"{EFFECT_TITLE[effect]}:"] + [f"  - {r}" for r in reasons]
    for g in verdict.groups:
        out += [
            "",
            f"{g.name}  ({len(g.records)} run{'s' * (len(g.records) != 1)})",
            f"  overall {g.overall}  workflow {g.workflow}  outcome {outcome_cell(g)}"
            + (f"  delta vs baseline {g.delta}" if g.delta else ""),
        ]
        out += [f"  {line}" for line in stage_bars(g)]
        for r in g.records:
            out.append(
                f"  seed {r.seed}: {r.verdict.upper()} overall {_f(r.overall_score)} "
                f"rating {r.rating} codes {','.join(r.codes) or 'none'}"
            )
    return "\n".join(out)


def render_markdown(verdict: Verdict, ui_url: str | None = None, figure: str | None = None) -> str:
    out = [f"## {ICON[verdict.decision]} {summary_line(verdict)}", ""]
    for effect, reasons in _reasons_by_effect(verdict.reasons):
        out += [f"**{EFFECT_TITLE[effect]}**", ""] + [f"- {_md(r)}" for r in reasons] + [""]
    stage_heads = [f"S{i}" for i in range(1, len(STAGES) + 1)]
    for g in verdict.groups:
        out += [
            f"### {g.name}",
            "",
            f"Overall **{g.overall}**, workflow **{g.workflow}**, outcome "
            f"**{outcome_cell(g)}** (mean ± s.e. over seeds, [95% interval over cases])"
            + (
                f", delta vs baseline **{g.delta}** over {g.delta.n_pairs} paired cases"
                if g.delta
                else ", no baseline compared"
            )
            + ".",
            "",
            "| seed | verdict | " + " | ".join(stage_heads) + " | workflow | outcome | "
            "rating | error codes | run |",
            "|---" * (len(stage_heads) + 8) + "|",
        ]
        for r in g.records:
            url = run_url(r, ui_url)
            stages = [_f(s.score) if s.status == "judged" else "unjudged" for s in r.stages]
            out.append(
                f"| {r.seed} | {r.verdict.upper()} | "
                + " | ".join(stages)
                + f" | {_f(r.workflow_score)} | {_f(r.outcome.value if r.outcome else None)}"
                f" | {r.rating} | {', '.join(f'`{c}`' for c in r.codes) or 'none'} | "
                + (f"[MLflow]({url})" if url else r.mlflow_run_id or "-")
                + " |"
            )
        out += ["", "```", *stage_bars(g), "```", ""]
        codes = sorted({f.code for r in g.records for f in r.findings})
        if codes:
            out += ["| code | stage | severity | what it means | fix |", "|---|---|---|---|---|"]
            for code in codes:
                e = lookup(code)
                out.append(
                    f"| `{code}` | {e.stage} | {e.severity.value} | {e.description} | {e.fix} |"
                )
            out.append("")
    if figure:
        out += [f"![stage profile]({figure})", ""]
    return "\n".join(out)


def _md(reason: Reason) -> str:
    return f"**{reason.run}**: {reason.message}".replace("|", "\\|")


def stage_figure(verdict: Verdict, path: Path) -> Path | None:
    """A stage-profile bar chart (PNG) per configuration; None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.2))
    n = max(1, len(verdict.groups))
    width = 0.8 / n
    for i, g in enumerate(verdict.groups):
        values = [g.stage(s.value).mean for s in STAGES]
        xs = [k + i * width for k in range(len(STAGES))]
        ax.bar(xs, [0 if math.isnan(v) else v for v in values], width, label=g.name)
    ax.set_xticks(
        [k + 0.4 - width / 2 for k in range(len(STAGES))], [STAGE_LABELS[s] for s in STAGES]
    )
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("stage score")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
