"""The contract models and helpers shared by the gate and the agents."""

import json

import pytest

from gate.contract import (
    PLAN_FILE,
    STAGE_ARTIFACTS,
    STAGES,
    Manifest,
    Plan,
    ValidationReport,
    read_model,
    sha256_tree,
    write_model,
)
from gate.errors import ArtifactError

PLAN = {
    "task_type": "segmentation", "metric": "dice", "greater_is_better": True,
    "split": {"strategy": "group_holdout", "group_key": "patient_id", "validation_fraction": 0.25},
    "lanes": [{"name": "unet", "hypothesis": "a 3D U-Net fits", "budget_s": 100}],
    "budget_s": 100,
}


def test_every_stage_has_artifacts():
    assert [s.value for s in STAGES] == ["plan", "setup", "validate", "inference", "submit"]
    assert all(STAGE_ARTIFACTS[s] for s in STAGES)


def test_plan_round_trips_through_yaml(tmp_path):
    write_model(tmp_path, PLAN_FILE, Plan.model_validate(PLAN))
    assert read_model(tmp_path, PLAN_FILE, Plan).model_dump(mode="json")["split"]["group_key"] \
        == "patient_id"


def test_missing_artifact_names_the_file(tmp_path):
    with pytest.raises(ArtifactError) as err:
        read_model(tmp_path, PLAN_FILE, Plan)
    assert err.value.file == PLAN_FILE and "missing" in str(err.value)


def test_unparseable_artifact_names_the_file(tmp_path):
    (tmp_path / PLAN_FILE).write_text("task_type: [unclosed")
    with pytest.raises(ArtifactError, match=r"plan\.yaml: does not parse"):
        read_model(tmp_path, PLAN_FILE, Plan)


@pytest.mark.parametrize("patch, field", [
    ({"greater_is_better": "sometimes"}, "greater_is_better"),
    ({"task_type": "painting"}, "task_type"),
    ({"lanes": []}, "lanes"),
    ({"surprise": 1}, "surprise"),
])
def test_invalid_plan_names_the_field(tmp_path, patch, field):
    (tmp_path / PLAN_FILE).write_text(json.dumps({**PLAN, **patch}))
    with pytest.raises(ArtifactError) as err:
        read_model(tmp_path, PLAN_FILE, Plan)
    assert err.value.field.startswith(field)
    assert "Plan" in str(err.value)


def test_report_and_manifest_require_their_evidence():
    with pytest.raises(ValueError):
        ValidationReport(metric="dice", greater_is_better=True, value=0.9, validation_folds=[],
                         n_cases=3)
    with pytest.raises(ValueError):
        Manifest(agent="a", files=[])


def test_tree_hash_is_stable_and_content_sensitive(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text("print(1)")
    (tmp_path / "b.py").write_text("print(2)")
    first = sha256_tree(tmp_path)
    assert sha256_tree(tmp_path) == first
    (tmp_path / "b.py").write_text("print(3)")
    assert sha256_tree(tmp_path) != first
