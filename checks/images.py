"""The image-prediction rules (readable, on the input's grid, integer labels from the task's set).

One implementation, three uses: validation predictions (S3), test predictions (S4) and submitted
files (S5) run the same rules and differ only in the error codes they earn. The DataFrames hold
facts read from the files; the rules live in the GX suite.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from checks.expectations import ExpectColumnValuesToBeFinite  # noqa: F401  (registers the metric)
from checks.gx import CheckOutcome, Rule, Suite, SuiteRun
from gate.images import AFFINE_TOL, load_volume

FACT_COLUMNS = (
    "case_id",
    "file",
    "exists",
    "readable",
    "shape",
    "image_shape",
    "affine_err_mm",
    "dtype_kind",
    "n_nonfinite",
)


def image_facts(files: dict[str, Path], images: dict[str, Path], root: Path) -> pd.DataFrame:
    """One row per case: what its prediction file is, next to the input image it must match.

    Absent facts are None, so the rules about a file's content skip files that do not exist.
    """
    rows = []
    for cid, path in files.items():
        row: dict[str, object] = dict.fromkeys(FACT_COLUMNS)
        row.update(case_id=cid, file=_rel(path, root), exists=path.is_file())
        if row["exists"]:
            try:
                vol = load_volume(path)
                data = np.asanyarray(vol.data)
                row["readable"] = True
            except Exception:  # any unreadable file is a format fault of the agent's
                row["readable"] = False
            else:
                ref = load_volume(images[cid])
                row["shape"] = "x".join(map(str, data.shape))
                row["image_shape"] = "x".join(map(str, ref.data.shape))
                row["affine_err_mm"] = float(np.max(np.abs(vol.affine - ref.affine)))
                row["dtype_kind"] = data.dtype.kind
                row["n_nonfinite"] = (
                    int(np.size(data) - np.isfinite(data).sum()) if data.dtype.kind == "f" else 0
                )
        rows.append(row)
    return pd.DataFrame(rows, columns=list(FACT_COLUMNS))


def label_values(files: dict[str, Path], root: Path) -> pd.DataFrame:
    """One row per (case, distinct value) of every readable prediction."""
    rows = []
    for cid, path in files.items():
        try:
            data = np.asanyarray(load_volume(path).data)
        except Exception:  # missing or unreadable: the facts table reports it
            continue
        finite = data[np.isfinite(data)] if data.dtype.kind == "f" else data
        for v in np.unique(finite).tolist():
            rows.append({"case_id": cid, "file": _rel(path, root), "value": float(v)})
    return pd.DataFrame(rows, columns=["case_id", "file", "value"])


def run_file_rules(
    files: dict[str, Path],
    images: dict[str, Path],
    workspace: Path,
    labels: set[int],
    folder: str,
    codes: tuple[str, str],
) -> tuple[pd.DataFrame, list[SuiteRun]]:
    """Run the image rules over ``files`` (case id -> file), earning ``codes`` (missing, format).

    Returns the facts table too, for ``count_missing_as_invalid``.
    """
    facts_suite, values_suite = file_suites(codes[0], codes[1], folder.rstrip("/") + "/")
    facts = image_facts(files, images, workspace)
    values = label_values(files, workspace)
    params = {"labels": sorted(float(v) for v in labels)}
    return facts, [facts_suite.run(facts, folder), values_suite.run(values, folder, params)]


def count_missing_as_invalid(out: CheckOutcome, facts: pd.DataFrame) -> CheckOutcome:
    """Score ``format_valid`` over every case, not only the files that exist.

    GX skips the missing files (their facts are null), so an empty folder would score a full
    format item; a missing file earns the missing-file code, not a format code, but it is not a
    valid prediction either.
    """
    missing = 1.0 - float(facts["exists"].mean()) if len(facts) else 1.0
    for i, item in enumerate(out.items):
        if item.name == "format_valid" and missing:
            out.items[i] = item.model_copy(
                update={
                    "score": max(0.0, item.score - missing),
                    "reason": f"{item.reason} ({missing:.0%} of cases have no file)",
                }
            )
    return out


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


@cache
def file_suites(missing_code: str, format_code: str, where: str) -> tuple[Suite, Suite]:
    """The facts suite and the label-value suite, earning ``missing_code``/``format_code``."""
    import great_expectations.expectations as gxe

    fix_grid = "write the label map on the input image's grid (copy its affine); never resample"
    facts = Suite(
        f"{where}_files",
        (
            Rule(
                "completion",
                missing_code,
                "a prediction file exists for every case",
                f"write one file per case into {where}",
                gxe.ExpectColumnValuesToBeInSet(column="exists", value_set=[True]),
                partial=True,
            ),
            Rule(
                "format_valid",
                format_code,
                "every file is a readable image",
                "save with nibabel as NIfTI (.nii.gz)",
                gxe.ExpectColumnValuesToBeInSet(column="readable", value_set=[True]),
                partial=True,
            ),
            Rule(
                "format_valid",
                format_code,
                "shape equals the input image's shape",
                fix_grid,
                gxe.ExpectColumnPairValuesToBeEqual(
                    column_A="shape",
                    column_B="image_shape",
                    ignore_row_if="either_value_is_missing",
                ),
                partial=True,
            ),
            Rule(
                "format_valid",
                format_code,
                f"affine and spacing equal the input image's within {AFFINE_TOL} mm",
                fix_grid,
                gxe.ExpectColumnValuesToBeBetween(
                    column="affine_err_mm", min_value=0.0, max_value=AFFINE_TOL
                ),
                partial=True,
            ),
            Rule(
                "format_valid",
                format_code,
                "the label map has an integer dtype",
                "cast to uint8 before saving",
                gxe.ExpectColumnValuesToBeInSet(column="dtype_kind", value_set=["i", "u"]),
                partial=True,
            ),
            Rule(
                "format_valid",
                format_code,
                "no NaN or inf voxel",
                "replace NaN/inf before casting the label map to an integer type",
                gxe.ExpectColumnValuesToBeBetween(column="n_nonfinite", max_value=0),
                partial=True,
            ),
        ),
        ("case_id",),
    )
    values = Suite(
        f"{where}_label_values",
        (
            Rule(
                "format_valid",
                format_code,
                "every voxel value is a label of task.json",
                "predict only the label values listed in task.json's labels",
                gxe.ExpectColumnValuesToBeInSet(column="value", value_set={"$PARAMETER": "labels"}),
            ),
        ),
        ("case_id", "value"),
    )
    return facts, values
