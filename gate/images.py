"""Reading image predictions and judging their format against the input image's grid."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import nibabel as nib
import numpy as np

AFFINE_TOL = 1e-3  # mm; geometry must match, the gate never resamples to make it fit


@dataclass(frozen=True)
class Volume:
    data: np.ndarray
    affine: np.ndarray


def load_volume(path: Path) -> Volume:
    stat = path.stat()
    return _load(path.resolve(), stat.st_mtime_ns, stat.st_size)


MAX_VOXELS = 512**3  # a gzip bomb of zeros is small on disk and huge in memory


@lru_cache(maxsize=128)
def _load(path: Path, _mtime_ns: int, _size: int) -> Volume:
    img = nib.load(str(path))
    if int(np.prod(img.shape)) > MAX_VOXELS:  # read from the header, before any voxel
        raise ValueError(f"{path.name}: {img.shape} holds more than {MAX_VOXELS} voxels")
    return Volume(np.asanyarray(img.dataobj), img.affine)


def prediction_problems(pred_path: Path, image_path: Path, labels: set[int]) -> list[str]:
    """Every reason a predicted label map is not a valid prediction for its image (empty: valid)."""
    if not pred_path.is_file():
        return ["missing"]
    try:
        pred = load_volume(pred_path)
    except Exception as exc:  # any unreadable file is a format problem of the agent's
        return [f"unreadable ({type(exc).__name__})"]
    ref = load_volume(image_path)
    problems = []
    if pred.data.shape != ref.data.shape:
        problems.append(f"shape {pred.data.shape} != image {ref.data.shape}")
    if not np.allclose(pred.affine, ref.affine, atol=AFFINE_TOL):
        problems.append("affine/spacing differs from the image")
    if not np.issubdtype(pred.data.dtype, np.integer):
        if np.issubdtype(pred.data.dtype, np.floating) and not np.isfinite(pred.data).all():
            problems.append("holds NaN or inf")
        problems.append(f"dtype {pred.data.dtype} is not an integer type")
    values = set(np.unique(pred.data[np.isfinite(pred.data)]).astype(np.int64).tolist())
    extra = sorted(values - labels)
    if extra:
        problems.append(f"label values {extra[:5]} outside {sorted(labels)}")
    return problems
