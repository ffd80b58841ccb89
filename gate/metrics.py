"""Outcome metrics, each registered once with its direction and aggregation.

Direction is declared here and only here (``greater_is_better``); it is never inferred from data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gate.registry import Registry


@dataclass(frozen=True)
class Metric:
    """``per_label(pred, ref, labels)`` scores one case, one value per foreground label."""

    name: str
    greater_is_better: bool
    aggregation: str
    description: str
    per_label: Callable[[np.ndarray, np.ndarray, list[int]], dict[int, float]]
    worst: float  # the value a missing case gets


METRICS: Registry[Metric] = Registry("metric")


def dice_per_label(pred: np.ndarray, ref: np.ndarray, labels: list[int]) -> dict[int, float]:
    """Dice of each foreground label with MONAI's ``compute_dice``.

    An empty reference with an empty prediction scores 1 and with any predicted voxel scores 0
    (``ignore_empty=False``), so false positives on lesion-free cases cost something.
    """
    import torch
    from monai.metrics import compute_dice

    p = torch.as_tensor(np.asarray(pred, dtype=np.int64))
    r = torch.as_tensor(np.asarray(ref, dtype=np.int64))
    y_pred = torch.stack([(p == lab) for lab in labels]).unsqueeze(0).float()
    y = torch.stack([(r == lab) for lab in labels]).unsqueeze(0).float()
    values = compute_dice(y_pred, y, include_background=True, ignore_empty=False)[0]
    return {lab: float(v) for lab, v in zip(labels, values.tolist(), strict=True)}


METRICS.register(
    "dice",
    Metric(
        name="dice",
        greater_is_better=True,
        aggregation="macro_mean",
        description="Dice per foreground label and case; mean over cases, then over labels.",
        per_label=dice_per_label,
        worst=0.0,
    ),
)


@dataclass(frozen=True)
class Aggregate:
    value: float
    per_label: dict[int, float]
    per_case: dict[str, float]
    n_cases: int
    n_nan: int


def macro_aggregate(per_case: dict[str, dict[int, float]], labels: list[int]) -> Aggregate:
    """Mean over cases for each label, then mean over labels; NaN values are counted, not hidden."""
    n_nan = sum(1 for v in per_case.values() for x in v.values() if math.isnan(x))
    per_label = {}
    for lab in labels:
        vals = [v[lab] for v in per_case.values() if not math.isnan(v[lab])]
        per_label[lab] = float(np.mean(vals)) if vals else float("nan")
    finite = [v for v in per_label.values() if not math.isnan(v)]
    value = float(np.mean(finite)) if finite else float("nan")
    case_means = {}
    for cid, v in per_case.items():
        vals = [x for x in v.values() if not math.isnan(x)]
        case_means[cid] = float(np.mean(vals)) if vals else float("nan")
    return Aggregate(value, per_label, case_means, len(per_case), n_nan)
