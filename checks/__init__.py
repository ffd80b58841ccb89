"""The Great Expectations checks of the gate, found by name and switched on per task in config.

Each check reads a finished workspace through ``gate.evidence.Evidence``, builds DataFrames from
the artifacts and the task, runs GX suites over them and returns a ``CheckOutcome``: rubric
items, error codes, and the GX results that are logged as ``checks/<name>.json`` on the stage's
MLflow child run. Entries are lazy, so importing this package does not import GX.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gate.registry import Registry

if TYPE_CHECKING:
    from checks.gx import CheckOutcome
    from gate.evidence import Evidence


@dataclass(frozen=True)
class Check:
    """A check: the stage whose rubric it feeds, the items it scores, and its function."""

    name: str
    stage: str
    items: tuple[str, ...]
    run: Callable[[Evidence], CheckOutcome]


CHECKS: Registry[Check] = Registry("check")
for _name, _entry in {
    "plan_direction": "checks.direction:PLAN_DIRECTION",
    "leakage": "checks.leakage:LEAKAGE",
    "site_leakage": "checks.leakage:SITE_LEAKAGE",
    "direction": "checks.direction:DIRECTION",
    "claims": "checks.claims:CLAIMS",
    "predictions": "checks.submission:PREDICTIONS",
    "submission": "checks.submission:SUBMISSION",
    "traceability": "checks.traceability:TRACEABILITY",
}.items():
    CHECKS.register(_name, _entry)

# On unless a task's config says otherwise; ``site_leakage`` is for tasks that split by site.
DEFAULT_CHECKS: tuple[str, ...] = (
    "plan_direction",
    "leakage",
    "direction",
    "claims",
    "predictions",
    "submission",
    "traceability",
)


def enabled(names: list[str], stage: str) -> list[Check]:
    """The enabled checks of ``stage``, in config order; an unknown name raises with a hint."""
    return [c for c in (CHECKS.get(n) for n in names) if c.stage == stage]


__all__ = ["CHECKS", "DEFAULT_CHECKS", "Check", "enabled"]
