"""An agent that fails in one known way, chosen by ``--fault``; the gate must catch each one.

Run as ``python agents/faulty --fault NAME`` in a workspace, like every agent.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from gate.contract import PLAN_FILE, MethodLane, Plan, SplitPlan, read_task, write_model


def write_plan(workspace: Path) -> None:
    task = read_task(workspace)
    plan = Plan(task_type=task.task_type, metric=task.metric.name,
                greater_is_better=task.metric.greater_is_better,
                split=SplitPlan(strategy="group_holdout", group_key=task.grouping_key,
                                validation_fraction=0.25),
                lanes=[MethodLane(name="baseline", hypothesis="a U-Net fits", budget_s=10)],
                budget_s=10)
    write_model(workspace, PLAN_FILE, plan)


def crash(workspace: Path) -> None:
    write_plan(workspace)
    raise RuntimeError("faulty agent: crashing on purpose after the plan")


def timeout(workspace: Path) -> None:
    """Sleep past any budget, with a child process that must not outlive the run either."""
    write_plan(workspace)
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    print("faulty agent: sleeping past the budget", flush=True)
    time.sleep(3600)


FAULTS = {"crash": crash, "timeout": timeout}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", choices=sorted(FAULTS), required=True)
    args, _ = parser.parse_known_args()
    FAULTS[args.fault](Path.cwd())


if __name__ == "__main__":
    main()
