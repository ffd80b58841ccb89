"""The only module that imports mlflow: parent and stage runs, batched metrics, reading back.

One parent run per agent run, named ``<task>/<agent>/<tier>``, with one nested child run per
stage. Metric keys are stable (``score.overall``, ``stage.<stage>.score`` …) so the MLflow UI
compares runs side by side.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

from gate.config import TrackingConfig
from gate.contract import STAGE_ARTIFACTS, Stage
from gate.errors import TrackingError, is_critical
from gate.record import RECORD_FILE, RunRecord, StageResult

PARENT_TAG = "mlflow.parentRunId"
MAX_FILE_BYTES = 64 * 2**20  # per file and per stage: evidence, not a copy of a whole disk
MAX_STAGE_BYTES = 512 * 2**20
BATCH = 500  # MLflow accepts at most 1000 metrics and 100 params per log_batch call


def client(cfg: TrackingConfig) -> Any:
    """An MlflowClient for the configured store (MLflow's default SQLite file when uri is None)."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow
    from mlflow import MlflowClient

    uri = cfg.uri or mlflow.get_tracking_uri()
    return MlflowClient(tracking_uri=uri)


def experiment_id(mlc: Any, name: str, create: bool = True) -> str | None:
    try:
        exp = mlc.get_experiment_by_name(name)
        if exp is not None:
            return exp.experiment_id
        return mlc.create_experiment(name) if create else None
    except Exception as exc:  # any failure to reach the store is the same thing to a user
        raise TrackingError(f"tracking store {mlc.tracking_uri} unreachable: {exc}") from exc


def start_parent(
    mlc: Any, exp_id: str, name: str, tags: dict[str, str], params: dict[str, Any]
) -> str:
    """Create the parent run before the agent starts, so a crash still leaves it behind."""
    run = mlc.create_run(exp_id, run_name=name, tags=tags)
    log_params(mlc, run.info.run_id, params)
    return run.info.run_id


def log_params(mlc: Any, run_id: str, params: dict[str, Any]) -> None:
    from mlflow.entities import Param

    items = [Param(k[:250], str(v)[:6000]) for k, v in sorted(params.items())]
    for i in range(0, len(items), 100):
        mlc.log_batch(run_id, params=items[i : i + 100])


def log_metrics(mlc: Any, run_id: str, metrics: dict[str, float], step: int = 0) -> None:
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    items = [Metric(k, float(v), now, step) for k, v in sorted(metrics.items()) if v is not None]
    for i in range(0, len(items), BATCH):
        mlc.log_batch(run_id, metrics=items[i : i + BATCH])


def set_tags(mlc: Any, run_id: str, tags: dict[str, str]) -> None:
    from mlflow.entities import RunTag

    mlc.log_batch(run_id, tags=[RunTag(k, str(v)[:5000]) for k, v in tags.items()])


def record_metrics(record: RunRecord) -> dict[str, float]:
    m: dict[str, float] = {
        "score.overall": record.overall_score,
        "score.workflow": record.workflow_score,
        "cost.wall_s": record.process.wall_s,
        "codes.count": len(record.codes),
        "codes.critical": sum(1 for c in record.codes if is_critical(c)),
    }
    # One metric per earned code, so the MLflow UI can filter and chart runs by code.
    m.update({f"code.{c}": 1.0 for c in record.codes})
    if record.process.peak_rss_mb is not None:
        m["cost.peak_rss_mb"] = record.process.peak_rss_mb
    for s in record.stages:
        if s.score is not None:
            m[f"stage.{s.stage}.score"] = s.score
    if record.outcome:
        o = record.outcome
        m[f"outcome.{o.metric}"] = o.value
        m.update({f"outcome.{o.metric}.label_{k}": v for k, v in o.per_label.items()})
        m["outcome.n_missing"] = o.n_missing
        m["outcome.n_nan"] = o.n_nan
    return m


def record_tags(record: RunRecord) -> dict[str, str]:
    return {
        "medgate.verdict": record.verdict,
        "medgate.error_codes": ",".join(record.codes) or "none",
        "medgate.rating": record.rating,
        "medgate.record_version": str(record.schema_version),
    }


def log_stage(mlc: Any, exp_id: str, parent_id: str, stage: StageResult, workspace: Path) -> str:
    tags = {
        PARENT_TAG: parent_id,
        "medgate.kind": "stage",
        "medgate.stage": stage.stage,
        "medgate.status": stage.status,
        "medgate.error_codes": ",".join(sorted({f.code for f in stage.findings})) or "none",
    }
    run = mlc.create_run(exp_id, run_name=stage.stage, tags=tags)
    run_id = run.info.run_id
    metrics = {f"rubric.{i.name}": i.score for i in stage.items}
    if stage.score is not None:
        metrics[f"stage.{stage.stage}.score"] = stage.score
    log_metrics(mlc, run_id, metrics)
    mlc.log_dict(run_id, stage.model_dump(mode="json", exclude={"checks"}), "rubric.json")
    for name, result in stage.checks.items():
        mlc.log_dict(run_id, result, f"checks/{name}.json")
    log_agent_files(mlc, run_id, workspace, STAGE_ARTIFACTS[Stage(stage.stage)])
    mlc.set_terminated(run_id, "FINISHED")
    return run_id


def log_record(mlc: Any, exp_id: str, parent_id: str, record: RunRecord, run_dir: Path) -> None:
    """Log the evaluated record: metrics, tags, stage child runs, per-case table, artifacts."""
    workspace = Path(record.workspace)
    log_metrics(mlc, parent_id, record_metrics(record))
    set_tags(mlc, parent_id, record_tags(record))
    for stage in record.stages:
        log_stage(mlc, exp_id, parent_id, stage, workspace)
    if record.outcome:
        rows = [
            {
                "case_id": c.case_id,
                "present": c.present,
                "valid": c.valid,
                record.outcome.metric: c.value,
                **{f"label_{k}": v for k, v in c.per_label.items()},
            }
            for c in record.outcome.cases
        ]
        mlc.log_table(
            parent_id, {k: [r[k] for r in rows] for k in rows[0]} if rows else {}, "cases.json"
        )
    mlc.log_artifact(parent_id, str(run_dir / RECORD_FILE))


def log_evidence(mlc: Any, parent_id: str, run_dir: Path, workspace: Path) -> None:
    """Logs and the files the gate wrote: called even when evaluation failed."""
    for name in ("logs",):
        if (run_dir / name).is_dir():
            mlc.log_artifacts(parent_id, str(run_dir / name), name)
    for name in ("BRIEF.md", "task.json"):
        if (workspace / name).is_file():
            mlc.log_artifact(parent_id, str(workspace / name), "workspace")
    log_agent_files(mlc, parent_id, workspace, ("trace.jsonl",))


def agent_files(workspace: Path, rels: tuple[str, ...]) -> list[Path]:
    """The regular files under ``rels`` an agent wrote, within the logging caps.

    Symlinks, FIFOs and devices are skipped (an agent could point one at /dev/zero, the hidden
    labels or a key), and so is anything past the size caps.
    """
    out: list[Path] = []
    total = 0
    root = workspace.resolve()
    for rel in rels:
        top = workspace / rel
        candidates = [top] if not top.is_dir() or top.is_symlink() else sorted(top.rglob("*"))
        for path in candidates:
            try:
                st = path.lstat()
            except OSError:
                continue
            inside = path.resolve().is_relative_to(root)  # no symlinked folder on the way
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES or not inside:
                continue
            if total + st.st_size > MAX_STAGE_BYTES:
                return out
            total += st.st_size
            out.append(path)
    return out


def log_agent_files(mlc: Any, run_id: str, workspace: Path, rels: tuple[str, ...]) -> None:
    for path in agent_files(workspace, rels):
        rel = path.relative_to(workspace)
        mlc.log_artifact(run_id, str(path), str(Path("workspace", rel).parent))


def finish(mlc: Any, run_id: str, ok: bool) -> None:
    mlc.set_terminated(run_id, "FINISHED" if ok else "FAILED")


def search_runs(cfg: TrackingConfig, filter_string: str, max_results: int = 1000) -> list[Any]:
    """Parent runs of the experiment matching ``filter_string``, newest first."""
    mlc = client(cfg)
    exp = experiment_id(mlc, cfg.experiment, create=False)
    if exp is None:
        return []
    query = "tags.`medgate.kind` = 'parent'" + (f" and {filter_string}" if filter_string else "")
    try:
        return list(
            mlc.search_runs(
                [exp],
                filter_string=query,
                max_results=max_results,
                order_by=["attributes.start_time DESC"],
            )
        )
    except Exception as exc:
        raise TrackingError(f"cannot search runs in {mlc.tracking_uri}: {exc}") from exc


def load_record(cfg: TrackingConfig, run: Any) -> RunRecord | None:
    """Download a run's evaluation.json (None when the run has none, e.g. the gate crashed).

    The record, not the metrics shown in the UI, is what a verdict judges.
    """
    mlc = client(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = mlc.download_artifacts(run.info.run_id, RECORD_FILE, tmp)
        except Exception:  # MLflow raises several types for a missing artifact
            return None
        return RunRecord.model_validate(json.loads(Path(path).read_text()))


def get_run(cfg: TrackingConfig, run_id: str) -> Any:
    try:
        return client(cfg).get_run(run_id)
    except Exception as exc:
        raise TrackingError(f"run {run_id} not found in the tracking store: {exc}") from exc


def set_run_tags(cfg: TrackingConfig, run_id: str, tags: dict[str, str]) -> None:
    set_tags(client(cfg), run_id, tags)
