"""Cases, the patient-grouped split and the MONAI transforms."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from monai import transforms as T

# Soft-tissue window: air, fat, organ, lesion and bone all stay distinguishable.
WINDOW_HU = (-250.0, 300.0)


@dataclass(frozen=True)
class CaseRow:
    case_id: str
    patient_id: str
    site: str
    split: str


def read_cases(path: Path) -> list[CaseRow]:
    with open(path, newline="") as fh:
        return [
            CaseRow(r["case_id"], r["patient_id"], r.get("site", ""), r["split"])
            for r in csv.DictReader(fh)
        ]


def group_holdout(cases: list[CaseRow], fraction: float, seed: int) -> dict[str, int]:
    """Fold per training case: 0 = train, 1 = validation, whole patients on one side.

    One patient per site goes to validation first, so every scanner is validated; then random
    patients until the fraction of cases is reached.
    """
    rng = np.random.default_rng(seed)
    patients = sorted({c.patient_id for c in cases})
    site_of = {c.patient_id: c.site for c in cases}
    n_of = {p: sum(c.patient_id == p for c in cases) for p in patients}
    order = [patients[i] for i in rng.permutation(len(patients))]
    # Patients of not-yet-covered sites first, so validation spans scanners when it can.
    sites = dict.fromkeys(site_of[p] for p in order)
    first = [next(p for p in order if site_of[p] == s) for s in sites]
    target = fraction * len(cases)
    chosen: list[str] = []
    for p in first + [p for p in order if p not in first]:
        if len(chosen) >= len(patients) - 1:
            break
        n = sum(n_of[q] for q in chosen)
        if n >= target:
            break
        if n + n_of[p] <= max(target * 1.5, 1):  # skip a patient that overshoots badly
            chosen.append(p)
    chosen = chosen or order[:1]
    return {c.case_id: int(c.patient_id in chosen) for c in cases}


def roi_for(
    shape: tuple[int, ...], limit: tuple[int, ...] = (96, 96, 48), k: int = 8
) -> tuple[int, ...]:
    """Training patch: the whole volume when small, divisible by the U-Net's total stride."""
    return tuple(max(k, (min(s, m) + k - 1) // k * k) for s, m in zip(shape, limit, strict=True))


def load_transforms() -> T.Compose:
    keys = ["image", "label"]
    return T.Compose(
        [
            T.LoadImaged(keys=keys, image_only=True),
            T.EnsureChannelFirstd(keys=keys),
            T.ScaleIntensityRanged(
                keys="image",
                a_min=WINDOW_HU[0],
                a_max=WINDOW_HU[1],
                b_min=0.0,
                b_max=1.0,
                clip=True,
            ),
            T.EnsureTyped(keys=keys, track_meta=False),
        ]
    )


def image_transforms() -> T.Compose:
    return T.Compose(
        [
            T.LoadImage(image_only=True),
            T.EnsureChannelFirst(),
            T.ScaleIntensityRange(
                a_min=WINDOW_HU[0], a_max=WINDOW_HU[1], b_min=0.0, b_max=1.0, clip=True
            ),
            T.EnsureType(track_meta=False),
        ]
    )


def augment_transforms(roi: tuple[int, ...]) -> T.Compose:
    """Sites differ in gain, offset and noise; augment exactly those, plus pose and flips."""
    keys = ["image", "label"]
    return T.Compose(
        [
            T.SpatialPadd(keys=keys, spatial_size=roi),
            T.RandCropByPosNegLabeld(
                keys=keys, label_key="label", spatial_size=roi, pos=2, neg=1, num_samples=1
            ),
            T.RandFlipd(keys=keys, prob=0.5, spatial_axis=0),
            T.RandFlipd(keys=keys, prob=0.5, spatial_axis=1),
            T.RandAffined(
                keys=keys,
                prob=0.3,
                rotate_range=(0.0, 0.0, 0.2),
                scale_range=0.1,
                mode=("bilinear", "nearest"),
                padding_mode="border",
            ),
            T.RandScaleIntensityd(keys="image", factors=0.1, prob=0.5),
            T.RandShiftIntensityd(keys="image", offsets=0.04, prob=0.5),
            T.RandGaussianNoised(keys="image", std=0.02, prob=0.3),
        ]
    )
