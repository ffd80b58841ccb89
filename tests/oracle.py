"""Builds a workspace as a perfect agent would leave it, so rubrics and checks can be tested on
real artifacts of the real task, then broken one way at a time."""

from __future__ import annotations

import csv
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import nibabel as nib
import numpy as np

from gate.config import RunConfig
from gate.contract import (
    ENVIRONMENT_FILE,
    MANIFEST_FILE,
    PLAN_FILE,
    PREDICTIONS_DIR,
    SETUP_CODE_DIR,
    SMOKE_FILE,
    VALIDATION_PREDICTIONS_DIR,
    VALIDATION_REPORT_FILE,
    FileChecksum,
    Manifest,
    MethodLane,
    Plan,
    SmokeRecord,
    SplitPlan,
    ValidationReport,
    sha256_file,
    sha256_tree,
    write_model,
    write_split,
)
from gate.evidence import Evidence
from gate.metrics import METRICS, macro_aggregate
from gate.record import ProcessResult
from gate.tasks import TASKS
from gate.workspace import build_workspace


@dataclass
class Oracle:
    cfg: RunConfig
    evidence: Evidence

    @property
    def workspace(self) -> Path:
        return self.evidence.workspace

    def fresh(self) -> Evidence:
        """Evidence caches what it reads (artifacts do not change after a run): re-read them."""
        return replace(self.evidence)


def build_oracle(cfg: RunConfig, root: Path) -> Oracle:
    task = TASKS.get(cfg.task.family)(cfg.task)
    views = task.prepare(root / "cache")
    contract = task.contract(cfg.tier.name, cfg.seed, cfg.budget)
    ws = build_workspace(root / "workspace", contract, views, cfg.tier.brief)
    process = ProcessResult(argv=["oracle"], exit_code=0, wall_s=1.0, stdout_log="-",
                            stderr_log="-")
    ev = Evidence(ws, contract, views, cfg.task, cfg.budget, process,
                  METRICS.get(cfg.task.metric))
    write_model(ws, PLAN_FILE, Plan(
        task_type=contract.task_type, metric=contract.metric.name,
        greater_is_better=contract.metric.greater_is_better,
        split=SplitPlan(strategy="group_holdout", group_key="patient_id",
                        validation_fraction=0.3),
        lanes=[MethodLane(name="oracle", hypothesis="labels are known", budget_s=10)],
        budget_s=10))
    code = ws / SETUP_CODE_DIR
    code.mkdir(parents=True)
    (code / "train.py").write_text("print('train')\n")
    (ws / ENVIRONMENT_FILE).write_text("numpy==2.0\n")
    write_model(ws, SMOKE_FILE, SmokeRecord(ok=True, batch_shape=[1, 1, 8, 8, 8], loss=0.5,
                                            seconds=0.1, device="cpu",
                                            code_sha256=sha256_tree(code)))
    cases = views.cases()
    train = cases[cases["split"] == "train"]
    patients = sorted(train["patient_id"].unique())
    val_patients = set(patients[: max(1, len(patients) // 3)])
    rows = [(r.case_id, r.patient_id, 1 if r.patient_id in val_patients else 0)
            for r in train.itertuples()]
    write_split(ws, rows)
    val_ids = [cid for cid, _, fold in rows if fold == 1]
    labels = contract.foreground_labels()
    scores = {}
    for cid in val_ids:
        ref = nib.load(ev.reference_path(cid))
        pred = np.asarray(ref.dataobj).astype(np.uint8)
        pred[0, 0, 0] = 1 if pred[0, 0, 0] == 0 else 0  # imperfect: not a copy of the labels
        _save(ws / VALIDATION_PREDICTIONS_DIR / f"{cid}.nii.gz", pred, ref.affine)
        scores[cid] = ev.metric.per_label(pred, np.asarray(ref.dataobj), labels)
    claim = macro_aggregate(scores, labels)
    write_model(ws, VALIDATION_REPORT_FILE, ValidationReport(
        metric="dice", greater_is_better=True, value=claim.value,
        per_label={str(k): v for k, v in claim.per_label.items()}, validation_folds=[1],
        n_cases=len(val_ids)))
    (ws / PREDICTIONS_DIR).mkdir()
    sub_dir = ws / "submission" / "predictions"
    sub_dir.mkdir(parents=True)
    for cid in ev.test_ids:
        shutil.copy(ev.reference_path(cid), ws / PREDICTIONS_DIR / f"{cid}.nii.gz")
        shutil.copy(ev.reference_path(cid), sub_dir / f"{cid}.nii.gz")
    write_index(ws, [(cid, f"predictions/{cid}.nii.gz") for cid in ev.test_ids])
    write_manifest(ws)
    return Oracle(cfg, ev)


def write_index(ws: Path, rows: list[tuple[str, str]], header: tuple[str, ...] = ("case_id",
                                                                                   "file")) -> None:
    with open(ws / "submission" / "submission.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def write_manifest(ws: Path) -> None:
    files = sorted(p for p in (ws / "submission").rglob("*") if p.is_file()
                   and p.name != "manifest.json")
    write_model(ws, MANIFEST_FILE, Manifest(
        agent="oracle", files=[FileChecksum(path=p.relative_to(ws).as_posix(),
                                            sha256=sha256_file(p)) for p in files],
        claimed={"dice": 1.0}))


def _save(path: Path, data: np.ndarray, affine: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nib.save(nib.Nifti1Image(data, affine), str(path))
