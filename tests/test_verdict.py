"""The verdict lists every reason and maps to exit codes 0 / 1 / 2."""

from gate.config import PolicyConfig
from gate.record import (
    CaseResult,
    Finding,
    Outcome,
    ProcessResult,
    RunRecord,
    StageResult,
)
from gate.verdict import judge

POLICY = PolicyConfig(name="t", min_overall=0.5)


def record(overall=0.9, codes=(), unjudged=(), outcome=0.8, seed=0) -> RunRecord:
    stages = [StageResult(stage=s, status="unjudged" if s in unjudged else "judged",
                          score=None if s in unjudged else 1.0)
              for s in ("plan", "setup", "validate", "inference", "submit")]
    return RunRecord(
        name="t/a/lite", task="t", agent="a", tier="lite", seed=seed, invocation="i",
        workspace="/w", started_at=0, finished_at=1,
        process=ProcessResult(argv=[], exit_code=0, wall_s=1, stdout_log="o", stderr_log="e"),
        stages=stages,
        outcome=Outcome(metric="dice", greater_is_better=True, value=outcome, per_label={},
                        n_cases=1, n_missing=0, n_nan=0,
                        cases=[CaseResult(case_id="c", present=True, valid=True, per_label={},
                                          value=outcome)]),
        findings=[Finding.of(c, "evidence") for c in codes], workflow_score=1.0,
        overall_score=overall, rating="A", verdict="pass", reasons=[])


def test_all_pass_exits_0():
    v = judge([record(), record(seed=1)], POLICY)
    assert v.decision == "pass" and v.exit_code == 0 and v.reasons == []


def test_threshold_equality_passes_and_below_fails():
    assert judge([record(overall=0.5)], POLICY).passed
    v = judge([record(overall=0.4999)], POLICY)
    assert v.exit_code == 1
    assert v.reasons[0].kind == "threshold" and v.reasons[0].bound == 0.5


def test_critical_code_fails_whatever_the_score():
    v = judge([record(overall=0.99, codes=["VALID-LEAK-PATIENT"])], POLICY)
    assert v.exit_code == 1
    assert "VALID-LEAK-PATIENT" in str(v.reasons[0])
    assert "group k-fold" in str(v.reasons[0])  # the fix travels with the reason


def test_minor_code_alone_does_not_fail():
    assert judge([record(codes=["PLAN-OVER-BUDGET"])], POLICY).passed


def test_every_reason_is_collected():
    v = judge([record(overall=0.1, codes=["RUN-CRASH", "INFER-MISSING-CASES"],
                      unjudged=["setup"])], POLICY)
    assert sorted(r.kind for r in v.reasons) == ["critical_code", "critical_code", "threshold",
                                                   "unjudged"]


def test_nothing_judged_is_undecided():
    v = judge([], POLICY)
    assert v.decision == "undecided" and v.exit_code == 2


def test_run_without_record_is_undecided():
    v = judge([record()], POLICY, unreadable=["abc123"])
    assert v.exit_code == 2
    assert "abc123" in str(v.reasons[0])


def test_nan_outcome_fails_a_minimum():
    policy = PolicyConfig(name="t", min_overall=0.0, min_outcome=0.5)
    assert judge([record(outcome=float("nan"))], policy).exit_code == 1
