"""The independent reviewer (S3): every metric the agent claims is recomputed from its own
validation predictions, against the labels of exactly the cases its split puts in validation.

The agent's numbers are never trusted: a claim that does not reproduce within the task's
``claim_tolerance`` fails, and "predictions" identical to the labels are flagged as copies.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pandas as pd

from checks import Check
from checks.gx import CheckOutcome, Rule, Suite
from checks.images import count_missing_as_invalid, run_file_rules
from gate.contract import (
    MANIFEST_FILE,
    VALIDATION_PREDICTIONS_DIR,
    VALIDATION_REPORT_FILE,
    ValidationReport,
)
from gate.errors import ArtifactError
from gate.evidence import Evidence
from gate.images import load_volume
from gate.metrics import macro_aggregate

ITEMS = ("completion", "format_valid", "no_label_copy", "claim_reproduced")


@cache
def claims_suite() -> Suite:
    import great_expectations.expectations as gxe

    return Suite(
        "claims",
        (
            Rule(
                "claim_reproduced",
                "VALID-CLAIM-MISMATCH",
                "each claimed value equals the gate's recomputation within the tolerance",
                "report the metric computed on validation/predictions against the labels of "
                "the split's validation cases",
                gxe.ExpectColumnPairValuesAToBeGreaterThanB(
                    column_A="tolerance", column_B="abs_diff", or_equal=True
                ),
            ),
        ),
        ("claim", "claimed", "recomputed"),
    )


@cache
def copy_suite() -> Suite:
    import great_expectations.expectations as gxe

    return Suite(
        "label_copy",
        (
            Rule(
                "no_label_copy",
                "VALID-LABEL-COPY",
                "no validation prediction is identical to its label",
                "predict validation cases with the trained model; never copy their labels",
                gxe.ExpectColumnValuesToBeInSet(column="identical_to_label", value_set=[False]),
            ),
        ),
        ("case_id",),
    )


def claims_frame(
    report: ValidationReport,
    manifest_claims: dict[str, float],
    recomputed: float,
    per_label: dict[int, float],
    n_cases: int,
    tolerance: float,
) -> pd.DataFrame:
    """One row per claim: what the agent says, what the gate recomputes, the allowed gap."""
    rows = [(f"report.value ({report.metric})", report.value, recomputed, tolerance)]
    for lab, value in sorted(report.per_label.items()):
        truth = per_label.get(int(lab)) if lab.lstrip("-").isdigit() else None
        rows.append((f"report.per_label.{lab}", value, truth, tolerance))
    rows.append(("report.n_cases", float(report.n_cases), float(n_cases), 0.0))
    for key, value in sorted(manifest_claims.items()):
        rows.append((f"manifest.claimed.{key}", value, recomputed, tolerance))
    df = pd.DataFrame(rows, columns=["claim", "claimed", "recomputed", "tolerance"])
    diff = (df["claimed"].astype(float) - df["recomputed"].astype(float)).abs()
    # A claim that cannot be recomputed (NaN) or is not a number is as far off as can be.
    df["abs_diff"] = diff.where(np.isfinite(diff), math.inf)
    return df


def claims(ev: Evidence) -> CheckOutcome:
    report, val_ids = ev.report, ev.validation_ids
    if isinstance(report, ArtifactError) or isinstance(val_ids, ArtifactError):
        why = str(val_ids if isinstance(val_ids, ArtifactError) else report)
        return CheckOutcome.skipped("claims", "validate", ITEMS, f"no claim to review: {why}")
    if not val_ids:
        why = f"the split has no training case in validation_folds {report.validation_folds}"
        return CheckOutcome.skipped("claims", "validate", ITEMS, why)
    files = {cid: ev.prediction_path(VALIDATION_PREDICTIONS_DIR, cid) for cid in val_ids}
    images = {cid: ev.image_path(cid) for cid in val_ids}
    problems, scores = ev.score_cases(VALIDATION_PREDICTIONS_DIR, val_ids)
    labels = ev.contract.foreground_labels()
    agg = macro_aggregate(scores, labels)
    copies = pd.DataFrame(
        [
            {"case_id": cid, "identical_to_label": _identical(ev, cid, files[cid])}
            for cid in val_ids
            if not problems[cid]
        ],
        columns=["case_id", "identical_to_label"],
    )
    manifest = ev.manifest
    manifest_claims = {}
    if not isinstance(manifest, ArtifactError):
        manifest_claims = {k: v for k, v in manifest.claimed.items() if k == ev.metric.name}
    table = claims_frame(
        report, manifest_claims, agg.value, agg.per_label, len(val_ids), ev.task_cfg.claim_tolerance
    )
    source = VALIDATION_REPORT_FILE + (f" + {MANIFEST_FILE}" if manifest_claims else "")
    facts, file_runs = run_file_rules(
        files,
        images,
        ev.workspace,
        ev.labels,
        VALIDATION_PREDICTIONS_DIR,
        ("VALID-PRED-INVALID", "VALID-PRED-INVALID"),
    )
    out = CheckOutcome("claims", "validate").add_runs(
        *file_runs,
        copy_suite().run(copies, VALIDATION_PREDICTIONS_DIR),
        claims_suite().run(table, source),
        note={"claim_reproduced": f"recomputed {agg.value:.4f} on {len(val_ids)} cases"},
    )
    out.result["claims"] = table.to_dict(orient="records")
    return count_missing_as_invalid(out, facts)


def _identical(ev: Evidence, case_id: str, pred_path: object) -> bool:
    pred = np.asanyarray(load_volume(pred_path).data)  # type: ignore[arg-type]
    ref = np.asanyarray(load_volume(ev.reference_path(case_id)).data)
    # An all-background label is easy to predict exactly; copying shows on real structure.
    return bool(ref.any() and pred.shape == ref.shape and np.array_equal(pred, ref))


CLAIMS = Check("claims", "validate", ITEMS, claims)
