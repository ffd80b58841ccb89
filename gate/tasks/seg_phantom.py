"""A synthetic 3D CT-like organ-and-lesion segmentation task, generated from a seed.

Each patient has an anatomy (body outline, an organ shaped as a deformed ellipsoid, lesions inside
the organ) and belongs to one acquisition site; every study of the patient re-images that
anatomy with small changes (position, organ size, lesion size) and with the site's noise level and
intensity calibration. Patients, not studies, are split into train and test, so a validation split
that ignores ``patient_id`` leaks near-duplicates.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import nibabel as nib
import numpy as np
from scipy import ndimage

from gate.config import BudgetConfig, SegPhantomConfig
from gate.contract import (
    STAGE_ARTIFACTS,
    ColumnSpec,
    DataLayout,
    MetricSpec,
    PredictionKind,
    PredictionSpec,
    SubmissionSpec,
    TaskContract,
    TaskType,
)
from gate.metrics import METRICS
from gate.tasks.base import CASE_COLUMNS, Task

LABELS = {"0": "background", "1": "organ", "2": "lesion"}
AIR_HU, FAT_HU, TISSUE_HU, BONE_HU = -1000.0, -100.0, 20.0, 450.0

DESCRIPTION = (
    "Segment the organ (label 1) and its focal lesions (label 2) in 3D CT-like volumes from "
    "several acquisition sites. Patients may have several studies; some test cases have no "
    "lesion at all. Predict one uint8 label map per test case on the grid of its image."
)
METRIC_DESCRIPTION = (
    "Dice per foreground label per case; an empty reference with an empty prediction scores 1, "
    "an empty reference with any predicted voxel scores 0. Mean over cases per label, then mean "
    "over labels."
)


@dataclass(frozen=True)
class Site:
    name: str
    noise_hu: float  # standard deviation of the (slightly correlated) noise
    shift_hu: float  # calibration offset
    scale: float  # calibration gain
    blur_vox: float  # reconstruction kernel: in-plane blur in voxels


@dataclass(frozen=True)
class Lesion:
    center_mm: np.ndarray  # relative to the organ centre
    radii_mm: np.ndarray
    contrast_hu: float


@dataclass(frozen=True)
class Anatomy:
    body_axes: np.ndarray  # in-plane semi-axes of the body outline, mm
    fat_mm: float  # subcutaneous fat thickness
    organ_center: np.ndarray  # mm, relative to the volume centre
    organ_axes: np.ndarray  # mm
    organ_hu: float
    harmonics: np.ndarray  # (k, 4): amplitude and frequencies of the surface deformation
    lesions: tuple[Lesion, ...]


@dataclass(frozen=True)
class Case:
    case_id: str
    patient_id: str
    site: Site
    split: str
    image: np.ndarray  # float32, HU-like
    label: np.ndarray  # uint8 in {0, 1, 2}
    affine: np.ndarray


class SegPhantomTask(Task):
    """Organ and lesion segmentation in CT-like phantoms (see the module docstring)."""

    data_version = "1"
    cfg: SegPhantomConfig

    def contract(self, tier: str, seed: int, budget: BudgetConfig) -> TaskContract:
        metric = METRICS.get(self.cfg.metric)
        return TaskContract(
            task=self.cfg.name,
            task_type=TaskType.SEGMENTATION,
            title=self.cfg.title,
            description=DESCRIPTION,
            modality=self.cfg.modality,
            labels=dict(LABELS),
            metric=MetricSpec(
                name=metric.name,
                greater_is_better=metric.greater_is_better,
                aggregation="macro_mean",
                description=METRIC_DESCRIPTION,
            ),
            grouping_key="patient_id",
            data=DataLayout(
                train_images="data/imagesTr",
                train_labels="data/labelsTr",
                test_images="data/imagesTs",
            ),
            prediction=PredictionSpec(
                kind=PredictionKind.IMAGE,
                file_pattern="{case_id}.nii.gz",
                dtype="uint8",
                same_grid_as_input=True,
            ),
            submission=SubmissionSpec(
                kind=PredictionKind.IMAGE,
                index_file="submission/submission.csv",
                columns=[
                    ColumnSpec(name="case_id", dtype="str"),
                    ColumnSpec(name="file", dtype="str"),
                ],  # relative to submission/
                files_dir="submission/predictions",
            ),
            expected_artifacts={s.value: list(p) for s, p in STAGE_ARTIFACTS.items()},
            budget={
                "wall_clock_s": budget.wall_clock_s,
                "gpus": budget.gpus,
                "cpus": budget.cpus,
                "memory_gb": budget.memory_gb,
            },
            tier=tier,
            seed=seed,
        )

    def materialise(self, public: Path, hidden: Path) -> None:
        for sub in (
            public / "imagesTr",
            public / "labelsTr",
            public / "imagesTs",
            hidden / "labelsTs",
        ):
            sub.mkdir(parents=True, exist_ok=True)
        with open(public / "cases.csv", "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(CASE_COLUMNS)
            for case in self.generate():
                writer.writerow([case.case_id, case.patient_id, case.site.name, case.split])
                if case.split == "train":
                    _save(public / "imagesTr" / f"{case.case_id}.nii.gz", case.image, case.affine)
                    _save(public / "labelsTr" / f"{case.case_id}.nii.gz", case.label, case.affine)
                else:
                    _save(public / "imagesTs" / f"{case.case_id}.nii.gz", case.image, case.affine)
                    _save(hidden / "labelsTs" / f"{case.case_id}.nii.gz", case.label, case.affine)

    def generate(self) -> list[Case]:
        """Every case of the task, in case-id order; a pure function of the config."""
        cfg = self.cfg
        if cfg.n_sites < 3:
            raise ValueError("seg_phantom needs n_sites >= 3 so site shift is visible")
        root = np.random.SeedSequence(cfg.seed)
        site_seq, plan_seq, *patient_seqs = root.spawn(
            2 + cfg.n_train_patients + cfg.n_test_patients
        )
        sites = _sites(np.random.default_rng(site_seq), cfg.n_sites)
        plan_rng = np.random.default_rng(plan_seq)
        n_patients = cfg.n_train_patients + cfg.n_test_patients
        # Every site appears at least once; shuffled so site does not follow the split.
        site_of = plan_rng.permutation(np.arange(n_patients) % cfg.n_sites)
        test_of = np.zeros(n_patients, dtype=bool)
        test_of[plan_rng.choice(n_patients, cfg.n_test_patients, replace=False)] = True
        lo, hi = cfg.studies_per_patient
        n_studies = plan_rng.integers(lo, hi + 1, size=n_patients)
        n_lesions = plan_rng.integers(
            cfg.lesions_per_case[0], cfg.lesions_per_case[1] + 1, size=n_patients
        )
        if cfg.lesions_per_case[1] > 0:  # both sides need lesions to learn and to score
            for side in (test_of, ~test_of):
                group = np.flatnonzero(side)
                if len(group) > 1 and not (n_lesions[group] > 0).any():
                    n_lesions[group[-1]] = max(1, cfg.lesions_per_case[0])
        # Guarantee lesion-free test cases: a false positive there must cost something.
        free = int(sum(n_studies[p] for p in range(n_patients) if test_of[p] and n_lesions[p] == 0))
        for p in np.flatnonzero(test_of & (n_lesions > 0)):  # the last one is zeroed last
            if free >= cfg.min_lesion_free_test_cases:
                break
            n_lesions[p] = 0
            free += int(n_studies[p])

        cases: list[Case] = []
        for p, seq in enumerate(patient_seqs):
            rng = np.random.default_rng(seq)
            anatomy = self._anatomy(rng, int(n_lesions[p]))
            for _ in range(int(n_studies[p])):
                image, label, affine = self._study(rng, anatomy, sites[site_of[p]])
                cases.append(
                    Case(
                        f"case_{len(cases):04d}",
                        f"pat_{p:03d}",
                        sites[site_of[p]],
                        "test" if test_of[p] else "train",
                        image,
                        label,
                        affine,
                    )
                )
        return cases

    def _anatomy(self, rng: np.random.Generator, n_lesions: int) -> Anatomy:
        fov = np.asarray(self.cfg.shape, float) * np.asarray(self.cfg.spacing, float)
        body = fov[:2] / 2 * rng.uniform([0.80, 0.62], [0.92, 0.78])
        organ_axes = np.array(
            [
                body[0] * rng.uniform(0.45, 0.58),
                body[1] * rng.uniform(0.5, 0.62),
                fov[2] * rng.uniform(0.28, 0.38),
            ]
        )
        # Off-centre, like a liver or spleen, but always well inside the body.
        organ_center = np.array(
            [
                rng.choice([-1, 1]) * rng.uniform(0.1, 0.25) * body[0],
                rng.uniform(-0.2, 0.0) * body[1],
                rng.uniform(-0.1, 0.1) * fov[2],
            ]
        )
        harmonics = np.column_stack([rng.uniform(0.04, 0.12, 3), rng.uniform(0.5, 2.0, (3, 3))])
        lesions = []
        r_lo, r_hi = self.cfg.lesion_radius_mm
        c_lo, c_hi = self.cfg.lesion_contrast_hu
        for _ in range(n_lesions):
            radius = rng.uniform(r_lo, r_hi)
            # Uniform direction, depth chosen so the lesion stays inside the organ.
            direction = rng.normal(size=3)
            direction /= np.linalg.norm(direction)
            depth = rng.uniform(0.0, 0.6) * max(0.0, 1.0 - 1.3 * radius / organ_axes.min())
            lesions.append(
                Lesion(
                    direction * depth * organ_axes,
                    radius * rng.uniform(0.85, 1.15, 3),
                    rng.uniform(c_lo, c_hi),
                )
            )
        return Anatomy(
            body,
            rng.uniform(4.0, 9.0),
            organ_center,
            organ_axes,
            rng.uniform(45.0, 70.0),
            harmonics,
            tuple(lesions),
        )

    def _study(
        self, rng: np.random.Generator, a: Anatomy, site: Site
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        shape = tuple(int(s) for s in self.cfg.shape)
        spacing = np.asarray(self.cfg.spacing, float)
        # Repositioning between studies: the patient lies a few millimetres elsewhere.
        shift = rng.normal(0.0, [2.0, 2.0, 4.0])
        x, y, z = (
            ((np.arange(n) - (n - 1) / 2) * s - d)
            for n, s, d in zip(shape, spacing, shift, strict=True)
        )
        x, y, z = x[:, None, None], y[None, :, None], z[None, None, :]

        body_r = np.sqrt((x / a.body_axes[0]) ** 2 + (y / a.body_axes[1]) ** 2)
        body_r = body_r + 0.03 * np.sin(z / 15.0)  # the outline changes along the body axis
        inner_r = 1.0 - a.fat_mm / a.body_axes.mean()
        image = np.where(body_r <= 1.0, FAT_HU, AIR_HU)
        inner = body_r <= inner_r
        image[inner] = TISSUE_HU
        # Visceral fat between the soft tissues, so the organ is not the only texture inside.
        blobs = ndimage.gaussian_filter(rng.normal(0.0, 1.0, image.shape), 2.5)
        image[inner & (blobs > 1.1 * blobs.std())] = FAT_HU
        # A vertebra-like bone behind the organ: a bright structure the model must ignore.
        spine = (x / 7.0) ** 2 + ((y - 0.62 * a.body_axes[1]) / 6.0) ** 2 <= 1.0
        image[np.broadcast_to(spine, image.shape)] = BONE_HU

        organ_axes = a.organ_axes * rng.uniform(0.95, 1.05, 3)
        ox, oy, oz = x - a.organ_center[0], y - a.organ_center[1], z - a.organ_center[2]
        radius = np.sqrt(
            (ox / organ_axes[0]) ** 2 + (oy / organ_axes[1]) ** 2 + (oz / organ_axes[2]) ** 2
        )
        bump = sum(
            h[0] * np.sin(h[1] * ox / 10 + h[2] * oy / 10 + h[3] * oz / 10 + i)
            for i, h in enumerate(a.harmonics)
        )
        organ = (radius <= 1.0 + bump) & (body_r <= inner_r)
        image[organ] = a.organ_hu
        label = organ.astype(np.uint8)
        for les in a.lesions:
            growth = rng.uniform(0.85, 1.15)  # lesions change size between studies
            d = (
                ((ox - les.center_mm[0]) / les.radii_mm[0]) ** 2
                + ((oy - les.center_mm[1]) / les.radii_mm[1]) ** 2
                + ((oz - les.center_mm[2]) / les.radii_mm[2]) ** 2
            ) / growth**2
            lesion = (d <= 1.0) & organ
            image[lesion] = a.organ_hu + les.contrast_hu
            label[lesion] = 2

        # Tissue texture, reconstruction blur, then the site's calibration and noise.
        image = image + ndimage.gaussian_filter(rng.normal(0, 6.0, shape), 1.5) * (body_r <= 1.0)
        image = ndimage.gaussian_filter(image, (site.blur_vox, site.blur_vox, 0.4))
        noise = ndimage.gaussian_filter(rng.normal(0.0, 1.0, shape), 0.6)
        image = image * site.scale + site.shift_hu + noise / noise.std() * site.noise_hu
        affine = np.diag([*spacing, 1.0])
        affine[:3, 3] = -(np.asarray(shape) - 1) / 2 * spacing + rng.uniform(-30, 30, 3)
        return image.astype(np.float32), label, affine


def _sites(rng: np.random.Generator, n: int) -> list[Site]:
    names = [f"site_{chr(ord('a') + i)}" if i < 26 else f"site_{i:02d}" for i in range(n)]
    noise = np.linspace(8.0, 18.0, n)[rng.permutation(n)]  # scanners differ in dose/kernel
    return [
        Site(
            name,
            float(noise[i]),
            float(rng.uniform(-20, 20)),
            float(rng.uniform(0.92, 1.08)),
            float(rng.uniform(0.4, 0.9)),
        )
        for i, name in enumerate(names)
    ]


def _save(path: Path, array: np.ndarray, affine: np.ndarray) -> None:
    img = nib.Nifti1Image(array, affine)
    img.set_qform(affine, code=1)
    img.set_sform(affine, code=1)
    nib.save(img, path)
