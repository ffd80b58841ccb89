"""The deterministic rubric of each stage: named items scored 0..1 with a reason, plus codes.

Each rubric reads artifacts through ``Evidence`` and never trusts what the agent says about
itself: a claim counts only where the gate can recompute it.
"""

from __future__ import annotations

from collections.abc import Callable

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
    Manifest,
    Plan,
    SmokeRecord,
    Stage,
    ValidationReport,
    sha256_file,
    sha256_tree,
)
from gate.errors import ArtifactError
from gate.evidence import Evidence, StageBuilder, first_few
from gate.images import load_volume, prediction_problems
from gate.metrics import macro_aggregate
from gate.record import StageResult
from gate.registry import Registry

Rubric = Callable[[Evidence], StageResult]
RUBRICS: Registry[Rubric] = Registry("stage rubric")


def _artifacts(ev: Evidence, stage: Stage) -> list[str]:
    return [rel for rel in STAGE_ARTIFACTS[stage] if ev.present(rel)]


@RUBRICS.register(Stage.PLAN.value)
def plan_rubric(ev: Evidence) -> StageResult:
    b = StageBuilder(Stage.PLAN.value)
    plan = ev.model(PLAN_FILE, Plan)
    if isinstance(plan, ArtifactError):
        b.item("plan_parses", 0, str(plan))
        for name in (
            "task_type_matches",
            "metric_matches",
            "direction_matches",
            "split_grouped",
            "within_budget",
        ):
            b.item(name, 0, "no valid plan")
        b.code("PLAN-MISSING", str(plan))
        return b.result(_artifacts(ev, Stage.PLAN))
    task = ev.contract
    b.item("plan_parses", 1, f"{PLAN_FILE} validates")
    ok_type = b.item(
        "task_type_matches",
        plan.task_type == task.task_type,
        f"plan says {plan.task_type.value}, task.json {task.task_type.value}",
    )
    ok_metric = b.item(
        "metric_matches",
        plan.metric == task.metric.name,
        f"plan says {plan.metric!r}, task.json {task.metric.name!r}",
    )
    if not (ok_type and ok_metric):
        b.code(
            "PLAN-TASK-MISMATCH",
            f"{PLAN_FILE}: task_type={plan.task_type.value}, "
            f"metric={plan.metric}; task.json: {task.task_type.value}, {task.metric.name}",
        )
    if not b.item(
        "direction_matches",
        plan.greater_is_better == task.metric.greater_is_better,
        f"plan greater_is_better={plan.greater_is_better}, task.json "
        f"{task.metric.greater_is_better}",
    ):
        b.code(
            "PLAN-DIRECTION",
            f"{PLAN_FILE}: greater_is_better={plan.greater_is_better} but "
            f"{task.metric.name} has greater_is_better={task.metric.greater_is_better}",
        )
    grouped = plan.split.strategy.startswith("group_") and plan.split.group_key == task.grouping_key
    if not b.item(
        "split_grouped",
        grouped,
        f"split {plan.split.strategy} by "
        f"{plan.split.group_key!r}; task groups by {task.grouping_key!r}",
    ):
        b.code(
            "PLAN-SPLIT-UNGROUPED",
            f"{PLAN_FILE}: split.strategy={plan.split.strategy}, "
            f"split.group_key={plan.split.group_key!r}, expected group by {task.grouping_key}",
        )
    budget = float(task.budget.get("wall_clock_s") or 0)
    if not b.item(
        "within_budget",
        not budget or plan.budget_s <= budget,
        f"plan budget_s={plan.budget_s:g}, run budget {budget:g} s",
    ):
        b.code("PLAN-OVER-BUDGET", f"{PLAN_FILE}: budget_s={plan.budget_s:g} > {budget:g}")
    return b.result(_artifacts(ev, Stage.PLAN))


@RUBRICS.register(Stage.SETUP.value)
def setup_rubric(ev: Evidence) -> StageResult:
    b = StageBuilder(Stage.SETUP.value)
    code_dir = ev.path(SETUP_CODE_DIR)
    files = [p for p in code_dir.rglob("*") if p.is_file()] if code_dir.is_dir() else []
    if not b.item("code_present", bool(files), f"{len(files)} files in {SETUP_CODE_DIR}/"):
        b.code("SETUP-NO-CODE", f"{SETUP_CODE_DIR}/ is missing or empty")
    if not b.item(
        "environment_captured",
        ev.present(ENVIRONMENT_FILE),
        f"{ENVIRONMENT_FILE} {'present' if ev.present(ENVIRONMENT_FILE) else 'missing'}",
    ):
        b.code("SETUP-NO-ENV", f"{ENVIRONMENT_FILE} is missing or empty")
    smoke = ev.model(SMOKE_FILE, SmokeRecord)
    if isinstance(smoke, ArtifactError) or not smoke.ok:
        why = str(smoke) if isinstance(smoke, ArtifactError) else f"{SMOKE_FILE} says ok: false"
        b.item("smoke_recorded", 0, why)
        b.item("smoke_code_matches", 0, "no valid smoke record")
        b.code("SETUP-NO-SMOKE", why)
    else:
        b.item(
            "smoke_recorded",
            1,
            f"smoke batch {smoke.batch_shape} on {smoke.device} "
            f"in {smoke.seconds:.1f} s (reported, not verified)",
        )
        actual = sha256_tree(code_dir) if files else ""
        b.item(
            "smoke_code_matches",
            smoke.code_sha256 == actual,
            "smoke record's code hash matches setup/code"
            if smoke.code_sha256 == actual
            else "setup/code changed after the smoke batch ran",
        )
    return b.result(_artifacts(ev, Stage.SETUP))


def score_predictions(
    ev: Evidence, folder: str, case_ids: list[str]
) -> tuple[dict[str, list[str]], dict[str, dict[int, float]]]:
    """Problems per case (empty list: valid) and per-label scores of the valid cases."""
    labels = ev.contract.foreground_labels()
    problems: dict[str, list[str]] = {}
    scores: dict[str, dict[int, float]] = {}
    for cid in case_ids:
        pred_path = ev.path(folder) / ev.contract.prediction.file_pattern.format(case_id=cid)
        problems[cid] = prediction_problems(pred_path, ev.image_path(cid), ev.labels)
        if problems[cid]:
            scores[cid] = {lab: ev.metric.worst for lab in labels}
        else:
            ref = load_volume(ev.reference_path(cid)).data
            scores[cid] = ev.metric.per_label(load_volume(pred_path).data, ref, labels)
    return problems, scores


@RUBRICS.register(Stage.VALIDATE.value)
def validate_rubric(ev: Evidence) -> StageResult:
    b = StageBuilder(Stage.VALIDATE.value)
    split, report = ev.split, ev.model(VALIDATION_REPORT_FILE, ValidationReport)
    if (
        isinstance(split, ArtifactError)
        and isinstance(report, ArtifactError)
        and not ev.present(VALIDATION_PREDICTIONS_DIR)
    ):
        b.code(
            "VALID-MISSING",
            "no validation/split.csv, validation/predictions/ or validation/report.json",
        )
    if isinstance(split, ArtifactError):
        for name in ("split_valid", "split_grouped", "no_test_cases"):
            b.item(name, 0, str(split))
        if ev.path(SPLIT_FILE).is_file():  # a missing split is VALID-MISSING's business
            b.code("VALID-SPLIT-INVALID", str(split))
        val_ids: list[str] = []
    else:
        val_ids = _judge_split(ev, b, split, report)
    if isinstance(report, ArtifactError):
        b.item("report_valid", 0, str(report))
        b.item("predictions_valid", 0, "no report names the validation folds")
        b.item("claim_reproduced", 0, "no claim to reproduce")
        return b.result(_artifacts(ev, Stage.VALIDATE))
    task_metric = ev.contract.metric
    same = (
        report.metric == task_metric.name
        and report.greater_is_better == task_metric.greater_is_better
    )
    if not b.item(
        "report_valid",
        same,
        f"report: {report.metric}, greater_is_better="
        f"{report.greater_is_better}; task: {task_metric.name}, "
        f"{task_metric.greater_is_better}",
    ):
        b.code(
            "VALID-DIRECTION",
            f"{VALIDATION_REPORT_FILE}: metric={report.metric}, "
            f"greater_is_better={report.greater_is_better}",
        )
    if not val_ids:
        b.item("predictions_valid", 0, "no validation cases in the split")
        b.item("claim_reproduced", 0, "no validation cases to recompute the claim on")
        return b.result(_artifacts(ev, Stage.VALIDATE))
    problems, scores = score_predictions(ev, VALIDATION_PREDICTIONS_DIR, val_ids)
    bad = sorted(c for c, p in problems.items() if p)
    b.item(
        "predictions_valid",
        1 - len(bad) / len(val_ids),
        f"{len(val_ids) - len(bad)}/{len(val_ids)} validation predictions valid",
    )
    if bad:
        b.code(
            "VALID-PRED-INVALID",
            f"{VALIDATION_PREDICTIONS_DIR}/: {len(bad)} of "
            f"{len(val_ids)} cases invalid: " + first_few([f"{c} ({problems[c][0]})" for c in bad]),
        )
    recomputed = macro_aggregate(scores, ev.contract.foreground_labels()).value
    diff = abs(recomputed - report.value)
    tol = ev.task_cfg.claim_tolerance
    if not b.item(
        "claim_reproduced",
        diff <= tol,
        f"claimed {report.value:.4f}, recomputed "
        f"{recomputed:.4f} on {len(val_ids)} cases (tolerance {tol})",
    ):
        b.code(
            "VALID-CLAIM-MISMATCH",
            f"{VALIDATION_REPORT_FILE}: value={report.value:.4f} "
            f"but the agent's own predictions score {recomputed:.4f} (|diff| {diff:.4f} > "
            f"{tol})",
        )
    return b.result(_artifacts(ev, Stage.VALIDATE))


def _judge_split(
    ev: Evidence, b: StageBuilder, split: object, report: ValidationReport | ArtifactError
) -> list[str]:
    import pandas as pd

    assert isinstance(split, pd.DataFrame)
    unknown = sorted(set(split["case_id"]) - set(ev.cases.index))
    in_task = split[split["case_id"].isin(ev.cases.index)]
    relabelled = sorted(
        in_task.loc[
            in_task["patient_id"].to_numpy()
            != ev.cases.loc[in_task["case_id"], "patient_id"].to_numpy(),
            "case_id",
        ]
    )
    uncovered = sorted(ev.train_ids - set(split["case_id"]))
    dupes = sorted(set(split.loc[split["case_id"].duplicated(), "case_id"]))
    wrong = unknown + relabelled + dupes
    valid = not wrong and not uncovered
    b.item(
        "split_valid",
        valid,
        "split covers every training case once with the task's patient ids"
        if valid
        else f"{len(unknown)} unknown, {len(relabelled)} relabelled, "
        f"{len(dupes)} duplicated, {len(uncovered)} training cases absent",
    )
    if not valid:
        b.code(
            "VALID-SPLIT-INVALID",
            f"validation/split.csv: unknown case ids "
            f"[{first_few(unknown)}], patient ids differing from data/cases.csv "
            f"[{first_few(relabelled)}], duplicated [{first_few(dupes)}], missing "
            f"[{first_few(uncovered)}]",
        )
    truth = in_task.assign(patient_id=ev.cases.loc[in_task["case_id"], "patient_id"].to_numpy())
    folds_per_patient = truth.groupby("patient_id")["fold"].nunique()
    leaked = sorted(folds_per_patient[folds_per_patient > 1].index)
    if not b.item("split_grouped", not leaked, f"{len(leaked)} patients in more than one fold"):
        b.code(
            "VALID-LEAK-PATIENT",
            f"validation/split.csv: {len(leaked)} patients in more than "
            f"one fold: {first_few(leaked)}",
        )
    test_in = sorted(set(split["case_id"]) & set(ev.test_ids))
    if not b.item("no_test_cases", not test_in, f"{len(test_in)} test cases in the split"):
        b.code("VALID-LEAK-TEST", f"validation/split.csv: test cases {first_few(test_in)}")
    if isinstance(report, ArtifactError):
        return []
    folds = set(report.validation_folds)
    return sorted(
        split.loc[split["fold"].isin(folds) & split["case_id"].isin(ev.train_ids), "case_id"]
    )


@RUBRICS.register(Stage.INFERENCE.value)
def inference_rubric(ev: Evidence) -> StageResult:
    b = StageBuilder(Stage.INFERENCE.value)
    ids = ev.test_ids
    folder = ev.path(PREDICTIONS_DIR)
    pattern = ev.contract.prediction.file_pattern
    missing = [c for c in ids if not (folder / pattern.format(case_id=c)).is_file()]
    b.item(
        "completion",
        1 - len(missing) / len(ids),
        f"{len(ids) - len(missing)}/{len(ids)} test cases predicted",
    )
    if missing:
        b.code(
            "INFER-MISSING-CASES",
            f"{PREDICTIONS_DIR}/: {len(missing)} of {len(ids)} test "
            f"cases have no prediction: {first_few(missing)}",
        )
    present = [c for c in ids if c not in missing]
    problems = {
        c: prediction_problems(folder / pattern.format(case_id=c), ev.image_path(c), ev.labels)
        for c in present
    }
    bad = sorted(c for c, p in problems.items() if p)
    b.item(
        "format_valid",
        (len(present) - len(bad)) / len(ids),
        f"{len(present) - len(bad)}/"
        f"{len(ids)} test predictions readable, on the image grid, with valid labels",
    )
    if bad:
        b.code(
            "INFER-FORMAT",
            f"{PREDICTIONS_DIR}/: {len(bad)} invalid predictions: "
            + first_few([f"{c} ({'; '.join(problems[c])})" for c in bad]),
        )
    return b.result(_artifacts(ev, Stage.INFERENCE))


@RUBRICS.register(Stage.SUBMIT.value)
def submit_rubric(ev: Evidence) -> StageResult:
    import pandas as pd

    b = StageBuilder(Stage.SUBMIT.value)
    spec = ev.contract.submission
    manifest = ev.model(MANIFEST_FILE, Manifest)
    index_path = ev.path(spec.index_file)
    if isinstance(manifest, ArtifactError) or not index_path.is_file():
        why = (
            str(manifest)
            if isinstance(manifest, ArtifactError)
            else f"{spec.index_file}: file is missing"
        )
        for name in ("submission_present", "schema_valid", "checksums_match", "traceable"):
            b.item(name, 0, why)
        b.code("SUBMIT-MISSING", why)
        return b.result(_artifacts(ev, Stage.SUBMIT))
    b.item("submission_present", 1, f"{spec.index_file} and {MANIFEST_FILE} present")
    table = pd.read_csv(index_path, dtype=str, keep_default_na=False)
    expected = [c.name for c in spec.columns]
    ids = list(table["case_id"]) if "case_id" in table.columns else []
    missing_ids = sorted(set(ev.test_ids) - set(ids))
    extra_ids = sorted(set(ids) - set(ev.test_ids))
    dupes = sorted(set(table.loc[table.duplicated("case_id"), "case_id"])) if ids else []
    schema_ok = list(table.columns) == expected and not (missing_ids or extra_ids or dupes)
    if not b.item(
        "schema_valid",
        schema_ok,
        f"columns {list(table.columns)} (expected "
        f"{expected}); {len(missing_ids)} ids missing, {len(extra_ids)} extra, "
        f"{len(dupes)} duplicated",
    ):
        b.code(
            "SUBMIT-SCHEMA",
            f"{spec.index_file}: columns {list(table.columns)} vs "
            f"{expected}; missing ids [{first_few(missing_ids)}], extra "
            f"[{first_few(extra_ids)}], duplicated [{first_few(dupes)}]",
        )
    mismatched = [
        f.path
        for f in manifest.files
        if not ev.path(f.path).is_file() or sha256_file(ev.path(f.path)) != f.sha256
    ]
    b.item(
        "checksums_match",
        1 - len(mismatched) / len(manifest.files),
        f"{len(manifest.files) - len(mismatched)}/{len(manifest.files)} manifest "
        "checksums match their files",
    )
    if mismatched:
        b.code(
            "SUBMIT-CHECKSUM",
            f"{MANIFEST_FILE}: {len(mismatched)} checksums do not match: {first_few(mismatched)}",
        )
    b.item("traceable", *_traceability(ev, table, b))
    return b.result(_artifacts(ev, Stage.SUBMIT))


def _traceability(ev: Evidence, table: object, b: StageBuilder) -> tuple[bool, str]:
    """The submitted files are byte for byte the S4 predictions of the same cases."""
    import pandas as pd

    assert isinstance(table, pd.DataFrame)
    spec = ev.contract.submission
    if spec.files_dir is None or "file" not in table.columns:
        return True, "no per-case files to trace"
    base = ev.path(spec.index_file).parent  # the index lists files relative to itself
    pattern = ev.contract.prediction.file_pattern
    untraced = []
    for cid, rel in zip(table["case_id"], table["file"], strict=True):
        sub, pred = base / rel, ev.path(PREDICTIONS_DIR) / pattern.format(case_id=cid)
        if not (sub.is_file() and pred.is_file() and sha256_file(sub) == sha256_file(pred)):
            untraced.append(cid)
    if untraced:
        b.code(
            "SUBMIT-UNTRACEABLE",
            f"{spec.index_file}: {len(untraced)} submitted files are not "
            f"the S4 predictions of their case: {first_few(untraced)}",
        )
    return (
        not untraced,
        f"{len(table) - len(untraced)}/{len(table)} submitted files equal their S4 prediction",
    )
