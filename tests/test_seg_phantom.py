"""The seg_phantom task: deterministic data, patient-grouped split, sites, and its contract."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import nibabel as nib
import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from gate.config import BudgetConfig, SegPhantomConfig
from gate.contract import STAGE_ARTIFACTS, TaskContract
from gate.metrics import METRICS
from gate.tasks.base import TaskViews
from gate.tasks.seg_phantom import SegPhantomTask

CONF = Path(__file__).resolve().parents[1] / "conf" / "task"


def tiny_cfg(**changes: object) -> SegPhantomConfig:
    raw = OmegaConf.load(CONF / "seg_phantom_tiny.yaml")
    raw.pop("defaults", None)
    cfg = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(SegPhantomConfig), raw))
    return replace(cfg, **changes)


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> TaskViews:
    return SegPhantomTask(tiny_cfg()).prepare(tmp_path_factory.mktemp("cache"))


def test_same_seed_same_arrays_other_seed_differs() -> None:
    first = SegPhantomTask(tiny_cfg()).generate()
    again = SegPhantomTask(tiny_cfg()).generate()
    other = SegPhantomTask(tiny_cfg(seed=1)).generate()
    assert [c.case_id for c in first] == [c.case_id for c in again]
    for a, b in zip(first, again, strict=True):
        assert np.array_equal(a.image, b.image) and np.array_equal(a.label, b.label)
        assert np.array_equal(a.affine, b.affine)
    assert not np.array_equal(first[0].image, other[0].image)


def test_materialised_arrays_are_reproducible(views: TaskViews, tmp_path: Path) -> None:
    again = SegPhantomTask(tiny_cfg()).prepare(tmp_path)
    cid = views.test_ids()[0]
    for rel in (f"public/imagesTs/{cid}.nii.gz", f"hidden/labelsTs/{cid}.nii.gz"):
        a = np.asarray(nib.load(views.root / rel).dataobj)
        b = np.asarray(nib.load(again.root / rel).dataobj)
        assert np.array_equal(a, b)


def test_case_table_patients_sites_and_studies(views: TaskViews) -> None:
    cfg = tiny_cfg()
    cases = views.cases()
    assert list(cases.columns) == ["case_id", "patient_id", "site", "split"]
    assert cases["case_id"].is_unique
    assert cases["case_id"].str.fullmatch(r"case_\d{4}").all()
    assert cases["patient_id"].str.fullmatch(r"pat_\d{3}").all()
    assert cases.groupby("patient_id")["split"].nunique().max() == 1  # no patient straddles
    assert cases.groupby("patient_id")["site"].nunique().max() == 1  # one site per patient
    assert cases["site"].nunique() >= 3
    assert cases.groupby("patient_id").size().max() >= 2
    per_split = cases.groupby("split")["patient_id"].nunique()
    assert per_split["train"] == cfg.n_train_patients and per_split["test"] == cfg.n_test_patients


def test_files_labels_and_affines(views: TaskViews) -> None:
    cfg = tiny_cfg()
    cases = views.cases()
    lesion_free = 0
    for row in cases.itertuples():
        if row.split == "train":
            img_path = views.public / "imagesTr" / f"{row.case_id}.nii.gz"
            lab_path = views.public / "labelsTr" / f"{row.case_id}.nii.gz"
            assert not (views.public / "imagesTs" / f"{row.case_id}.nii.gz").exists()
        else:
            img_path = views.public / "imagesTs" / f"{row.case_id}.nii.gz"
            lab_path = views.hidden / "labelsTs" / f"{row.case_id}.nii.gz"
            assert not (views.public / "labelsTr" / f"{row.case_id}.nii.gz").exists()
        img, lab = nib.load(img_path), nib.load(lab_path)
        assert img.shape == tuple(cfg.shape) == lab.shape
        assert img.get_data_dtype() == np.float32 and lab.get_data_dtype() == np.uint8
        np.testing.assert_allclose(np.abs(np.diag(img.affine)[:3]), cfg.spacing, rtol=1e-6)
        np.testing.assert_allclose(img.header.get_zooms(), cfg.spacing, rtol=1e-6)
        np.testing.assert_array_equal(img.affine, lab.affine)
        labels = np.asarray(lab.dataobj)
        assert set(np.unique(labels)) <= {0, 1, 2}
        assert (labels == 1).any()
        data = np.asarray(img.dataobj)
        assert data.min() < -800 and np.isfinite(data).all()  # air outside the body
        lesion_free += row.split == "test" and not (labels == 2).any()
    assert lesion_free >= cfg.min_lesion_free_test_cases
    assert len(list((views.hidden / "labelsTs").iterdir())) == len(views.test_ids())
    assert not list(views.public.rglob("labelsTs"))


def test_contract_validates_and_takes_direction_from_registry() -> None:
    task = SegPhantomTask(tiny_cfg())
    budget = BudgetConfig(name="ci", wall_clock_s=120.0, gpus="", cpus=2, memory_gb=4.0)
    contract = task.contract("lite", 7, budget)
    again = TaskContract.model_validate(contract.model_dump(mode="json"))
    metric = METRICS.get("dice")
    assert again.metric.name == metric.name
    assert again.metric.greater_is_better is metric.greater_is_better
    assert again.metric.aggregation == "macro_mean"
    assert again.task == "seg_phantom_tiny" and again.task_type == "segmentation"
    assert again.grouping_key == "patient_id"
    assert again.foreground_labels() == [1, 2]
    assert again.expected_artifacts == {s.value: list(p) for s, p in STAGE_ARTIFACTS.items()}
    assert again.budget["wall_clock_s"] == 120.0 and again.budget["cpus"] == 2
    assert again.tier == "lite" and again.seed == 7
    assert [c.name for c in again.submission.columns] == ["case_id", "file"]


def test_lesion_free_test_cases_are_guaranteed() -> None:
    cfg = tiny_cfg(min_lesion_free_test_cases=3, lesions_per_case=[1, 3])
    cases = SegPhantomTask(cfg).generate()
    test = pd.DataFrame(
        [(c.case_id, c.split, bool((c.label == 2).any())) for c in cases],
        columns=["case_id", "split", "lesion"],
    )
    test = test[test["split"] == "test"]
    assert (~test["lesion"]).sum() >= 3
    assert test["lesion"].any()
