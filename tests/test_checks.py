"""The GX checks on real artifacts of the real tiny task: a perfect workspace, then one break.

Each test breaks one rule and asserts the code, the message (artifact, rows at fault with a
count, the fix) and the GX result JSON that is logged on the stage's child run.
"""

import dataclasses
import json
import shutil

import nibabel as nib
import numpy as np
import pandas as pd
import pytest

from checks import CHECKS, DEFAULT_CHECKS, enabled
from gate.contract import (
    MANIFEST_FILE,
    SETUP_CODE_DIR,
    SPLIT_FILE,
    VALIDATION_PREDICTIONS_DIR,
    VALIDATION_REPORT_FILE,
)
from gate.errors import ConfigError
from gate.evaluate import judge_stages
from gate.evidence import Evidence
from gate.registry import UnknownNameError
from gate.tasks import TaskViews
from tests.oracle import build_oracle, write_index, write_manifest


@pytest.fixture
def oracle(cfg_factory, tmp_path):
    return build_oracle(cfg_factory(), tmp_path)


def fresh(ev: Evidence, **changes) -> Evidence:
    """A new Evidence (cached artifacts dropped) after the workspace was edited."""
    return dataclasses.replace(ev, **changes)


def run(ev: Evidence, name: str):
    return CHECKS.get(name).run(fresh(ev))


def only(out, code: str):
    found = [f for f in out.findings if f.code == code]
    assert found, [f.message for f in out.findings]
    return found[0]


def test_every_default_check_passes_a_perfect_workspace_with_gx_json(oracle):
    for name in DEFAULT_CHECKS:
        out = run(oracle.evidence, name)
        assert out.findings == [], (name, [f.message for f in out.findings])
        assert all(i.score == 1.0 for i in out.items), (name, out.items)
        assert out.result["success"] is True
        suites = out.result["suites"]
        assert suites and all(s["meta"]["great_expectations_version"] for s in suites.values())
        json.dumps(out.result)  # logged with mlflow's log_dict: must be plain JSON


def test_stage_results_carry_the_check_results(oracle):
    stages = {s.stage: s for s in judge_stages(oracle.evidence)}
    assert set(stages["validate"].checks) == {"leakage", "direction", "claims"}
    assert set(stages["submit"].checks) == {"submission", "traceability"}


def test_unknown_check_name_is_a_config_error_with_a_hint(oracle):
    with pytest.raises(UnknownNameError, match="Did you mean 'leakage'"):
        enabled(["leakgae"], "validate")
    cfg = dataclasses.replace(oracle.evidence.task_cfg, checks=["leakgae"])
    with pytest.raises(ConfigError, match="checks"):
        judge_stages(fresh(oracle.evidence, task_cfg=cfg))


def test_disabled_check_leaves_its_rule_unchecked(oracle):
    (oracle.workspace / SPLIT_FILE).open("a").write(f"{oracle.evidence.test_ids[0]},x,0\n")
    cfg = dataclasses.replace(
        oracle.evidence.task_cfg, checks=[c for c in DEFAULT_CHECKS if c != "leakage"]
    )
    codes = {f.code for s in judge_stages(fresh(oracle.evidence, task_cfg=cfg)) for f in s.findings}
    assert "VALID-LEAK-TEST" not in codes


def _split(ev) -> pd.DataFrame:
    return pd.read_csv(ev.workspace / SPLIT_FILE, dtype=str)


def test_relabelled_patient_ids_cannot_hide_a_leak(oracle):
    ev = oracle.evidence
    split = _split(ev)
    val = split[split["fold"] == "1"]
    train = split[split["fold"] == "0"]
    # A training study of a validation patient, renamed to a made-up patient id.
    cases = ev.cases
    multi = cases[cases["split"] == "train"].groupby("patient_id")["case_id"].apply(list)
    patient = next(p for p in val["patient_id"] if len(multi[p]) > 1)
    moved = multi[patient][0]
    split.loc[split["case_id"] == moved, ["patient_id", "fold"]] = ["pat_fake", "0"]
    split.to_csv(ev.workspace / SPLIT_FILE, index=False)
    out = run(ev, "leakage")
    leak = only(out, "VALID-LEAK-PATIENT")
    assert SPLIT_FILE in leak.message and patient in leak.message and "Fix:" in leak.message
    relabel = only(out, "VALID-SPLIT-INVALID")
    assert moved in relabel.message and "1 of" in relabel.message
    assert len(train) >= 1


def test_test_cases_unknown_ids_duplicates_and_omissions_are_named(oracle):
    ev = oracle.evidence
    split = _split(ev)
    test_case = ev.cases.loc[ev.test_ids[0]]
    extra = pd.DataFrame(
        [
            {"case_id": test_case.case_id, "patient_id": test_case.patient_id, "fold": "0"},
            {"case_id": "case_9999", "patient_id": "pat_9", "fold": "0"},
            split.iloc[0].to_dict(),
        ]
    )
    dropped = split.iloc[-1]["case_id"]
    pd.concat([split.iloc[:-1], extra]).to_csv(ev.workspace / SPLIT_FILE, index=False)
    out = run(ev, "leakage")
    assert test_case.case_id in only(out, "VALID-LEAK-TEST").message
    invalid = " ".join(f.message for f in out.findings if f.code == "VALID-SPLIT-INVALID")
    for needle in ("case_9999", dropped, split.iloc[0]["case_id"], "each case id appears once"):
        assert needle in invalid
    scores = {i.name: i.score for i in out.items}
    assert scores["split_valid"] == 0 and scores["no_test_cases"] == 0


def test_non_integer_fold_is_invalid_not_a_crash(oracle):
    path = oracle.workspace / SPLIT_FILE
    lines = path.read_text().splitlines()
    lines[1] = ",".join([*lines[1].split(",")[:2], "1.5"])
    path.write_text("\n".join(lines) + "\n")
    stages = {s.stage: s for s in judge_stages(fresh(oracle.evidence))}
    codes = {f.code for f in stages["validate"].findings}
    assert "VALID-SPLIT-INVALID" in codes
    assert stages["validate"].checks["leakage"]["skipped"]


def _writable_views(ev: Evidence, tmp_path) -> TaskViews:
    root = tmp_path / "views"
    shutil.copytree(ev.views.root, root)
    for p in [root, *root.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return TaskViews(root, ev.views.key)


def test_near_duplicate_images_across_patients_straddling_folds_leak(oracle, tmp_path):
    ev = oracle.evidence
    split = _split(ev)
    a = split[split["fold"] == "0"].iloc[0]
    b = split[(split["fold"] == "1") & (split["patient_id"] != a["patient_id"])].iloc[0]
    views = _writable_views(ev, tmp_path)
    img = nib.load(views.public / "imagesTr" / f"{a['case_id']}.nii.gz")
    noisy = np.asarray(img.dataobj) + np.random.default_rng(0).normal(0, 10, img.shape)
    target = views.public / "imagesTr" / f"{b['case_id']}.nii.gz"
    nib.save(nib.Nifti1Image(noisy.astype(np.float32), nib.load(target).affine), target)
    out = CHECKS.get("leakage").run(fresh(ev, views=views))
    dup = only(out, "VALID-LEAK-DUPLICATE")
    assert a["case_id"] in dup.message and b["case_id"] in dup.message
    assert out.result["near_duplicates"][0]["distance"] < 0.08
    assert run(ev, "leakage").result["near_duplicates"] == []  # the real data has none


def test_site_leakage_only_when_the_task_asks_for_it(oracle):
    ev = oracle.evidence
    train = ev.cases[ev.cases["split"] == "train"]
    held_out = sorted(train["site"])[0]
    rows = [(r.case_id, r.patient_id, int(r.site == held_out)) for r in train.itertuples()]
    pd.DataFrame(rows, columns=["case_id", "patient_id", "fold"]).to_csv(
        ev.workspace / SPLIT_FILE, index=False
    )
    assert run(ev, "site_leakage").findings == []  # leave-site-out
    other = next(r for r in train.itertuples() if r.site != held_out)
    rows = [(c, p, 1 if c == other.case_id else f) for c, p, f in rows]
    pd.DataFrame(rows, columns=["case_id", "patient_id", "fold"]).to_csv(
        ev.workspace / SPLIT_FILE, index=False
    )
    site = only(run(ev, "site_leakage"), "VALID-LEAK-SITE")
    assert other.site in site.message and "leave-site-out" in site.message
    assert "site_leakage" not in DEFAULT_CHECKS


def test_inflated_claim_names_the_claim_and_the_recomputed_value(oracle):
    path = oracle.workspace / VALIDATION_REPORT_FILE
    report = json.loads(path.read_text())
    report["value"] = report["value"] - 0.3
    report["n_cases"] += 1
    path.write_text(json.dumps(report))
    out = run(oracle.evidence, "claims")
    msg = only(out, "VALID-CLAIM-MISMATCH").message
    assert "report.value (dice)" in msg and "report.n_cases" in msg and "2 of" in msg
    rows = {r["claim"]: r for r in out.result["claims"]}
    assert rows["report.n_cases"]["abs_diff"] == 1.0


def test_claim_is_recomputed_on_the_split_validation_cases_only(oracle):
    ev = oracle.evidence
    split = _split(ev)
    # Report a validation fold with no cases: nothing to recompute, no crash, items 0.
    path = oracle.workspace / VALIDATION_REPORT_FILE
    report = json.loads(path.read_text())
    report["validation_folds"] = [7]
    path.write_text(json.dumps(report))
    out = run(ev, "claims")
    assert out.result["skipped"] and all(i.score == 0 for i in out.items)
    assert len(split) > 0


def test_validation_predictions_copied_from_labels_are_flagged(oracle):
    ev = oracle.evidence
    val_ids = fresh(ev).validation_ids
    for cid in val_ids:
        shutil.copy(
            ev.reference_path(cid), ev.workspace / VALIDATION_PREDICTIONS_DIR / f"{cid}.nii.gz"
        )
    out = run(ev, "claims")
    msg = only(out, "VALID-LABEL-COPY").message
    assert f"{len(val_ids)} of {len(val_ids)}" in msg and val_ids[0] in msg


def test_selected_checkpoint_must_be_best_by_the_task_direction(oracle):
    path = oracle.workspace / VALIDATION_REPORT_FILE
    report = json.loads(path.read_text())
    report["history"] = [
        {"epoch": 1, "value": 0.4},
        {"epoch": 2, "value": 0.7},
        {"epoch": 3, "value": 0.6},
    ]
    report["selected_epoch"] = 3
    path.write_text(json.dumps(report))
    msg = only(run(oracle.evidence, "direction"), "VALID-DIRECTION").message
    assert "selected checkpoint" in msg and "Fix:" in msg
    report["selected_epoch"] = 2
    path.write_text(json.dumps(report))
    assert run(oracle.evidence, "direction").findings == []


def test_wrong_columns_extra_and_missing_ids_in_the_submission(oracle):
    ids = oracle.evidence.test_ids
    rows = [(c, f"predictions/{c}.nii.gz") for c in ids[1:]] + [("case_9999", "predictions/x")]
    write_index(oracle.workspace, rows, header=("id", "file"))
    write_manifest(oracle.workspace)
    out = run(oracle.evidence, "submission")
    msgs = " ".join(f.message for f in out.findings if f.code == "SUBMIT-SCHEMA")
    assert "columns are ['case_id', 'file']" in msgs
    write_index(oracle.workspace, rows)
    out = run(oracle.evidence, "submission")
    msgs = " ".join(f.message for f in out.findings if f.code == "SUBMIT-SCHEMA")
    assert "case_9999" in msgs and ids[0] in msgs and "every test case has a row" in msgs


def test_unparseable_submission_is_a_code_not_a_crash(oracle):
    (oracle.workspace / "submission" / "submission.csv").write_bytes(b"\xff\xfe\x00garbage")
    stages = {s.stage: s for s in judge_stages(fresh(oracle.evidence))}
    assert "SUBMIT-SCHEMA" in {f.code for f in stages["submit"].findings}


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda d, a: (d.astype(np.float32) * np.nan, a), "no NaN or inf voxel"),
        (lambda d, a: (d, a @ np.diag([1.5, 1.5, 1.5, 1.0])), "affine and spacing"),
        (lambda d, a: (np.where(d > 0, 7, 0).astype(np.uint8), a), "label of task.json"),
        (lambda d, a: (d[:-1], a), "shape equals"),
    ],
)
def test_image_prediction_rules(oracle, change, needle):
    ev = oracle.evidence
    cid = ev.test_ids[0]
    path = ev.workspace / "predictions" / f"{cid}.nii.gz"
    img = nib.load(path)
    data, affine = change(np.asarray(img.dataobj), img.affine)
    nib.save(nib.Nifti1Image(data, affine), path)
    out = run(ev, "predictions")
    msg = " ".join(f.message for f in out.findings if f.code == "INFER-FORMAT")
    assert needle in msg and cid in msg and "predictions" in msg and "Fix:" in msg


def test_checksums_manifest_coverage_and_code_hash(oracle):
    ws = oracle.workspace
    manifest = json.loads((ws / MANIFEST_FILE).read_text())
    manifest["files"] = manifest["files"][1:]  # one submitted file without a checksum
    (ws / MANIFEST_FILE).write_text(json.dumps(manifest))
    out = run(oracle.evidence, "traceability")
    assert "has a checksum in the manifest" in only(out, "SUBMIT-CHECKSUM").message
    write_manifest(ws)
    (ws / SETUP_CODE_DIR / "train.py").write_text("print('changed after the smoke run')\n")
    msg = only(run(oracle.evidence, "traceability"), "SUBMIT-UNTRACEABLE").message
    assert "setup/smoke.json" in msg and "Fix:" in msg
