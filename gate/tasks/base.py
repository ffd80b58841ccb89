"""What every task provides: its contract, and its data materialised once into a cache."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path

import pandas as pd

from gate.config import BudgetConfig, TaskConfig
from gate.contract import TaskContract, sha256_tree

CASE_COLUMNS = ("case_id", "patient_id", "site", "split")
FINGERPRINT = "FINGERPRINT"


@dataclass(frozen=True)
class TaskViews:
    """A materialised task: ``public`` is what the agent sees, ``hidden`` holds the test labels."""

    root: Path
    key: str

    @property
    def public(self) -> Path:
        return self.root / "public"

    @property
    def hidden(self) -> Path:
        return self.root / "hidden"

    def fingerprint(self) -> str:
        """Content hash of both views: the gate compares it before and after every agent run."""
        return sha256_tree(self.public) + sha256_tree(self.hidden)

    def tampered(self) -> bool:
        recorded = self.root / FINGERPRINT
        return not recorded.is_file() or recorded.read_text() != self.fingerprint()

    def cases(self) -> pd.DataFrame:
        return pd.read_csv(self.public / "cases.csv", dtype=str)

    def test_ids(self) -> list[str]:
        cases = self.cases()
        return sorted(cases.loc[cases["split"] == "test", "case_id"])

    def train_ids(self) -> list[str]:
        cases = self.cases()
        return sorted(cases.loc[cases["split"] == "train", "case_id"])


class Task(ABC):
    """A task family. Subclasses generate or load data and describe their contract."""

    #: bump when the generated data changes, so caches built by older code are not reused
    data_version = "1"

    def __init__(self, cfg: TaskConfig) -> None:
        self.cfg = cfg

    @abstractmethod
    def contract(self, tier: str, seed: int, budget: BudgetConfig) -> TaskContract:
        """The task.json published in the workspace."""

    @abstractmethod
    def materialise(self, public: Path, hidden: Path) -> None:
        """Write the public view (``cases.csv`` with CASE_COLUMNS, images, training labels)
        and the hidden view (test labels) into two empty folders."""

    def cache_key(self) -> str:
        payload = asdict(self.cfg) if is_dataclass(self.cfg) else dict(self.cfg)
        for key in ("title", "claim_tolerance", "checks", "stage_weights", "ratings"):
            payload.pop(key, None)  # scoring settings do not change the data
        blob = json.dumps(
            {"v": self.data_version, "cls": type(self).__name__, "cfg": payload},
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def prepare(self, cache_root: Path) -> TaskViews:
        """Materialise the data once per config hash; later runs reuse the cached views."""
        key = self.cache_key()
        root = cache_root / f"{self.cfg.name}-{key}"
        if (root / "READY").is_file():
            views = TaskViews(root, key)
            if not views.tampered():
                return views
            shutil.rmtree(root, onerror=_force_remove)  # changed since it was made: rebuild it
        cache_root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{self.cfg.name}-", dir=cache_root))
        try:
            (tmp / "public").mkdir()
            (tmp / "hidden").mkdir()
            self.materialise(tmp / "public", tmp / "hidden")
            _check_cases(tmp / "public" / "cases.csv")
            _make_read_only(tmp / "public")
            _make_read_only(tmp / "hidden")
            (tmp / FINGERPRINT).write_text(TaskViews(tmp, key).fingerprint())
            (tmp / "READY").write_text(key)
            try:
                os.rename(tmp, root)
            except OSError:  # another process finished first: theirs is identical
                shutil.rmtree(tmp, onerror=_force_remove)
        except BaseException:
            shutil.rmtree(tmp, onerror=_force_remove)
            raise
        return TaskViews(root, key)


def discard(views: TaskViews) -> None:
    """Remove a materialised task (e.g. after an agent tampered with it); the next run rebuilds."""
    shutil.rmtree(views.root, onerror=_force_remove)


def _check_cases(path: Path) -> None:
    cases = pd.read_csv(path, dtype=str)
    missing = [c for c in CASE_COLUMNS if c not in cases.columns]
    if missing:
        raise ValueError(f"{path}: task wrote a case table without columns {missing}")


def _make_read_only(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _force_remove(func: object, path: str, _exc: object) -> None:
    os.chmod(os.path.dirname(path), 0o755)
    os.chmod(path, 0o755)
    os.remove(path) if os.path.isfile(path) else os.rmdir(path)
