"""Dataclass schemas of every config group, registered in Hydra's ConfigStore.

Each YAML file under ``conf/`` starts from one of these schemas, so an unknown key or a wrong type
in a task, agent, tier, budget, tracking or policy file is an error that names the key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from checks import DEFAULT_CHECKS

DEFAULT_STAGE_WEIGHTS = {
    "plan": 25.0,
    "setup": 15.0,
    "validate": 35.0,
    "inference": 15.0,
    "submit": 10.0,
}


@dataclass
class TaskConfig:
    """Fields every task shares; a task family extends it with its own generation settings."""

    name: str = MISSING
    family: str = MISSING  # key in gate.tasks.TASKS
    task_type: str = "segmentation"
    title: str = ""
    modality: str = ""
    metric: str = "dice"
    seed: int = 0  # data seed: the same seed materialises the same data
    claim_tolerance: float = 0.02  # |claimed - recomputed| allowed for a validation claim
    # Great Expectations checks of checks/ that judge this task (names in checks.CHECKS)
    checks: list[str] = field(default_factory=lambda: list(DEFAULT_CHECKS))
    stage_weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_STAGE_WEIGHTS))
    ratings: dict[str, float] = field(default_factory=lambda: {"A": 0.85, "B": 0.7, "C": 0.5})


@dataclass
class SegPhantomConfig(TaskConfig):
    """A synthetic 3D CT-like organ-and-lesion segmentation task (gate/tasks/seg_phantom.py)."""

    family: str = "seg_phantom"
    n_train_patients: int = 12
    n_test_patients: int = 6
    studies_per_patient: list[int] = field(default_factory=lambda: [1, 3])  # inclusive range
    shape: list[int] = field(default_factory=lambda: [64, 64, 32])
    spacing: list[float] = field(default_factory=lambda: [1.2, 1.2, 3.0])
    n_sites: int = 3
    lesions_per_case: list[int] = field(default_factory=lambda: [0, 3])  # inclusive range
    lesion_radius_mm: list[float] = field(default_factory=lambda: [5.0, 10.0])
    lesion_contrast_hu: list[float] = field(default_factory=lambda: [-60.0, -30.0])
    min_lesion_free_test_cases: int = 1


@dataclass
class AgentConfig:
    name: str = MISSING
    # argv of the agent process; {python}, {agents_dir} and {workspace} are filled in
    command: list[str] = MISSING
    args: dict[str, Any] = field(default_factory=dict)  # passed as --key value
    env: dict[str, str] = field(default_factory=dict)  # extra variables the agent may see
    description: str = ""


@dataclass
class TierConfig:
    name: str = MISSING
    brief: str = MISSING  # template name in gate/briefs/


@dataclass
class BudgetConfig:
    name: str = MISSING
    wall_clock_s: float = 600.0
    gpus: str = ""  # becomes CUDA_VISIBLE_DEVICES; "" hides every GPU
    cpus: int = 2  # thread count the agent is told to use
    memory_gb: float | None = None  # resident memory of the agent's process tree
    grace_s: float = 5.0  # between SIGTERM and SIGKILL when the budget is spent


@dataclass
class TrackingConfig:
    name: str = MISSING
    uri: str | None = None  # None: MLflow's default (sqlite:///mlflow.db in the working directory)
    experiment: str = "medgate"
    ui_url: str | None = None  # base URL of the MLflow UI, for links in reports


@dataclass
class ThresholdConfig:
    """Minimum scores; None leaves a score unbounded. Applied to the mean over seeds."""

    min_overall: float | None = None
    min_workflow: float | None = None
    min_outcome: float | None = None
    min_stage: dict[str, float] = field(default_factory=dict)  # stage name -> minimum score


@dataclass
class BaselineConfig:
    # "tag": runs tagged medgate.baseline=true; "branch": the latest runs of `branch`
    rule: str = "tag"
    branch: str = "main"
    required: bool = False  # no baseline: could not decide (exit 2) instead of a notice


@dataclass
class RegressionConfig:
    enabled: bool = False
    tolerance: float = 0.02  # allowed drop of the outcome, in metric units
    confidence: float = 0.95
    n_resamples: int = 2000


@dataclass
class PolicyConfig:
    name: str = MISSING
    fail_on_critical: bool = True  # codes of severity critical fail whatever the score
    critical_codes: list[str] = field(default_factory=list)  # more codes that always fail
    fail_on_unjudged: bool = True
    thresholds: ThresholdConfig = field(default_factory=ThresholdConfig)
    # per task name, or "task/agent", replacing `thresholds` for those runs
    per_task: dict[str, ThresholdConfig] = field(default_factory=dict)
    baseline: BaselineConfig = field(default_factory=BaselineConfig)
    regression: RegressionConfig = field(default_factory=RegressionConfig)

    def thresholds_for(self, task: str, agent: str) -> ThresholdConfig:
        return self.per_task.get(f"{task}/{agent}") or self.per_task.get(task) or self.thresholds


@dataclass
class RunConfig:
    task: TaskConfig = MISSING
    agent: AgentConfig = MISSING
    tier: TierConfig = MISSING
    budget: BudgetConfig = MISSING
    tracking: TrackingConfig = MISSING
    policy: PolicyConfig = MISSING
    seed: int = 0  # the agent's seed (data comes from task.seed)
    workdir: str = ".medgate"  # workspaces, cache and the last-invocation marker live here
    progress: str = "auto"  # auto | rich | plain | off


SCHEMAS: dict[str, tuple[str, type]] = {
    "run_schema": ("", RunConfig),
    "seg_phantom_schema": ("task", SegPhantomConfig),
    "task_schema": ("task", TaskConfig),
    "agent_schema": ("agent", AgentConfig),
    "tier_schema": ("tier", TierConfig),
    "budget_schema": ("budget", BudgetConfig),
    "tracking_schema": ("tracking", TrackingConfig),
    "policy_schema": ("policy", PolicyConfig),
}


def register_configs() -> None:
    """Store every schema in Hydra's ConfigStore; YAML files name them in their defaults list."""
    cs = ConfigStore.instance()
    for name, (group, node) in SCHEMAS.items():
        cs.store(name=name, group=group or None, node=node)


def _bundled(name: str) -> Path:
    """A top-level project folder (conf/, agents/): from the checkout, or bundled in the wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / name, here / "_bundled" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"medgate cannot find its {name}/ folder next to {here}")


def conf_dir() -> Path:
    return Path(os.environ.get("MEDGATE_CONF_DIR") or _bundled("conf")).resolve()


def agents_dir() -> Path:
    return Path(os.environ.get("MEDGATE_AGENTS_DIR") or _bundled("agents")).resolve()
