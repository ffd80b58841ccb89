"""The deterministic rubric of each stage: named items scored 0..1 with a reason, plus codes.

A rubric scores what only it can see (an artifact is present and parses) and takes every other
item and code from the enabled Great Expectations checks of its stage (``checks/``), so each
rule has one implementation. Nothing here trusts what the agent says about itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from checks import enabled
from gate.contract import (
    ENVIRONMENT_FILE,
    MANIFEST_FILE,
    PLAN_FILE,
    PREDICTIONS_DIR,
    SETUP_CODE_DIR,
    SMOKE_FILE,
    SPLIT_FILE,
    STAGE_ARTIFACTS,
    VALIDATION_PREDICTIONS_DIR,
    VALIDATION_REPORT_FILE,
    Stage,
)
from gate.errors import ArtifactError, ConfigError
from gate.evidence import Evidence, StageBuilder
from gate.record import StageResult
from gate.registry import Registry, UnknownNameError

Rubric = Callable[[Evidence], StageResult]
RUBRICS: Registry[Rubric] = Registry("stage rubric")


def _artifacts(ev: Evidence, stage: Stage) -> list[str]:
    return [rel for rel in STAGE_ARTIFACTS[stage] if ev.present(rel)]


# the code a stage earns when its artifacts are too malformed for a check to read at all
UNREADABLE_CODE = {
    Stage.PLAN: "PLAN-MISSING",
    Stage.SETUP: "SETUP-NO-SMOKE",
    Stage.VALIDATE: "VALID-PRED-INVALID",
    Stage.INFERENCE: "INFER-FORMAT",
    Stage.SUBMIT: "SUBMIT-SCHEMA",
}


def _with_checks(ev: Evidence, b: StageBuilder, stage: Stage) -> StageResult:
    """Run the stage's enabled checks into ``b`` and close the stage."""
    try:
        checks = enabled(list(ev.task_cfg.checks), stage.value)
    except UnknownNameError as exc:
        raise ConfigError(
            f"conf/task/{ev.task_cfg.name}.yaml", "checks", str(exc), "use names of checks.CHECKS"
        ) from None
    for check in checks:
        try:
            out = check.run(ev)
        except Exception as exc:  # malformed artifacts must not crash the gate: they fail the stage
            b.item(
                f"{check.name}_ran",
                0,
                f"check {check.name} could not read the artifacts: "
                f"{type(exc).__name__}: {str(exc)[:200]}",
            )
            b.code(
                UNREADABLE_CODE[stage],
                f"check {check.name} could not read {stage.value} "
                f"artifacts ({type(exc).__name__}: {str(exc)[:200]}). Fix: write them in the "
                "contract's formats (gate/contract.py, task.json)",
            )
            continue
        b.absorb(out.name, out.items, out.findings, out.result)
    return b.result(_artifacts(ev, stage))


@RUBRICS.register(Stage.PLAN.value)
def plan_rubric(ev: Evidence) -> StageResult:
    b = StageBuilder(Stage.PLAN.value)
    plan, task = ev.plan, ev.contract
    if isinstance(plan, ArtifactError):
        b.item("plan_parses", 0, str(plan))
        for name in ("task_type_matches", "split_grouped", "within_budget"):
            b.item(name, 0, "no valid plan")
        b.code("PLAN-MISSING", f"{plan}. Fix: write {PLAN_FILE} with the fields of Plan")
        return _with_checks(ev, b, Stage.PLAN)
    b.item("plan_parses", 1, f"{PLAN_FILE} validates")
    if not b.item(
        "task_type_matches",
        plan.task_type == task.task_type,
        f"plan says {plan.task_type.value}, task.json {task.task_type.value}",
    ):
        b.code(
            "PLAN-TASK-MISMATCH",
            f"{PLAN_FILE}: task_type={plan.task_type.value}, task.json says "
            f"{task.task_type.value}. Fix: copy task_type from task.json",
        )
    grouped = plan.split.strategy.startswith("group_") and plan.split.group_key == task.grouping_key
    if not b.item(
        "split_grouped",
        grouped,
        f"split {plan.split.strategy} by {plan.split.group_key!r}; "
        f"task groups by {task.grouping_key!r}",
    ):
        b.code(
            "PLAN-SPLIT-UNGROUPED",
            f"{PLAN_FILE}: split.strategy={plan.split.strategy}, split.group_key="
            f"{plan.split.group_key!r}. Fix: plan a group_* split by {task.grouping_key}",
        )
    budget = float(task.budget.get("wall_clock_s") or 0)
    if not b.item(
        "within_budget",
        not budget or plan.budget_s <= budget,
        f"plan budget_s={plan.budget_s:g}, run budget {budget:g} s",
    ):
        b.code(
            "PLAN-OVER-BUDGET",
            f"{PLAN_FILE}: budget_s={plan.budget_s:g} > {budget:g}. Fix: keep budget_s within "
            "task.json's budget.wall_clock_s",
        )
    return _with_checks(ev, b, Stage.PLAN)


@RUBRICS.register(Stage.SETUP.value)
def setup_rubric(ev: Evidence) -> StageResult:
    b = StageBuilder(Stage.SETUP.value)
    code_dir = ev.path(SETUP_CODE_DIR)
    files = [p for p in code_dir.rglob("*") if p.is_file()] if code_dir.is_dir() else []
    if not b.item("code_present", bool(files), f"{len(files)} files in {SETUP_CODE_DIR}/"):
        b.code(
            "SETUP-NO-CODE",
            f"{SETUP_CODE_DIR}/ is missing or empty. Fix: copy the pipeline code there",
        )
    env_ok = ev.present(ENVIRONMENT_FILE)
    if not b.item(
        "environment_captured", env_ok, f"{ENVIRONMENT_FILE} {'present' if env_ok else 'missing'}"
    ):
        b.code(
            "SETUP-NO-ENV",
            f"{ENVIRONMENT_FILE} is missing or empty. Fix: write `pip freeze` output to it",
        )
    smoke = ev.smoke
    if isinstance(smoke, ArtifactError) or not smoke.ok:
        why = str(smoke) if isinstance(smoke, ArtifactError) else f"{SMOKE_FILE} says ok: false"
        b.item("smoke_recorded", 0, why)
        b.code("SETUP-NO-SMOKE", f"{why}. Fix: run one batch and record it in {SMOKE_FILE}")
    else:
        b.item(
            "smoke_recorded",
            1,
            f"smoke batch {smoke.batch_shape} on {smoke.device} in {smoke.seconds:.1f} s "
            "(reported, not verified; its code hash is checked by traceability)",
        )
    return _with_checks(ev, b, Stage.SETUP)


@RUBRICS.register(Stage.VALIDATE.value)
def validate_rubric(ev: Evidence) -> StageResult:
    b = StageBuilder(Stage.VALIDATE.value)
    split, report = ev.split, ev.report
    missing = [
        rel
        for rel, gone in (
            (SPLIT_FILE, not ev.path(SPLIT_FILE).is_file()),
            (VALIDATION_PREDICTIONS_DIR + "/", not ev.present(VALIDATION_PREDICTIONS_DIR)),
            (VALIDATION_REPORT_FILE, not ev.path(VALIDATION_REPORT_FILE).is_file()),
        )
        if gone
    ]
    if missing:  # a claim without its split or predictions cannot be checked: that is no validation
        b.code(
            "VALID-MISSING",
            f"{', '.join(missing)} missing. Fix: hold out patients, predict them, and write "
            f"{SPLIT_FILE}, {VALIDATION_PREDICTIONS_DIR}/ and {VALIDATION_REPORT_FILE}",
        )
    elif not isinstance(split, ArtifactError) and not isinstance(report, ArtifactError):
        _judge_fold_roles(b, split, report.validation_folds)
    b.item(
        "split_parses",
        not isinstance(split, ArtifactError),
        str(split) if isinstance(split, ArtifactError) else f"{SPLIT_FILE} parses",
    )
    if isinstance(split, ArtifactError) and SPLIT_FILE not in missing:
        b.code("VALID-SPLIT-INVALID", f"{split}. Fix: write columns case_id,patient_id,fold")
    b.item(
        "report_parses",
        not isinstance(report, ArtifactError),
        str(report) if isinstance(report, ArtifactError) else f"{VALIDATION_REPORT_FILE} validates",
    )
    if isinstance(report, ArtifactError) and VALIDATION_REPORT_FILE not in missing:
        b.code("VALID-MISSING", f"{report}. Fix: write the fields of ValidationReport")
    return _with_checks(ev, b, Stage.VALIDATE)


def _judge_fold_roles(b: StageBuilder, split: Any, validation_folds: list[int]) -> None:
    """Validation needs held-out cases and training cases: both fold roles must be non-empty."""
    in_val = split["fold"].isin(validation_folds)
    n_val, n_train = int(in_val.sum()), int((~in_val).sum())
    if not b.item(
        "folds_have_roles",
        n_val > 0 and n_train > 0,
        f"{n_val} validation and {n_train} training cases",
    ):
        b.code(
            "VALID-SPLIT-INVALID",
            f"{SPLIT_FILE} with validation_folds {validation_folds} of "
            f"{VALIDATION_REPORT_FILE}: {n_val} validation and {n_train} training cases. "
            "Fix: hold out some patients' cases and train on the others",
        )


@RUBRICS.register(Stage.INFERENCE.value)
def inference_rubric(ev: Evidence) -> StageResult:
    b = StageBuilder(Stage.INFERENCE.value)
    # Presence is the "predictions" check's completion item; an empty stage stays judged so
    # that missing predictions score 0 instead of vanishing from the workflow score.
    return _with_checks(ev, b, Stage.INFERENCE)


@RUBRICS.register(Stage.SUBMIT.value)
def submit_rubric(ev: Evidence) -> StageResult:
    b = StageBuilder(Stage.SUBMIT.value)
    spec = ev.contract.submission
    manifest = ev.manifest
    index_ok = ev.path(spec.index_file).is_file()
    if isinstance(manifest, ArtifactError) or not index_ok:
        why = (
            str(manifest) if isinstance(manifest, ArtifactError) else f"{spec.index_file}: missing"
        )
        b.item("submission_present", 0, why)
        b.code("SUBMIT-MISSING", f"{why}. Fix: write {spec.index_file} and {MANIFEST_FILE}")
    else:
        b.item("submission_present", 1, f"{spec.index_file} and {MANIFEST_FILE} present")
    return _with_checks(ev, b, Stage.SUBMIT)


__all__ = ["PREDICTIONS_DIR", "RUBRICS"]
