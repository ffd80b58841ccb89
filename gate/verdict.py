"""Policy + run records (+ baselines) → a verdict that lists every reason.

Runs of one configuration (task, agent, tier) over several seeds form a group: thresholds apply
to the group's mean, critical codes to every run, and non-regression compares the group's
per-case outcomes with its baseline's by a paired bootstrap. Nothing stops at the first reason.
Exit codes: 0 pass, 1 fail, 2 could not decide.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

from gate.config import PolicyConfig
from gate.errors import is_critical
from gate.record import RunRecord
from gate.stats import MeanSE, PairedDelta, mean_se, paired_bootstrap

Decision = Literal["pass", "fail", "undecided"]
EXIT_CODES: dict[str, int] = {"pass": 0, "fail": 1, "undecided": 2}
GroupKey = tuple[str, str, str]  # task, agent, tier
Kind = Literal[
    "critical_code",
    "threshold",
    "regression",
    "unjudged",
    "missing_record",
    "missing_baseline",
    "no_runs",
]


@dataclass(frozen=True)
class Reason:
    """One reason against a pass; names the run, the metric, the value and the bound."""

    kind: Kind
    run: str
    message: str
    effect: Literal["fail", "undecided", "notice"] = "fail"
    metric: str | None = None
    value: float | None = None
    bound: float | None = None
    stage: str | None = None
    code: str | None = None

    def __str__(self) -> str:
        return f"{self.run}: {self.message}"


@dataclass
class Group:
    key: GroupKey
    records: list[RunRecord]
    baseline: list[RunRecord] = field(default_factory=list)
    delta: PairedDelta | None = None

    @property
    def name(self) -> str:
        return "/".join(self.key)

    @property
    def overall(self) -> MeanSE:
        return mean_se([r.overall_score for r in self.records])

    @property
    def workflow(self) -> MeanSE:
        return mean_se([r.workflow_score for r in self.records])

    @property
    def outcome(self) -> MeanSE:
        return mean_se([r.outcome.value if r.outcome else math.nan for r in self.records])

    def stage(self, name: str) -> MeanSE:
        return mean_se(
            [
                s.score if s.score is not None else math.nan
                for r in self.records
                for s in r.stages
                if s.stage == name
            ]
        )


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reasons: list[Reason] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    policy: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    @property
    def passed(self) -> bool:
        return self.decision == "pass"

    @property
    def records(self) -> list[RunRecord]:
        return [r for g in self.groups for r in g.records]


def key_of(record: RunRecord) -> GroupKey:
    return (record.task, record.agent, record.tier)


def group_records(records: list[RunRecord]) -> list[Group]:
    by_key: dict[GroupKey, list[RunRecord]] = defaultdict(list)
    for r in records:
        by_key[key_of(r)].append(r)
    return [Group(k, sorted(v, key=lambda r: r.seed)) for k, v in sorted(by_key.items())]


def per_case(records: list[RunRecord]) -> dict[str, float]:
    """Each case's outcome averaged over seeds (a missing case already scores the worst value)."""
    values: dict[str, list[float]] = defaultdict(list)
    for r in records:
        for c in r.outcome.cases if r.outcome else []:
            values[c.case_id].append(c.value if not math.isnan(c.value) else 0.0)
    return {cid: sum(v) / len(v) for cid, v in values.items()}


def _run_reasons(record: RunRecord, policy: PolicyConfig) -> list[Reason]:
    run = f"{record.name} seed={record.seed}"
    reasons = []
    for f in record.findings:
        if (policy.fail_on_critical and is_critical(f.code)) or f.code in policy.critical_codes:
            reasons.append(
                Reason(
                    "critical_code",
                    run,
                    f"{f.code} in {f.stage}: {f.message}"
                    + ("" if "Fix:" in f.message else f". Fix: {f.fix}"),
                    stage=f.stage,
                    code=f.code,
                )
            )
    if policy.fail_on_unjudged:
        reasons += [
            Reason("unjudged", run, f"stage {s.stage} could not be judged", stage=s.stage)
            for s in record.stages
            if s.status == "unjudged"
        ]
    return reasons


def _threshold_reasons(group: Group, policy: PolicyConfig) -> list[Reason]:
    t = policy.thresholds_for(group.key[0], group.key[1])
    seeds = f" (mean of {len(group.records)} seeds)" if len(group.records) > 1 else ""
    metric = group.records[0].outcome.metric if group.records[0].outcome else "outcome"
    checks = [
        ("score.overall", group.overall, t.min_overall, None),
        ("score.workflow", group.workflow, t.min_workflow, None),
        (f"outcome.{metric}", group.outcome, t.min_outcome, None),
    ]
    checks += [(f"stage.{s}.score", group.stage(s), bound, s) for s, bound in t.min_stage.items()]
    reasons = []
    if t.min_outcome is not None:  # a seed without an outcome must not vanish from the mean
        reasons += [
            Reason(
                "threshold",
                f"{r.name} seed={r.seed}",
                f"outcome.{metric} is not a number (no prediction could be scored)",
                metric=f"outcome.{metric}",
                value=math.nan,
                bound=t.min_outcome,
            )
            for r in group.records
            if r.outcome is None or math.isnan(r.outcome.value)
        ]
    for name, value, bound, stage in checks:
        if bound is not None and not value.mean >= bound:  # NaN fails too
            reasons.append(
                Reason(
                    "threshold",
                    group.name,
                    f"{name} = {value}{seeds} is below the minimum {bound:g}",
                    metric=name,
                    value=value.mean,
                    bound=bound,
                    stage=stage,
                )
            )
    return reasons


def _regression_reasons(group: Group, policy: PolicyConfig) -> list[Reason]:
    rule = policy.regression
    if not rule.enabled:
        return []
    if not group.baseline:
        effect = "undecided" if policy.baseline.required else "notice"
        return [
            Reason(
                "missing_baseline",
                group.name,
                f"no baseline ({policy.baseline.rule} "
                f"rule) for this task, agent and tier: regression not checked",
                effect=effect,
            )
        ]
    cand, base = per_case(group.records), per_case(group.baseline)
    greater = group.records[0].outcome.greater_is_better if group.records[0].outcome else True
    try:
        group.delta = paired_bootstrap(cand, base, greater, rule.confidence, rule.n_resamples)
    except ValueError as exc:
        return [
            Reason(
                "missing_baseline",
                group.name,
                f"baseline not comparable: {exc}",
                effect="undecided",
            )
        ]
    metric = group.records[0].outcome.metric if group.records[0].outcome else "outcome"
    if group.delta.high < -rule.tolerance:
        return [
            Reason(
                "regression",
                group.name,
                f"outcome.{metric} regressed by "
                f"{group.delta} ({rule.confidence:.0%} interval, {group.delta.n_pairs} "
                f"paired cases) beyond the tolerance {rule.tolerance:g}",
                metric=f"outcome.{metric}",
                value=group.delta.delta,
                bound=-rule.tolerance,
            )
        ]
    return []


def judge_record(record: RunRecord, policy: PolicyConfig) -> list[Reason]:
    """The reasons one run, on its own and without a baseline, falls short of the policy."""
    group = Group(key_of(record), [record])
    return _run_reasons(record, policy) + _threshold_reasons(group, policy)


def judge(
    records: list[RunRecord],
    policy: PolicyConfig,
    baselines: dict[GroupKey, list[RunRecord]] | None = None,
    unreadable: list[str] | None = None,
) -> Verdict:
    """Fail on any failing reason; could not decide when something needed is missing; never
    pass when nothing was judged."""
    groups = group_records(records)
    reasons = [
        Reason(
            "missing_record",
            run_id,
            "run has no evaluation record (the gate did not finish it); re-run it",
            effect="undecided",
        )
        for run_id in unreadable or []
    ]
    for group in groups:
        group.baseline = (baselines or {}).get(group.key, [])
        for record in group.records:
            reasons += _run_reasons(record, policy)
        reasons += _threshold_reasons(group, policy)
        reasons += _regression_reasons(group, policy)
    if not records:
        reasons.append(
            Reason("no_runs", "-", "no runs matched: nothing to judge", effect="undecided")
        )
    effects = {r.effect for r in reasons}
    decision: Decision = (
        "fail" if "fail" in effects else "undecided" if "undecided" in effects else "pass"
    )
    return Verdict(decision, reasons, groups, policy.name)
