"""The runner starts real processes: crashes, timeouts and memory budgets are evidence."""

import sys
import textwrap
from pathlib import Path

import psutil

from gate.config import AgentConfig, BudgetConfig
from gate.runner import agent_argv, agent_env, run_agent


def _run(tmp_path: Path, code: str, **budget: float):
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(code))
    ws = tmp_path / "ws"
    ws.mkdir()
    b = BudgetConfig(name="t", wall_clock_s=budget.get("wall", 30), memory_gb=budget.get("mem"),
                     grace_s=1)
    env = agent_env(AgentConfig(name="t", command=[]), b, ws, tmp_path / "home", 7)
    return run_agent([sys.executable, str(script)], env, ws, tmp_path / "logs", b), ws


def _strays(ws: Path) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cwd"]):
        if p.info["cwd"] and p.info["cwd"].startswith(str(ws)):
            out.append(p)
    return out


def test_clean_exit_captures_output_and_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "secret")
    result, ws = _run(tmp_path, """
        import os
        print("seed", os.environ["MEDGATE_SEED"], "gpus", repr(os.environ["CUDA_VISIBLE_DEVICES"]))
        print("token", os.environ.get("GITHUB_TOKEN"))
        open("out.txt", "w").write(os.getcwd())
    """)
    assert result.exit_code == 0 and not result.timed_out
    out = Path(result.stdout_log).read_text()
    assert "seed 7 gpus ''" in out
    assert "token None" in out
    assert (ws / "out.txt").read_text() == str(ws)


def test_crash_is_reported_not_raised(tmp_path):
    result, _ = _run(tmp_path, "raise SystemExit('boom')")
    assert result.exit_code == 1
    assert "boom" in Path(result.stderr_log).read_text()


def test_timeout_stops_the_whole_process_tree(tmp_path):
    result, ws = _run(tmp_path, """
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        time.sleep(600)
    """, wall=2)
    assert result.timed_out
    assert result.exit_code is not None and result.exit_code < 0
    assert result.leftover_processes == 1
    assert result.wall_s < 10
    assert _strays(ws) == []


def test_child_left_behind_by_a_finished_agent_is_stopped(tmp_path):
    result, ws = _run(tmp_path, """
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        time.sleep(1)
    """)
    assert result.exit_code == 0
    assert result.leftover_processes == 1
    assert _strays(ws) == []


def test_memory_budget_stops_the_agent(tmp_path):
    result, _ = _run(tmp_path, """
        import time
        blocks = [bytearray(50 * 2**20) for _ in range(8)]
        time.sleep(30)
    """, mem=0.15)
    assert result.memory_exceeded and not result.timed_out
    assert result.peak_rss_mb > 150


def test_argv_fills_placeholders_and_args(tmp_path):
    agent = AgentConfig(name="a", command=["{python}", "{agents_dir}/x", "{workspace}"],
                        args={"iterations": 5})
    argv = agent_argv(agent, tmp_path / "ws", tmp_path / "agents")
    assert argv == [sys.executable, str(tmp_path / "agents" / "x"), str(tmp_path / "ws"),
                    "--iterations", "5"]


def test_double_forked_daemon_does_not_outlive_the_run(tmp_path):
    result, ws = _run(tmp_path, """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        time.sleep(1)
    """)
    assert result.exit_code == 0
    assert result.leftover_processes >= 1
    assert _strays(ws) == []
