"""Submission schema (S5) and test-prediction format (S4), per the task's contract.

The index table is checked against ``task.json``'s submission columns (names and order, types,
ranges, allowed values, no NaN/inf) and against the test ids (complete, unique, no extras). For
image tasks every file is checked by the image rules of ``checks.images`` (readable, on the
input's grid, integer labels from the task's set); nothing is ever resampled to make it fit.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pandas as pd

from checks import Check
from checks.expectations import ExpectColumnValuesToBeFinite
from checks.gx import CheckOutcome, Rule, Suite
from checks.images import count_missing_as_invalid, run_file_rules
from gate.contract import PREDICTIONS_DIR, SubmissionSpec
from gate.evidence import Evidence
from gate.record import Finding

PRED_ITEMS = ("completion", "format_valid")
SUB_ITEMS = ("schema_valid", "ids_complete", "files_valid")
NUMERIC = "__num"  # suffix of a column's numeric twin, for range rules on text-read tables


def table_frame(table: pd.DataFrame, spec: SubmissionSpec) -> pd.DataFrame:
    """The submitted table as read (text), plus a numeric twin of each numeric column."""
    out = table.copy()
    for col in spec.columns:
        if col.dtype != "str" and col.name in out.columns:
            out[col.name + NUMERIC] = pd.to_numeric(out[col.name], errors="coerce")
    return out


def coverage_frame(ids: pd.Series, test_ids: list[str]) -> pd.DataFrame:
    present = set(ids.astype(str))
    return pd.DataFrame({"case_id": test_ids, "submitted": [c in present for c in test_ids]})


@cache
def _table_suite(spec_json: str) -> Suite:
    import great_expectations.expectations as gxe

    spec = SubmissionSpec.model_validate_json(spec_json)
    names = [c.name for c in spec.columns]
    fix_cols = f"write exactly the columns {names}, in this order, as task.json says"
    rules = [
        Rule(
            "schema_valid",
            "SUBMIT-SCHEMA",
            f"columns are {names}",
            fix_cols,
            # table_frame appends the numeric twins after the submitted columns
            gxe.ExpectTableColumnsToMatchOrderedList(
                column_list=names + [c.name + NUMERIC for c in spec.columns if c.dtype != "str"]
            ),
        ),
        Rule(
            "ids_complete",
            "SUBMIT-SCHEMA",
            "each case id appears once",
            "write one row per test case",
            gxe.ExpectColumnValuesToBeUnique(column="case_id"),
        ),
        Rule(
            "ids_complete",
            "SUBMIT-SCHEMA",
            "every case id is a test case",
            "drop rows of cases that are not test cases of data/cases.csv",
            gxe.ExpectColumnValuesToBeInSet(column="case_id", value_set={"$PARAMETER": "test_ids"}),
        ),
    ]
    for col in spec.columns:
        if col.name == "case_id":
            continue
        rules.append(
            Rule(
                "schema_valid",
                "SUBMIT-SCHEMA",
                f"column {col.name} has no empty value",
                f"fill {col.name} for every row",
                gxe.ExpectColumnValuesToMatchRegex(column=col.name, regex=r"\S"),
            )
        )
        if col.dtype == "int":
            rules.append(
                Rule(
                    "schema_valid",
                    "SUBMIT-SCHEMA",
                    f"column {col.name} holds integers",
                    f"write {col.name} as whole numbers",
                    gxe.ExpectColumnValuesToMatchRegex(column=col.name, regex=r"^\s*[-+]?\d+\s*$"),
                )
            )
        if col.dtype in ("int", "float"):
            rules.append(
                Rule(
                    "schema_valid",
                    "SUBMIT-SCHEMA",
                    f"column {col.name} holds finite numbers (no NaN, inf or text)",
                    f"replace NaN/inf in {col.name} before writing",
                    ExpectColumnValuesToBeFinite(column=col.name),
                )
            )
        if col.min is not None or col.max is not None:
            rules.append(
                Rule(
                    "schema_valid",
                    "SUBMIT-SCHEMA",
                    f"column {col.name} lies within [{col.min}, {col.max}]",
                    f"clip or fix {col.name} to its range in task.json",
                    gxe.ExpectColumnValuesToBeBetween(
                        column=col.name + NUMERIC, min_value=col.min, max_value=col.max
                    ),
                )
            )
        if col.allowed is not None:
            rules.append(
                Rule(
                    "schema_valid",
                    "SUBMIT-SCHEMA",
                    f"column {col.name} takes values in {col.allowed}",
                    f"use only the values task.json allows for {col.name}",
                    gxe.ExpectColumnValuesToBeInSet(
                        column=col.name, value_set=[str(v) for v in col.allowed]
                    ),
                )
            )
    return Suite("submission_table", tuple(rules), ("case_id",))


def table_suite(spec: SubmissionSpec) -> Suite:
    """The schema suite of a submission spec, built once per distinct spec."""
    return _table_suite(spec.model_dump_json())


@cache
def coverage_suite() -> Suite:
    import great_expectations.expectations as gxe

    return Suite(
        "submission_coverage",
        (
            Rule(
                "ids_complete",
                "SUBMIT-SCHEMA",
                "every test case has a row",
                "write one row per test case of data/cases.csv",
                gxe.ExpectColumnValuesToBeInSet(column="submitted", value_set=[True]),
            ),
        ),
        ("case_id",),
    )


def read_table(path: Path) -> pd.DataFrame | str:
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        return f"does not parse: {exc}".splitlines()[0]


def submission(ev: Evidence) -> CheckOutcome:
    spec = ev.contract.submission
    index = ev.path(spec.index_file)
    if not index.is_file():
        return CheckOutcome.skipped(
            "submission", "submit", SUB_ITEMS, f"{spec.index_file}: missing"
        )
    table = read_table(index)
    if isinstance(table, str):
        out = CheckOutcome.skipped("submission", "submit", SUB_ITEMS, f"{spec.index_file}: {table}")
        out.findings.append(_finding(f"{spec.index_file}: {table}"))
        return out
    ids = table["case_id"] if "case_id" in table.columns else pd.Series([], dtype=str)
    runs = [
        table_suite(spec).run(
            table_frame(table, spec), spec.index_file, {"test_ids": list(ev.test_ids)}
        ),
        coverage_suite().run(coverage_frame(ids, ev.test_ids), spec.index_file),
    ]
    if spec.files_dir is not None:
        base = index.parent  # the index lists files relative to itself
        rel = table["file"] if "file" in table.columns else pd.Series([""] * len(table))
        known = [(c, r) for c, r in zip(ids, rel, strict=False) if c in set(ev.test_ids)]
        files = {c: base / r for c, r in known}
        images = {c: ev.image_path(c) for c, _ in known}
        runs += run_file_rules(
            files,
            images,
            ev.workspace,
            ev.labels,
            spec.files_dir,
            ("SUBMIT-SCHEMA", "SUBMIT-SCHEMA"),
        )[1]
    out = CheckOutcome("submission", "submit").add_runs(*runs)
    _merge_file_items(out)
    return out


def _merge_file_items(out: CheckOutcome) -> None:
    """Fold the image rules' items into one ``files_valid`` item of the submit stage."""
    files = [i for i in out.items if i.name in PRED_ITEMS]
    if not files:
        return
    rest = [i for i in out.items if i.name not in PRED_ITEMS]
    worst = min(files, key=lambda i: i.score)
    reason = "; ".join(i.reason for i in files)
    out.items = rest
    out.add_item("files_valid", worst.score, reason)


def _finding(message: str) -> Finding:
    return Finding.of("SUBMIT-SCHEMA", message + ". Fix: write a CSV with a header row")


def predictions(ev: Evidence) -> CheckOutcome:
    ids = ev.test_ids
    files = {cid: ev.prediction_path(PREDICTIONS_DIR, cid) for cid in ids}
    images = {cid: ev.image_path(cid) for cid in ids}
    facts, runs = run_file_rules(
        files,
        images,
        ev.workspace,
        ev.labels,
        PREDICTIONS_DIR,
        ("INFER-MISSING-CASES", "INFER-FORMAT"),
    )
    out = CheckOutcome("predictions", "inference").add_runs(*runs)
    return count_missing_as_invalid(out, facts)


PREDICTIONS = Check("predictions", "inference", PRED_ITEMS, predictions)
SUBMISSION = Check("submission", "submit", SUB_ITEMS, submission)
