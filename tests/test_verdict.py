"""The verdict lists every reason and maps to exit codes 0 / 1 / 2 (named by scenario)."""

import random

from gate.cli import compose
from gate.config import PolicyConfig, RegressionConfig, ThresholdConfig
from gate.record import CaseResult, Finding, Outcome, ProcessResult, RunRecord, StageResult
from gate.verdict import judge

POLICY = PolicyConfig(name="t", thresholds=ThresholdConfig(min_overall=0.5))
KEY = ("t", "a", "lite")


def record(overall=0.9, codes=(), unjudged=(), cases=None, seed=0, stage_score=1.0) -> RunRecord:
    cases = cases if cases is not None else {"c1": 0.8, "c2": 0.8}
    stages = [StageResult(stage=s, status="unjudged" if s in unjudged else "judged",
                          score=None if s in unjudged else stage_score)
              for s in ("plan", "setup", "validate", "inference", "submit")]
    value = sum(cases.values()) / len(cases)
    return RunRecord(
        name="t/a/lite", task="t", agent="a", tier="lite", seed=seed, invocation="i",
        workspace="/w", started_at=0, finished_at=1,
        process=ProcessResult(argv=[], exit_code=0, wall_s=1, stdout_log="o", stderr_log="e"),
        stages=stages,
        outcome=Outcome(metric="dice", greater_is_better=True, value=value, per_label={},
                        n_cases=len(cases), n_missing=0, n_nan=0,
                        cases=[CaseResult(case_id=c, present=True, valid=True, per_label={},
                                          value=v) for c, v in cases.items()]),
        findings=[Finding.of(c, "evidence") for c in codes], workflow_score=stage_score,
        overall_score=overall, rating="A", verdict="pass", reasons=[])


def regression_policy(**baseline) -> PolicyConfig:
    policy = PolicyConfig(name="t", thresholds=ThresholdConfig(min_overall=0.5),
                          regression=RegressionConfig(enabled=True, tolerance=0.02))
    for k, v in baseline.items():
        setattr(policy.baseline, k, v)
    return policy


def cases(mean: float, n: int = 30, noise: float = 0.05, seed: int = 0) -> dict[str, float]:
    rng = random.Random(seed)
    return {f"c{i:02d}": min(1.0, max(0.0, mean + rng.uniform(-noise, noise))) for i in range(n)}


def test_all_pass_exits_0():
    v = judge([record(), record(seed=1)], POLICY)
    assert v.decision == "pass" and v.exit_code == 0 and v.reasons == []
    assert len(v.groups) == 1 and v.groups[0].overall.n == 2


def test_threshold_equality_passes_and_below_fails():
    assert judge([record(overall=0.5)], POLICY).passed
    v = judge([record(overall=0.4999)], POLICY)
    assert v.exit_code == 1
    assert v.reasons[0].kind == "threshold" and v.reasons[0].bound == 0.5
    assert v.reasons[0].metric == "score.overall"


def test_thresholds_apply_to_the_mean_over_seeds():
    v = judge([record(overall=0.45, seed=0), record(overall=0.6, seed=1)], POLICY)
    assert v.passed


def test_per_task_and_per_stage_minimums():
    policy = PolicyConfig(name="t", thresholds=ThresholdConfig(min_overall=0.1),
                          per_task={"t": ThresholdConfig(min_stage={"validate": 0.95})})
    v = judge([record(stage_score=0.9)], policy)
    assert v.exit_code == 1
    assert v.reasons[0].stage == "validate" and v.reasons[0].bound == 0.95


def test_critical_code_with_a_high_score_fails():
    v = judge([record(overall=0.99, codes=["VALID-LEAK-PATIENT"])], POLICY)
    assert v.exit_code == 1
    assert "VALID-LEAK-PATIENT" in str(v.reasons[0])
    assert "group k-fold" in str(v.reasons[0])  # the fix travels with the reason


def test_minor_code_alone_does_not_fail_unless_the_policy_names_it():
    assert judge([record(codes=["PLAN-OVER-BUDGET"])], POLICY).passed
    strict = PolicyConfig(name="t", critical_codes=["PLAN-OVER-BUDGET"])
    assert judge([record(codes=["PLAN-OVER-BUDGET"])], strict).exit_code == 1


def test_every_reason_is_collected():
    v = judge([record(overall=0.1, codes=["RUN-CRASH", "INFER-MISSING-CASES"],
                      unjudged=["setup"])], POLICY)
    assert sorted(r.kind for r in v.reasons) == ["critical_code", "critical_code", "threshold",
                                                   "unjudged"]


def test_no_runs_cannot_decide():
    v = judge([], POLICY)
    assert v.decision == "undecided" and v.exit_code == 2


def test_run_without_record_cannot_decide():
    v = judge([record()], POLICY, unreadable=["abc123"])
    assert v.exit_code == 2
    assert "abc123" in str(v.reasons[0])


def test_nan_outcome_fails_a_minimum():
    policy = PolicyConfig(name="t", thresholds=ThresholdConfig(min_outcome=0.5))
    assert judge([record(cases={"c": float("nan")})], policy).exit_code == 1


def test_significant_regression_fails():
    base = [record(cases=cases(0.85, seed=1))]
    cand = [record(cases=cases(0.70, seed=2))]
    v = judge(cand, regression_policy(), {KEY: base})
    assert v.exit_code == 1
    reason = next(r for r in v.reasons if r.kind == "regression")
    assert reason.value < -0.1 and reason.bound == -0.02
    assert v.groups[0].delta.high < -0.02


def test_non_significant_drop_passes():
    base = [record(cases=cases(0.80, noise=0.2, seed=1))]
    cand = [record(cases=cases(0.79, noise=0.2, seed=2))]
    v = judge(cand, regression_policy(), {KEY: base})
    assert v.passed, v.reasons
    assert v.groups[0].delta.low < -0.02 < v.groups[0].delta.high


def test_missing_baseline_is_a_notice_unless_required():
    assert judge([record()], regression_policy(), {}).passed
    v = judge([record()], regression_policy(required=True), {})
    assert v.exit_code == 2
    assert v.reasons[0].kind == "missing_baseline"


def test_shipped_policies_compose():
    for name in ("default", "pr", "nightly", "release"):
        policy = compose([f"policy={name}"]).policy
        assert policy.name == name
    release = compose(["policy=release"]).policy
    assert release.baseline.required and release.regression.enabled
    assert release.thresholds_for("seg_phantom", "x").min_outcome == 0.8


def test_a_seed_without_an_outcome_does_not_hide_in_the_mean():
    policy = PolicyConfig(name="t", thresholds=ThresholdConfig(min_outcome=0.5))
    v = judge([record(seed=0), record(seed=1, cases={"c": float("nan")})], policy)
    assert v.exit_code == 1
    assert any("seed=1" in str(r) and "not a number" in r.message for r in v.reasons)
