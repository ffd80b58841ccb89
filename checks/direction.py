"""Metric direction (S1, S3): declared metric and ``greater_is_better`` match the task, and the
checkpoint the agent selected is the best of its own validation log by the task's direction.

A flipped direction makes the worst checkpoint look like the best one; it is declared in two
places (plan, report) and acted on in a third (the selection), so all three are checked.
"""

from __future__ import annotations

from functools import cache

import pandas as pd

from checks import Check
from checks.gx import CheckOutcome, Rule, Suite
from gate.contract import PLAN_FILE, VALIDATION_REPORT_FILE
from gate.errors import ArtifactError
from gate.evidence import Evidence

PLAN_ITEMS = ("metric_matches", "direction_matches")
REPORT_ITEMS = ("report_metric_matches", "report_direction_matches", "checkpoint_selection")
SELECTION_TOL = 1e-9


@cache
def declaration_suite(stage: str) -> Suite:
    """Rules over one row per declaration: ``metric`` and ``greater_is_better``."""
    import great_expectations.expectations as gxe

    plan = stage == "plan"
    where = PLAN_FILE if plan else VALIDATION_REPORT_FILE
    return Suite(
        f"{stage}_declaration",
        (
            Rule(
                "metric_matches" if plan else "report_metric_matches",
                "PLAN-TASK-MISMATCH" if plan else "VALID-DIRECTION",
                "the declared metric is task.json's metric.name",
                f"copy metric.name from task.json into {where}",
                gxe.ExpectColumnValuesToBeInSet(
                    column="metric", value_set={"$PARAMETER": "metric"}
                ),
            ),
            Rule(
                "direction_matches" if plan else "report_direction_matches",
                "PLAN-DIRECTION" if plan else "VALID-DIRECTION",
                "greater_is_better is task.json's metric.greater_is_better",
                f"copy metric.greater_is_better from task.json into {where}",
                gxe.ExpectColumnValuesToBeInSet(
                    column="greater_is_better", value_set={"$PARAMETER": "greater_is_better"}
                ),
            ),
        ),
        ("source",),
    )


@cache
def selection_suite(greater_is_better: bool) -> Suite:
    """Over the validation log (one row per evaluation): the selected value is the best one."""
    import great_expectations.expectations as gxe

    if greater_is_better:
        best = gxe.ExpectColumnMaxToBeBetween(column="value", max_value={"$PARAMETER": "bound"})
        what = "no logged validation value exceeds the selected checkpoint's (greater is better)"
    else:
        best = gxe.ExpectColumnMinToBeBetween(column="value", min_value={"$PARAMETER": "bound"})
        what = "no logged validation value is below the selected checkpoint's (lower is better)"
    fix = "select the checkpoint with the best value by task.json's metric direction"
    return Suite(
        f"checkpoint_selection_{'max' if greater_is_better else 'min'}",
        (
            Rule(
                "checkpoint_selection",
                "VALID-DIRECTION",
                "the selected epoch is in the validation history",
                "set selected_epoch to an epoch of history",
                gxe.ExpectColumnDistinctValuesToContainSet(
                    column="epoch", value_set={"$PARAMETER": "selected"}
                ),
            ),
            Rule("checkpoint_selection", "VALID-DIRECTION", what, fix, best),
        ),
        ("epoch",),
    )


def _declared(source: str, metric: str, greater_is_better: bool) -> pd.DataFrame:
    return pd.DataFrame(
        [{"source": source, "metric": metric, "greater_is_better": greater_is_better}]
    )


def _task_params(ev: Evidence) -> dict[str, list[object]]:
    m = ev.contract.metric
    return {"metric": [m.name], "greater_is_better": [m.greater_is_better]}


def plan_direction(ev: Evidence) -> CheckOutcome:
    plan = ev.plan
    if isinstance(plan, ArtifactError):
        return CheckOutcome.skipped("plan_direction", "plan", PLAN_ITEMS, "no valid plan")
    df = _declared(PLAN_FILE, plan.metric, plan.greater_is_better)
    run = declaration_suite("plan").run(df, PLAN_FILE, _task_params(ev))
    return CheckOutcome("plan_direction", "plan").add_runs(run)


def direction(ev: Evidence) -> CheckOutcome:
    report = ev.report
    if isinstance(report, ArtifactError):
        return CheckOutcome.skipped("direction", "validate", REPORT_ITEMS, str(report))
    out = CheckOutcome("direction", "validate")
    df = _declared(VALIDATION_REPORT_FILE, report.metric, report.greater_is_better)
    runs = [declaration_suite("validate").run(df, VALIDATION_REPORT_FILE, _task_params(ev))]
    history = pd.DataFrame([h.model_dump() for h in report.history], columns=["epoch", "value"])
    if report.selected_epoch is None or history.empty:
        out.add_item("checkpoint_selection", 1, "no checkpoint selection claimed: nothing to check")
    else:
        greater = ev.contract.metric.greater_is_better
        chosen = history.loc[history["epoch"] == report.selected_epoch, "value"]
        value = float(chosen.iloc[0]) if len(chosen) else float("nan")
        tol = SELECTION_TOL if greater else -SELECTION_TOL
        params = {"selected": [report.selected_epoch], "bound": value + tol}
        if value != value:  # selected epoch absent: the first rule names it, the bound cannot
            params["bound"] = float("-inf") if greater else float("inf")
        runs.append(
            selection_suite(greater).run(history, f"{VALIDATION_REPORT_FILE}: history", params)
        )
    return out.add_runs(*runs)


PLAN_DIRECTION = Check("plan_direction", "plan", PLAN_ITEMS, plan_direction)
DIRECTION = Check("direction", "validate", REPORT_ITEMS, direction)
