"""The known failures, one function each, applied to a workspace holding a clean reference run.

Each fault is coherent: it changes what a careless or dishonest agent would change and keeps
everything else consistent (a removed prediction is removed from the submission and manifest
too), so the gate has exactly one failure to find. ``expect`` is the code the gate must give;
``also`` lists codes that are the same failure seen from a later stage.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nibabel as nib
import numpy as np
import yaml

from gate import contract as C

INDEX = "submission/submission.csv"


@dataclass(frozen=True)
class Fault:
    name: str
    description: str
    expect: str
    commit: Callable[[Path], None]
    also: tuple[str, ...] = ()


# ---------------------------------------------------------------- helpers


def write_plan(ws: Path) -> None:
    """A valid plan on its own, for faults committed before any pipeline work (``--early``)."""
    task = C.read_task(ws)
    plan = C.Plan(
        task_type=task.task_type,
        metric=task.metric.name,
        greater_is_better=task.metric.greater_is_better,
        split=C.SplitPlan(
            strategy="group_holdout", group_key=task.grouping_key, validation_fraction=0.25
        ),
        lanes=[C.MethodLane(name="baseline", hypothesis="a U-Net fits", budget_s=10)],
        budget_s=10,
    )
    C.write_model(ws, C.PLAN_FILE, plan)


def fit_plan_budget(ws: Path, budget_s: float) -> None:
    """A restored plan was written under another run's budget; state this run's."""
    path = ws / C.PLAN_FILE
    if budget_s and path.is_file():
        plan = yaml.safe_load(path.read_text())
        plan["budget_s"] = min(float(plan["budget_s"]), budget_s)
        for lane in plan.get("lanes", []):
            lane["budget_s"] = min(float(lane["budget_s"]), budget_s)
        path.write_text(yaml.safe_dump(plan, sort_keys=False))


def read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def write_rows(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)


def rewrite_manifest(ws: Path) -> None:
    """Checksums of the submission as it now is: an honest manifest of a faulty submission."""
    manifest = C.read_model(ws, C.MANIFEST_FILE, C.Manifest)
    files = sorted(
        p for p in (ws / C.SUBMISSION_DIR).rglob("*") if p.is_file() and p.name != "manifest.json"
    )
    manifest.files = [
        C.FileChecksum(path=p.relative_to(ws).as_posix(), sha256=C.sha256_file(p)) for p in files
    ]
    C.write_model(ws, C.MANIFEST_FILE, manifest)


def test_ids(ws: Path) -> list[str]:
    task = C.read_task(ws)
    return sorted(r["case_id"] for r in C.read_cases(ws / task.data.cases) if r["split"] == "test")


def edit_prediction(
    ws: Path, case_id: str, change: Callable[[nib.Nifti1Image], nib.Nifti1Image]
) -> None:
    """Apply ``change`` to the S4 prediction and to its submitted copy alike."""
    name = f"{case_id}.nii.gz"
    for path in (ws / C.PREDICTIONS_DIR / name, ws / C.SUBMISSION_DIR / "predictions" / name):
        nib.save(change(nib.load(path)), path)
    rewrite_manifest(ws)


def _revalidate(ws: Path, val_ids: list[str]) -> None:
    """Rewrite the validation claim for ``val_ids`` with the reference agent's own scorer."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "monai_unet"))
    import model as M  # the reference agent's module: the same Dice it reports with

    task = C.read_task(ws)
    labels = task.foreground_labels()
    scores = []
    for cid in val_ids:
        pred = np.asarray(nib.load(ws / C.VALIDATION_PREDICTIONS_DIR / f"{cid}.nii.gz").dataobj)
        ref = np.asarray(nib.load(ws / task.data.train_labels / f"{cid}.nii.gz").dataobj)
        scores.append(M.dice_per_label(pred, ref, labels))
    value, per_label = M.macro(scores, labels)
    report = C.read_model(ws, C.VALIDATION_REPORT_FILE, C.ValidationReport)
    report.value, report.n_cases = value, len(val_ids)
    report.per_label = {str(k): v for k, v in per_label.items()}
    C.write_model(ws, C.VALIDATION_REPORT_FILE, report)
    _claim(ws, value)


def _claim(ws: Path, value: float) -> None:
    manifest = C.read_model(ws, C.MANIFEST_FILE, C.Manifest)
    metric = C.read_task(ws).metric.name
    if metric in manifest.claimed:
        manifest.claimed[metric] = value
        C.write_model(ws, C.MANIFEST_FILE, manifest)


# ---------------------------------------------------------------- S3 validate


def leak_patient(ws: Path) -> None:
    """Move one study of a validation patient into training: that patient is in both folds."""
    rows = read_rows(ws / C.SPLIT_FILE)
    header, body = rows[0], rows[1:]
    val = [r for r in body if r[2] == "1"]
    by_patient: dict[str, list[list[str]]] = {}
    for r in val:
        by_patient.setdefault(r[1], []).append(r)
    patient = next((p for p, rs in sorted(by_patient.items()) if len(rs) > 1), None)
    if patient is None:
        raise SystemExit("faulty agent: no validation patient has two studies to leak")
    moved = by_patient[patient][0]
    moved[2] = "0"
    write_rows(ws / C.SPLIT_FILE, [header, *body])
    (ws / C.VALIDATION_PREDICTIONS_DIR / f"{moved[0]}.nii.gz").unlink()
    _revalidate(ws, sorted(r[0] for r in body if r[2] == "1"))


def test_in_training(ws: Path) -> None:
    task = C.read_task(ws)
    case = next(r for r in C.read_cases(ws / task.data.cases) if r["split"] == "test")
    rows = read_rows(ws / C.SPLIT_FILE)
    write_rows(ws / C.SPLIT_FILE, [*rows, [case["case_id"], case["patient_id"], "0"]])


def flipped_direction(ws: Path) -> None:
    """Declare lower-is-better for Dice and select the checkpoint that is best that way."""
    plan = yaml.safe_load((ws / C.PLAN_FILE).read_text())
    plan["greater_is_better"] = not plan["greater_is_better"]
    (ws / C.PLAN_FILE).write_text(yaml.safe_dump(plan, sort_keys=False))
    report = C.read_model(ws, C.VALIDATION_REPORT_FILE, C.ValidationReport)
    report.greater_is_better = not report.greater_is_better
    if report.history:
        pick = min if report.greater_is_better is False else max
        report.selected_epoch = pick(report.history, key=lambda h: h.value).epoch
    C.write_model(ws, C.VALIDATION_REPORT_FILE, report)


def inflated_claim(ws: Path) -> None:
    report = C.read_model(ws, C.VALIDATION_REPORT_FILE, C.ValidationReport)
    report.value = report.value + 0.15 if report.value <= 0.85 else report.value - 0.3
    C.write_model(ws, C.VALIDATION_REPORT_FILE, report)
    _claim(ws, report.value)


def skip_validation(ws: Path) -> None:
    import shutil

    shutil.rmtree(ws / C.VALIDATION_DIR)


# ---------------------------------------------------------------- S4 inference, S5 submit


def missing_predictions(ws: Path) -> None:
    gone = test_ids(ws)[0]
    (ws / C.PREDICTIONS_DIR / f"{gone}.nii.gz").unlink()
    (ws / C.SUBMISSION_DIR / "predictions" / f"{gone}.nii.gz").unlink()
    rows = read_rows(ws / INDEX)
    write_rows(ws / INDEX, [r for r in rows if r[0] != gone])
    rewrite_manifest(ws)


def wrong_columns(ws: Path) -> None:
    rows = read_rows(ws / INDEX)
    write_rows(ws / INDEX, [["id", "path"], *rows[1:]])
    rewrite_manifest(ws)


def extra_ids(ws: Path) -> None:
    rows = read_rows(ws / INDEX)
    write_rows(ws / INDEX, [*rows, ["case_9999", rows[1][1]]])
    rewrite_manifest(ws)


def nan_values(ws: Path) -> None:
    def change(img: nib.Nifti1Image) -> nib.Nifti1Image:
        data = np.asarray(img.dataobj).astype(np.float32)
        data[:2, :2, :2] = np.nan
        return nib.Nifti1Image(data, img.affine)

    edit_prediction(ws, test_ids(ws)[0], change)


def wrong_geometry(ws: Path) -> None:
    def change(img: nib.Nifti1Image) -> nib.Nifti1Image:
        affine = img.affine.copy()
        affine[:3, :3] *= 1.5  # another spacing: the label map no longer lies on the image
        return nib.Nifti1Image(np.asarray(img.dataobj), affine)

    edit_prediction(ws, test_ids(ws)[0], change)


def bad_labels(ws: Path) -> None:
    def change(img: nib.Nifti1Image) -> nib.Nifti1Image:
        data = np.asarray(img.dataobj).copy()
        data[:3, :3, :3] = 7
        return nib.Nifti1Image(data, img.affine)

    edit_prediction(ws, test_ids(ws)[0], change)


def bad_checksum(ws: Path) -> None:
    manifest = json.loads((ws / C.MANIFEST_FILE).read_text())
    manifest["files"][0]["sha256"] = "0" * 64
    (ws / C.MANIFEST_FILE).write_text(json.dumps(manifest, indent=2))


# ---------------------------------------------------------------- run


def crash(ws: Path) -> None:
    raise RuntimeError("faulty agent: crashing on purpose after writing its artifacts")


def timeout(ws: Path) -> None:
    """Sleep past any budget, with a child process that must not outlive the run either."""
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    print("faulty agent: sleeping past the budget", flush=True)
    time.sleep(3600)


_IMAGE = ("SUBMIT-SCHEMA",)  # a bad prediction file is submitted as such, too
FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "leak_patient",
            "a patient in training and validation",
            "VALID-LEAK-PATIENT",
            leak_patient,
        ),
        Fault(
            "test_in_training",
            "a test case in a training fold",
            "VALID-LEAK-TEST",
            test_in_training,
        ),
        Fault(
            "flipped_direction",
            "Dice declared lower-is-better",
            "VALID-DIRECTION",
            flipped_direction,
            ("PLAN-DIRECTION",),
        ),
        Fault("inflated_claim", "claimed Dice off by 0.15", "VALID-CLAIM-MISMATCH", inflated_claim),
        Fault(
            "skip_validation",
            "no validation at all",
            "VALID-MISSING",
            skip_validation,
            ("RUN-INCOMPLETE",),
        ),
        Fault(
            "missing_predictions",
            "a test case never predicted",
            "INFER-MISSING-CASES",
            missing_predictions,
            _IMAGE,
        ),
        Fault("wrong_columns", "submission columns renamed", "SUBMIT-SCHEMA", wrong_columns),
        Fault(
            "extra_ids",
            "a submission row for a case that is not a test case",
            "SUBMIT-SCHEMA",
            extra_ids,
        ),
        Fault("nan_values", "NaN voxels in a prediction", "INFER-FORMAT", nan_values, _IMAGE),
        Fault(
            "wrong_geometry",
            "prediction spacing differs from its image",
            "INFER-FORMAT",
            wrong_geometry,
            _IMAGE,
        ),
        Fault(
            "bad_labels",
            "label value 7 outside the task's labels",
            "INFER-FORMAT",
            bad_labels,
            _IMAGE,
        ),
        Fault(
            "bad_checksum",
            "a manifest checksum that does not match",
            "SUBMIT-CHECKSUM",
            bad_checksum,
        ),
        Fault("crash", "exits with an error after its work", "RUN-CRASH", crash),
        Fault("timeout", "runs past its wall-clock budget", "RUN-TIMEOUT", timeout),
    )
}
