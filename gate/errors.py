"""The closed table of error codes a run can earn, and the gate's own exceptions.

Codes are ``<STAGE>-<KIND>``; each has a stage, a root cause (the AutoMedBench E1–E5 families),
a severity and the fix a user should make. ``critical`` codes fail a verdict whatever the score.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    CRITICAL = "critical"
    MAJOR = "major"
    MINOR = "minor"


class RootCause(StrEnum):
    """AutoMedBench's error families E1–E5."""

    HALLUCINATION = "E1-hallucination"
    RESOURCE = "E2-resource"
    LOGIC = "E3-logic"
    CODE = "E4-code"
    FORMAT = "E5-format"


@dataclass(frozen=True)
class ErrorCode:
    code: str
    stage: str
    cause: RootCause
    severity: Severity
    description: str
    fix: str


_C, _M, _m = Severity.CRITICAL, Severity.MAJOR, Severity.MINOR
_H, _R, _L, _K, _F = (
    RootCause.HALLUCINATION,
    RootCause.RESOURCE,
    RootCause.LOGIC,
    RootCause.CODE,
    RootCause.FORMAT,
)

_TABLE: tuple[ErrorCode, ...] = (
    # S1 plan
    ErrorCode(
        "PLAN-MISSING",
        "plan",
        _F,
        _M,
        "plan.yaml is missing or does not parse.",
        "Write plan.yaml with the fields of gate.contract.Plan.",
    ),
    ErrorCode(
        "PLAN-TASK-MISMATCH",
        "plan",
        _L,
        _M,
        "The plan's task type or metric differs from task.json.",
        "Copy task_type and metric.name from task.json into plan.yaml.",
    ),
    ErrorCode(
        "PLAN-DIRECTION",
        "plan",
        _L,
        _C,
        "The plan declares the metric direction opposite to task.json.",
        "Set greater_is_better in plan.yaml to task.json's metric.greater_is_better.",
    ),
    ErrorCode(
        "PLAN-SPLIT-UNGROUPED",
        "plan",
        _L,
        _M,
        "The planned split is not grouped by the task's grouping key (patient).",
        "Plan a grouped split: split.group_key must equal task.json's grouping_key.",
    ),
    ErrorCode(
        "PLAN-OVER-BUDGET",
        "plan",
        _R,
        _m,
        "The plan asks for more time than the run's budget.",
        "Keep plan.budget_s within task.json's budget.wall_clock_s.",
    ),
    # S2 setup
    ErrorCode(
        "SETUP-NO-CODE",
        "setup",
        _K,
        _M,
        "setup/ holds no pipeline code.",
        "Copy the code that trains and predicts into setup/code/.",
    ),
    ErrorCode(
        "SETUP-NO-ENV",
        "setup",
        _K,
        _m,
        "setup/environment.txt is missing or empty.",
        "Write `pip freeze` output to setup/environment.txt.",
    ),
    ErrorCode(
        "SETUP-NO-SMOKE",
        "setup",
        _K,
        _M,
        "setup/smoke.json is missing, invalid or reports a failed smoke batch.",
        "Run the pipeline on one batch and record it in setup/smoke.json.",
    ),
    # S3 validate
    ErrorCode(
        "VALID-MISSING",
        "validate",
        _L,
        _C,
        "No validation was done: split, predictions or report is missing.",
        "Hold out patients, predict them and write validation/report.json.",
    ),
    ErrorCode(
        "VALID-SPLIT-INVALID",
        "validate",
        _F,
        _M,
        "validation/split.csv is malformed or disagrees with the task's case table.",
        "Write one row per training case with case_id, patient_id, fold from data/cases.csv.",
    ),
    ErrorCode(
        "VALID-LEAK-PATIENT",
        "validate",
        _L,
        _C,
        "A patient has cases in more than one fold.",
        "Split by patient_id (group k-fold), never by case.",
    ),
    ErrorCode(
        "VALID-LEAK-TEST",
        "validate",
        _L,
        _C,
        "A test case appears in the training or validation split.",
        "Use only the training cases of data/cases.csv for training and validation.",
    ),
    ErrorCode(
        "VALID-LEAK-DUPLICATE",
        "validate",
        _L,
        _M,
        "Near-duplicate images of different patients straddle training and validation.",
        "Put near-duplicate images in the same fold, or drop one of them.",
    ),
    ErrorCode(
        "VALID-LEAK-SITE",
        "validate",
        _L,
        _M,
        "The task asks for a split by acquisition site and a site has cases in more than one fold.",
        "Hold out whole sites (leave-site-out) when the task's checks include site_leakage.",
    ),
    ErrorCode(
        "VALID-DIRECTION",
        "validate",
        _L,
        _C,
        "The validation report declares the metric direction opposite to the task, "
        "or selected a checkpoint that is not the best by the task's direction.",
        "Use task.json's greater_is_better when comparing and selecting checkpoints.",
    ),
    ErrorCode(
        "VALID-CLAIM-MISMATCH",
        "validate",
        _H,
        _C,
        "The claimed validation metric does not reproduce from the agent's own predictions.",
        "Report the metric computed on validation/predictions against the labels.",
    ),
    ErrorCode(
        "VALID-PRED-INVALID",
        "validate",
        _F,
        _M,
        "Validation predictions are missing or malformed.",
        "Write one label map per validation case, same shape as its image.",
    ),
    ErrorCode(
        "VALID-LABEL-COPY",
        "validate",
        _H,
        _C,
        "Validation predictions are identical to the labels.",
        "Predict validation cases with the trained model, never copy their labels.",
    ),
    # S4 inference
    ErrorCode(
        "INFER-MISSING-CASES",
        "inference",
        _K,
        _C,
        "Predictions are missing for some test cases.",
        "Write one prediction per test case listed in data/cases.csv.",
    ),
    ErrorCode(
        "INFER-FORMAT",
        "inference",
        _F,
        _C,
        "Predictions have the wrong shape, dtype, geometry or label values, or hold NaN.",
        "Write integer label maps on the input image's grid with labels from task.json.",
    ),
    # S5 submit
    ErrorCode(
        "SUBMIT-MISSING",
        "submit",
        _F,
        _C,
        "submission/ or its manifest is missing or does not parse.",
        "Write the submission and submission/manifest.json as task.json describes.",
    ),
    ErrorCode(
        "SUBMIT-SCHEMA",
        "submit",
        _F,
        _C,
        "The submission table has wrong columns, duplicate or missing ids, or bad values.",
        "Follow task.json's submission columns: one row per test id, no extras.",
    ),
    ErrorCode(
        "SUBMIT-CHECKSUM",
        "submit",
        _F,
        _C,
        "A checksum in the manifest does not match its file.",
        "Compute sha256 of each file after writing it and record it in the manifest.",
    ),
    ErrorCode(
        "SUBMIT-UNTRACEABLE",
        "submit",
        _H,
        _C,
        "The submission is not the S4 predictions, or the code that ran is not the S2 code.",
        "Submit exactly the files in predictions/ and record the code that produced them.",
    ),
    # run
    ErrorCode(
        "RUN-CRASH",
        "run",
        _K,
        _C,
        "The agent process exited with an error.",
        "Read the agent's stderr log on the MLflow run and fix the failing step.",
    ),
    ErrorCode(
        "RUN-TIMEOUT",
        "run",
        _R,
        _C,
        "The agent ran past its wall-clock budget and was stopped.",
        "Size the training to the budget in task.json, or raise budget.wall_clock_s.",
    ),
    ErrorCode(
        "RUN-MEMORY",
        "run",
        _R,
        _C,
        "The agent exceeded its memory budget and was stopped.",
        "Use smaller batches or patches, or raise budget.memory_gb.",
    ),
    ErrorCode(
        "RUN-SANDBOX",
        "run",
        _H,
        _C,
        "The task's data (public or hidden view) changed while the agent ran: the agent wrote "
        "outside its workspace.",
        "Write only inside the workspace; data/ and the task cache are read-only inputs.",
    ),
    ErrorCode(
        "RUN-INCOMPLETE",
        "run",
        _L,
        _M,
        "The agent exited successfully without producing every stage's artifacts.",
        "Make the agent write all artifacts listed in task.json's expected_artifacts.",
    ),
)

ERROR_CODES: dict[str, ErrorCode] = {e.code: e for e in _TABLE}


def lookup(code: str) -> ErrorCode:
    """Return the table entry for ``code``; an unknown code is a bug in the gate."""
    try:
        return ERROR_CODES[code]
    except KeyError:
        raise KeyError(f"error code {code!r} is not in gate/errors.py's table") from None


def is_critical(code: str) -> bool:
    return lookup(code).severity is Severity.CRITICAL


class MedgateError(Exception):
    """Base of the gate's own errors."""


class ConfigError(MedgateError):
    """A user-fixable configuration problem: names the file, the key and the fix."""

    def __init__(self, file: str, key: str, problem: str, fix: str) -> None:
        self.file, self.key, self.problem, self.fix = file, key, problem, fix
        super().__init__(f"{file}: {key}: {problem.rstrip('.')}. Fix: {fix}")


class ArtifactError(MedgateError):
    """An artifact an agent wrote is missing or malformed; becomes an error code, not a crash."""

    def __init__(self, file: str, field: str, problem: str, fix: str = "") -> None:
        self.file, self.field, self.problem, self.fix = file, field, problem, fix
        where = f"{file}: {field}" if field else file
        super().__init__(f"{where}: {problem}" + (f". Fix: {fix}" if fix else ""))


class TrackingError(MedgateError):
    """The tracking store could not be reached or read."""
