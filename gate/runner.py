"""Starts the agent process in its workspace under a budget and reports what happened.

The agent runs in its own process session with a reduced environment; when its wall-clock or
memory budget is spent, its whole process tree is stopped (SIGTERM, then SIGKILL after a grace
period). A crash or a timeout is evidence for the evaluation, never an exception of the gate.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from gate.config import AgentConfig, BudgetConfig
from gate.errors import ConfigError
from gate.record import ProcessResult

POLL_S = 0.25
_GONE = (ProcessLookupError, PermissionError, psutil.Error)
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
# Variables passed through from the gate's environment; everything else (tokens, tracking
# credentials, cloud keys) stays out of the agent's sight.
PASS_THROUGH = ("PATH", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")


def agent_argv(agent: AgentConfig, workspace: Path, agents_dir: Path) -> list[str]:
    values = {"python": sys.executable, "agents_dir": str(agents_dir), "workspace": str(workspace)}
    try:
        argv = [part.format(**values) for part in agent.command]
    except (KeyError, IndexError) as exc:
        raise ConfigError(
            f"conf/agent/{agent.name}.yaml",
            "command",
            f"unknown placeholder {exc}",
            "use {python}, {agents_dir}, {workspace}",
        ) from None
    for key, value in agent.args.items():
        argv += [f"--{key}", str(value)]
    return argv


def agent_env(
    agent: AgentConfig, budget: BudgetConfig, workspace: Path, home: Path, seed: int
) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    threads = str(budget.cpus)
    env.update(
        HOME=str(home),
        TMPDIR=str(home / "tmp"),
        PYTHONUNBUFFERED="1",
        CUDA_VISIBLE_DEVICES=budget.gpus,
        OMP_NUM_THREADS=threads,
        MKL_NUM_THREADS=threads,
        OPENBLAS_NUM_THREADS=threads,
        MEDGATE_WORKSPACE=str(workspace),
        MEDGATE_SEED=str(seed),
        MEDGATE_BUDGET_S=str(budget.wall_clock_s),
    )
    env.update(agent.env)
    return env


def _harden_gate() -> None:
    """Linux: adopt orphaned descendants (a double fork cannot escape the stop) and keep the
    gate's memory and /proc/<pid>/environ away from processes of the same user."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _orphans(since: float, known: dict[int, psutil.Process]) -> None:
    """Descendants re-parented to the gate (we are their subreaper) join the processes to stop."""
    try:
        for p in psutil.Process().children(recursive=True):
            if p.pid not in known and p.create_time() >= since:
                known[p.pid] = p
    except psutil.Error:
        pass


def run_agent(
    argv: list[str],
    env: dict[str, str],
    workspace: Path,
    logs: Path,
    budget: BudgetConfig,
    on_tick: Callable[[float], None] | None = None,
) -> ProcessResult:
    """Run ``argv`` in ``workspace`` until it exits or its budget is spent."""
    logs.mkdir(parents=True, exist_ok=True)
    Path(env["TMPDIR"]).mkdir(parents=True, exist_ok=True)
    out_path, err_path = logs / "agent.stdout.log", logs / "agent.stderr.log"
    limit_bytes = budget.memory_gb * 2**30 if budget.memory_gb else None
    _harden_gate()
    started_at = time.time() - 1.0
    start = time.monotonic()
    timed_out = memory_exceeded = False
    peak = 0.0
    stopped = 0
    seen: dict[int, psutil.Process] = {}
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=workspace,
                env=env,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            err.write(f"medgate: could not start the agent: {exc}\n".encode())
            return ProcessResult(
                argv=argv,
                exit_code=127,
                wall_s=0.0,
                stdout_log=str(out_path),
                stderr_log=str(err_path),
            )
        while proc.poll() is None:
            elapsed = time.monotonic() - start
            rss = _tree_rss(proc.pid, seen)
            _orphans(started_at, seen)
            peak = max(peak, rss)
            if elapsed > budget.wall_clock_s:
                timed_out = True
            elif limit_bytes and rss > limit_bytes:
                memory_exceeded = True
            if timed_out or memory_exceeded:
                stopped = _stop(proc, seen, budget.grace_s)
                break
            if on_tick:
                on_tick(elapsed)
            time.sleep(POLL_S)
        wall = time.monotonic() - start
        _orphans(started_at, seen)
        stopped += _stop(proc, seen, budget.grace_s)
        if timed_out or memory_exceeded:
            why = "wall-clock" if timed_out else "memory"
            err.write(f"\nmedgate: agent stopped after {wall:.1f} s: {why} budget spent\n".encode())
    return ProcessResult(
        argv=argv,
        exit_code=proc.returncode,
        timed_out=timed_out,
        memory_exceeded=memory_exceeded,
        wall_s=round(wall, 3),
        peak_rss_mb=round(peak / 2**20, 1),
        leftover_processes=stopped,
        stdout_log=str(out_path),
        stderr_log=str(err_path),
    )


def _tree_rss(pid: int, seen: dict[int, psutil.Process]) -> float:
    """Resident memory of the process tree; remembers every descendant so none escapes the stop."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for p in procs:
        seen.setdefault(p.pid, p)
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _stop(proc: subprocess.Popen[bytes], seen: dict[int, psutil.Process], grace_s: float) -> int:
    """Stop the agent's process group and every descendant seen; return how many descendants
    were still alive. The main process is reaped by Popen only, so its exit code survives."""
    _tree_rss(proc.pid, seen)
    others = [p for pid, p in seen.items() if pid != proc.pid and _alive(p)]
    if proc.poll() is not None and not others:
        return 0
    with contextlib.suppress(*_GONE):
        os.killpg(proc.pid, signal.SIGTERM)
    for p in others:
        with contextlib.suppress(*_GONE):
            p.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    _, still = psutil.wait_procs(others, timeout=grace_s)
    with contextlib.suppress(*_GONE):
        os.killpg(proc.pid, signal.SIGKILL)
    for p in still:
        with contextlib.suppress(*_GONE):
            p.kill()
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    psutil.wait_procs(still, timeout=grace_s)
    return len(others)


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
