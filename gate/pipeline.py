"""One gated run, as the five steps of DESIGN.md: prepare, workspace, agent, evaluate, log.

The MLflow parent run is opened before the agent starts and the evidence (logs, brief, task.json)
is logged whatever happens after, so neither an agent crash nor a gate crash loses it.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from gate import tracking
from gate.config import RunConfig, agents_dir
from gate.evaluate import (
    judge_stages,
    overall_score,
    rating,
    run_findings,
    score_outcome,
    workflow_score,
)
from gate.evidence import Evidence
from gate.metrics import METRICS
from gate.progress import Progress
from gate.record import RECORD_FILE, Finding, RunRecord
from gate.runner import agent_argv, agent_env, run_agent
from gate.tasks import TASKS
from gate.tasks.base import discard
from gate.verdict import judge_record
from gate.workspace import build_workspace

INVOCATION_ENV = "MEDGATE_INVOCATION"


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): node}


def git_sha() -> str | None:
    if os.environ.get("GITHUB_SHA"):
        return os.environ["GITHUB_SHA"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def git_branch() -> str:
    for var in ("GITHUB_HEAD_REF", "GITHUB_REF_NAME"):  # a pull request's branch, then a push's
        if os.environ.get(var):
            return os.environ[var]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def execute(cfg: RunConfig, raw: DictConfig | None = None) -> RunRecord:
    """Run one agent on one task under its budget, evaluate it and log it."""
    started = time.time()
    invocation = os.environ.get(INVOCATION_ENV) or uuid.uuid4().hex[:12]
    task = TASKS.get(cfg.task.family)(cfg.task)
    metric = METRICS.get(cfg.task.metric)
    workdir = Path(cfg.workdir).resolve()
    views = task.prepare(workdir / "cache")
    contract = task.contract(cfg.tier.name, cfg.seed, cfg.budget)
    name = f"{cfg.task.name}/{cfg.agent.name}/{cfg.tier.name}"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = (
        workdir / "runs" / f"{stamp}-{name.replace('/', '-')}-s{cfg.seed}-{uuid.uuid4().hex[:6]}"
    )
    workspace = build_workspace(run_dir / "workspace", contract, views, cfg.tier.brief)
    argv = agent_argv(cfg.agent, workspace, agents_dir())
    env = agent_env(cfg.agent, cfg.budget, workspace, run_dir / "home", cfg.seed)
    sha = git_sha()
    tags = {
        "medgate.kind": "parent",
        "medgate.task": cfg.task.name,
        "medgate.agent": cfg.agent.name,
        "medgate.tier": cfg.tier.name,
        "medgate.seed": str(cfg.seed),
        "medgate.invocation": invocation,
        "medgate.git_sha": sha or "unknown",
        "medgate.branch": git_branch(),
        "medgate.data_key": views.key,
    }
    params = flatten(OmegaConf.to_container(raw, resolve=True) if raw is not None else {})
    mlc = tracking.client(cfg.tracking)
    exp_id = tracking.experiment_id(mlc, cfg.tracking.experiment)
    parent = tracking.start_parent(mlc, exp_id, name, tags, params)
    ok = False
    try:
        case_table = views.cases()  # read before the agent can touch anything
        with Progress(name, workspace, cfg.budget.wall_clock_s, cfg.progress) as progress:
            progress.note(f"agent started in {workspace}")
            process = run_agent(argv, env, workspace, run_dir / "logs", cfg.budget, progress.tick)
            progress.note(
                f"agent ended: exit {process.exit_code} after {process.wall_s:.1f} s"
                + (" (wall-clock budget spent)" if process.timed_out else "")
            )
        tampered = views.tampered()
        ev = Evidence(workspace, contract, views, cfg.task, cfg.budget, process, metric, case_table)
        stages = judge_stages(ev)
        outcome = score_outcome(ev)
        findings = run_findings(ev, stages) + [f for s in stages for f in s.findings]
        if tampered:
            findings.append(
                Finding.of(
                    "RUN-SANDBOX",
                    f"the task data under {views.root} "
                    "changed during the run; the cache is discarded",
                )
            )
            discard(views)
        workflow = workflow_score(stages, cfg.task.stage_weights)
        overall = overall_score(workflow, outcome)
        record = RunRecord(
            name=name,
            task=cfg.task.name,
            agent=cfg.agent.name,
            tier=cfg.tier.name,
            seed=cfg.seed,
            invocation=invocation,
            mlflow_run_id=parent,
            mlflow_experiment_id=exp_id,
            data_key=views.key,
            git_sha=sha,
            workspace=str(workspace),
            started_at=started,
            finished_at=time.time(),
            process=process,
            stages=stages,
            outcome=outcome,
            findings=findings,
            workflow_score=workflow,
            overall_score=overall,
            rating=rating(overall, cfg.task.ratings),
            verdict="pass",
            reasons=[],
            config=params,
        )
        reasons = judge_record(record, cfg.policy)
        record.verdict = "fail" if any(r.effect == "fail" for r in reasons) else "pass"
        record.reasons = [str(r) for r in reasons]
        record.save(run_dir / RECORD_FILE)
        tracking.log_record(mlc, exp_id, parent, record, run_dir)
        ok = True
        return record
    finally:
        tracking.log_evidence(mlc, parent, run_dir, workspace)
        tracking.finish(mlc, parent, ok)
