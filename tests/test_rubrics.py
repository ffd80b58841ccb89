"""Stage rubrics on real artifacts of the real tiny task: a perfect workspace, then one break."""

import json
import shutil

import nibabel as nib
import numpy as np
import pytest
import yaml

from gate.contract import MANIFEST_FILE, PLAN_FILE, PREDICTIONS_DIR, SPLIT_FILE
from gate.evaluate import judge_stages, score_outcome, workflow_score
from tests.oracle import build_oracle, write_index, write_manifest


@pytest.fixture
def oracle(cfg_factory, tmp_path):
    return build_oracle(cfg_factory(), tmp_path)


def codes(oracle) -> set[str]:
    return {f.code for s in judge_stages(oracle.fresh()) for f in s.findings}


def test_perfect_workspace_scores_full_marks_with_no_code(oracle):
    stages = judge_stages(oracle.fresh())
    assert {s.stage: s.score for s in stages} == {
        "plan": 1.0, "setup": 1.0, "validate": 1.0, "inference": 1.0, "submit": 1.0}
    assert [f.code for s in stages for f in s.findings] == []
    assert workflow_score(stages, oracle.cfg.task.stage_weights) == 1.0
    outcome = score_outcome(oracle.fresh())
    assert outcome.value == 1.0 and outcome.n_missing == 0


def test_flipped_direction_in_plan(oracle):
    plan = yaml.safe_load((oracle.workspace / PLAN_FILE).read_text())
    plan["greater_is_better"] = False
    (oracle.workspace / PLAN_FILE).write_text(yaml.safe_dump(plan))
    stages = judge_stages(oracle.fresh())
    assert "PLAN-DIRECTION" in {f.code for f in stages[0].findings}
    assert stages[0].score < 1.0


def test_ungrouped_split_strategy(oracle):
    plan = yaml.safe_load((oracle.workspace / PLAN_FILE).read_text())
    plan["split"] = {"strategy": "random_holdout", "validation_fraction": 0.2}
    (oracle.workspace / PLAN_FILE).write_text(yaml.safe_dump(plan))
    assert "PLAN-SPLIT-UNGROUPED" in codes(oracle)


def test_patient_leak_in_split(oracle):
    split = (oracle.workspace / SPLIT_FILE).read_text().splitlines()
    cases = oracle.evidence.cases
    by_patient = cases[cases["split"] == "train"].groupby("patient_id")["case_id"].apply(list)
    patient, ids = next((p, c) for p, c in by_patient.items() if len(c) > 1)
    rows = [line for line in split[1:] if line.split(",")[0] != ids[0]]
    other_fold = int(next(r for r in split[1:] if r.startswith(ids[1])).split(",")[2])
    rows.append(f"{ids[0]},{patient},{1 - other_fold}")
    (oracle.workspace / SPLIT_FILE).write_text("\n".join([split[0], *rows]) + "\n")
    assert "VALID-LEAK-PATIENT" in codes(oracle)


def test_inflated_claim_does_not_reproduce(oracle):
    path = oracle.workspace / "validation" / "report.json"
    report = json.loads(path.read_text())
    report["value"] = min(1.0, report["value"] + 0.2) if report["value"] < 0.8 else 0.5
    path.write_text(json.dumps(report))
    assert "VALID-CLAIM-MISMATCH" in codes(oracle)


def test_missing_and_malformed_predictions(oracle):
    test_ids = oracle.evidence.test_ids
    (oracle.workspace / PREDICTIONS_DIR / f"{test_ids[0]}.nii.gz").unlink()
    bad = oracle.workspace / PREDICTIONS_DIR / f"{test_ids[1]}.nii.gz"
    img = nib.load(bad)
    nib.save(nib.Nifti1Image(np.asarray(img.dataobj)[:-1].astype(np.float32), img.affine), bad)
    stages = judge_stages(oracle.fresh())
    inference = next(s for s in stages if s.stage == "inference")
    found = {f.code for f in inference.findings}
    assert {"INFER-MISSING-CASES", "INFER-FORMAT"} <= found
    assert inference.score < 1.0
    outcome = score_outcome(oracle.fresh())
    assert outcome.n_missing == 1 and outcome.value < 1.0


def test_checksum_mismatch_and_untraceable_submission(oracle):
    manifest = json.loads((oracle.workspace / MANIFEST_FILE).read_text())
    manifest["files"][0]["sha256"] = "0" * 64
    (oracle.workspace / MANIFEST_FILE).write_text(json.dumps(manifest))
    assert "SUBMIT-CHECKSUM" in codes(oracle)
    write_manifest(oracle.workspace)
    first = oracle.evidence.test_ids[0]
    sub = oracle.workspace / "submission" / "predictions" / f"{first}.nii.gz"
    shutil.copy(oracle.workspace / PREDICTIONS_DIR / f"{oracle.evidence.test_ids[1]}.nii.gz", sub)
    write_manifest(oracle.workspace)
    found = codes(oracle)
    assert "SUBMIT-UNTRACEABLE" in found and "SUBMIT-CHECKSUM" not in found
    # the swapped file also sits on another case's grid, which the schema check sees
    assert found <= {"SUBMIT-UNTRACEABLE", "SUBMIT-SCHEMA"}


def test_submission_with_wrong_columns_and_extra_ids(oracle):
    ids = oracle.evidence.test_ids
    write_index(oracle.workspace, [(c, f"predictions/{c}.nii.gz") for c in ids] +
                [("case_9999", "predictions/x.nii.gz")], header=("id", "path"))
    write_manifest(oracle.workspace)
    assert "SUBMIT-SCHEMA" in codes(oracle)


def test_nothing_written_is_judged_zero_not_unjudged(oracle, tmp_path):
    for child in oracle.workspace.iterdir():
        if child.name not in ("task.json", "BRIEF.md", "data"):
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    stages = judge_stages(oracle.fresh())
    assert all(s.status == "judged" and s.score == 0.0 for s in stages)
    assert {"PLAN-MISSING", "VALID-MISSING", "INFER-MISSING-CASES", "SUBMIT-MISSING"} <= \
        codes(oracle)


def test_validation_folds_that_select_no_case_earn_a_code(oracle):
    path = oracle.workspace / "validation" / "report.json"
    report = json.loads(path.read_text())
    report["validation_folds"] = [99]
    path.write_text(json.dumps(report))
    assert "VALID-SPLIT-INVALID" in codes(oracle)


def test_a_claim_without_its_split_is_no_validation(oracle):
    (oracle.workspace / SPLIT_FILE).unlink()
    assert "VALID-MISSING" in codes(oracle)


@pytest.mark.parametrize("content", ["[" * 5000, "fold: 1e400"])
def test_pathological_artifacts_become_codes_not_crashes(oracle, content):
    (oracle.workspace / "validation" / "report.json").write_text(content)
    (oracle.workspace / SPLIT_FILE).write_text("case_id,patient_id,fold\ncase_0000,pat_000,inf\n")
    manifest = json.loads((oracle.workspace / MANIFEST_FILE).read_text())
    manifest["files"][0]["path"] = "/etc/hostname"
    (oracle.workspace / MANIFEST_FILE).write_text(json.dumps(manifest))
    found = codes(oracle)
    assert {"VALID-MISSING", "VALID-SPLIT-INVALID", "SUBMIT-CHECKSUM"} <= found
