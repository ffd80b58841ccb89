"""Selecting the baseline runs a candidate is compared with, and promoting runs to baseline."""

from __future__ import annotations

from typing import Any

from gate import tracking
from gate.config import BaselineConfig, TrackingConfig
from gate.record import RunRecord
from gate.verdict import GroupKey

BASELINE_TAG = "medgate.baseline"


def _config_filter(key: GroupKey) -> str:
    task, agent, tier = key
    return (
        f"tags.`medgate.task` = '{task}' and tags.`medgate.agent` = '{agent}' and "
        f"tags.`medgate.tier` = '{tier}'"
    )


def select(
    cfg: TrackingConfig,
    rule: BaselineConfig,
    keys: list[GroupKey],
    exclude: set[str],
    data_keys: dict[GroupKey, str | None] | None = None,
) -> dict[GroupKey, list[RunRecord]]:
    """The baseline records of each (task, agent, tier), never including the candidates.

    ``tag``: every run tagged ``medgate.baseline=true``. ``branch``: the runs of the latest
    invocation on the named branch.
    """
    out: dict[GroupKey, list[RunRecord]] = {}
    data_keys = data_keys or {}
    for key in keys:
        if rule.rule == "tag":
            runs = tracking.search_runs(
                cfg, f"{_config_filter(key)} and tags.`{BASELINE_TAG}` = 'true'"
            )
        elif rule.rule == "branch":
            runs = tracking.search_runs(
                cfg, f"{_config_filter(key)} and tags.`medgate.branch` = '{rule.branch}'"
            )
            runs = [r for r in runs if r.info.run_id not in exclude]
            latest = runs[0].data.tags.get("medgate.invocation") if runs else None
            runs = [r for r in runs if r.data.tags.get("medgate.invocation") == latest]
        else:
            raise ValueError(f"unknown baseline rule {rule.rule!r} (use 'tag' or 'branch')")
        records = [tracking.load_record(cfg, r) for r in runs if r.info.run_id not in exclude]
        # a baseline on other data (another task seed or generator) pairs unrelated cases
        out[key] = [
            r
            for r in records
            if r is not None and (data_keys.get(key) is None or r.data_key == data_keys[key])
        ]
    return out


def promote(cfg: TrackingConfig, run_ids: list[str]) -> list[tuple[str, str]]:
    """Tag runs as the baseline of their configuration; earlier baselines of it are retired."""
    runs: list[Any] = [tracking.get_run(cfg, rid) for rid in run_ids]
    done = []
    for run in runs:
        tags = run.data.tags
        if tags.get("medgate.kind") != "parent":
            raise ValueError(f"run {run.info.run_id} is not a medgate parent run")
        key = (tags["medgate.task"], tags["medgate.agent"], tags["medgate.tier"])
        for old in tracking.search_runs(
            cfg, f"{_config_filter(key)} and tags.`{BASELINE_TAG}` = 'true'"
        ):
            if old.info.run_id not in run_ids:
                tracking.set_run_tags(cfg, old.info.run_id, {BASELINE_TAG: "retired"})
        tracking.set_run_tags(cfg, run.info.run_id, {BASELINE_TAG: "true"})
        done.append((run.info.run_id, "/".join(key)))
    return done
