"""Writers of the contract artifacts that are not about the model itself."""

from __future__ import annotations

import csv
import shutil
from importlib import metadata
from pathlib import Path

import nibabel as nib
import numpy as np

from gate import contract as C

AGENT_NAME = "monai_unet"
HERE = Path(__file__).resolve().parent


def copy_code(ws: Path) -> str:
    """Snapshot the agent's own source into setup/code and return its tree hash."""
    dest = ws / C.SETUP_CODE_DIR
    dest.mkdir(parents=True, exist_ok=True)
    for src in sorted(HERE.glob("*.py")):
        shutil.copy2(src, dest / src.name)
    return C.sha256_tree(dest)


def write_environment(ws: Path) -> None:
    seen = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and name.lower() not in seen:
            seen[name.lower()] = f"{name}=={dist.version}"
    path = ws / C.ENVIRONMENT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for _, line in sorted(seen.items())))


def save_label(path: Path, label: np.ndarray, reference: Path) -> None:
    """Write a uint8 label map on exactly the grid (shape, affine) of the reference image."""
    ref = nib.load(reference)
    if label.shape != ref.shape[:3]:
        raise ValueError(f"{path.name}: prediction shape {label.shape} != image {ref.shape}")
    img = nib.Nifti1Image(label.astype(np.uint8), ref.affine)
    img.set_qform(ref.affine, code=int(ref.header["qform_code"]) or 1)
    img.set_sform(ref.affine, code=int(ref.header["sform_code"]) or 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    nib.save(img, path)


def write_submission(
    ws: Path,
    case_ids: list[str],
    pattern: str,
    model_file: Path,
    claimed: dict[str, float],
    code_sha256: str,
) -> None:
    sub = ws / C.SUBMISSION_DIR
    files_dir = sub / "predictions"
    files_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for cid in case_ids:
        name = pattern.format(case_id=cid)
        shutil.copy2(ws / C.PREDICTIONS_DIR / name, files_dir / name)
        rows.append((cid, f"predictions/{name}"))
    with open(sub / "submission.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(("case_id", "file"))
        writer.writerows(rows)
    manifest_path = ws / C.MANIFEST_FILE
    files = [
        C.FileChecksum(path=p.relative_to(ws).as_posix(), sha256=C.sha256_file(p))
        for p in sorted(sub.rglob("*"))
        if p.is_file() and p != manifest_path
    ]
    manifest = C.Manifest(
        agent=AGENT_NAME,
        files=files,
        claimed=claimed,
        code_sha256=code_sha256,
        model=C.FileChecksum(
            path=model_file.relative_to(ws).as_posix(), sha256=C.sha256_file(model_file)
        ),
    )
    C.write_model(ws, C.MANIFEST_FILE, manifest)
