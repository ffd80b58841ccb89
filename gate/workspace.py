"""Builds a run's workspace: the brief, ``task.json`` and the public data, read-only.

The hidden view never enters the workspace.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from gate.contract import BRIEF_FILE, DATA_DIR, TASK_FILE, TaskContract, write_model
from gate.errors import ConfigError
from gate.tasks import TaskViews

_PREDICTION_RULES = {
    "image": "one file per case, integer labels, on the input image's grid "
    "(same shape and affine; never resample).",
    "table": "one row per case in a CSV keyed by case_id.",
    "text": "one JSON line per case with its case_id and text.",
}


def render_brief(contract: TaskContract, tier_brief: str) -> str:
    try:
        template = resources.files("gate.briefs").joinpath(f"{tier_brief}.md").read_text()
    except FileNotFoundError:
        known = sorted(
            p.name.removesuffix(".md")
            for p in resources.files("gate.briefs").iterdir()
            if p.name.endswith(".md")
        )
        raise ConfigError(
            "conf/tier/*.yaml", "brief", f"no brief template {tier_brief!r}", f"use one of {known}"
        ) from None
    sub = contract.submission
    return template.format(
        title=contract.title,
        description=contract.description,
        task_type=contract.task_type.value,
        labels=", ".join(f"{k} = {v}" for k, v in contract.labels.items()),
        metric=contract.metric.name,
        direction="greater is better" if contract.metric.greater_is_better else "lower is better",
        gib=str(contract.metric.greater_is_better).lower(),
        grouping_key=contract.grouping_key,
        budget_s=float(contract.budget.get("wall_clock_s", 0)),
        cpus=contract.budget.get("cpus"),
        gpus=contract.budget.get("gpus") or "none",
        test_images=contract.data.test_images,
        prediction_rule=_PREDICTION_RULES[contract.prediction.kind.value],
        files_dir=sub.files_dir or "submission",
        index_file=sub.index_file,
        columns=", ".join(f"`{c.name}`" for c in sub.columns),
    )


def build_workspace(root: Path, contract: TaskContract, views: TaskViews, tier_brief: str) -> Path:
    """Create a fresh workspace at ``root`` (which must not exist yet)."""
    root.mkdir(parents=True, exist_ok=False)
    (root / BRIEF_FILE).write_text(render_brief(contract, tier_brief))
    write_model(root, TASK_FILE, contract)
    (root / DATA_DIR).symlink_to(views.public.resolve(), target_is_directory=True)
    return root
