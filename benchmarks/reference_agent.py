"""The reference agent through the real gate: hidden-test Dice and wall time, against trivial
baselines scored on the same hidden labels in the same run.

    .venv/bin/python benchmarks/reference_agent.py [--task seg_phantom] [--agent monai_unet]

Writes benchmarks/results/reference_agent.json. The target (issue 2): macro foreground Dice of
at least 0.80 with about 3 minutes of training on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gate.cli import compose
from gate.images import load_volume
from gate.metrics import METRICS, macro_aggregate
from gate.tasks import TASKS

ROOT = Path(__file__).resolve().parents[1]


def trivial_baselines(task_name: str, workdir: Path) -> dict[str, float]:
    """Dice of predicting nothing, and of predicting every body voxel as organ."""
    cfg = compose([f"task={task_name}"])
    task = TASKS.get(cfg.task.family)(cfg.task)
    views = task.prepare(workdir / ".medgate" / "cache")
    metric = METRICS.get(cfg.task.metric)
    labels = [1, 2]
    empty, organ_everywhere = {}, {}
    for cid in views.test_ids():
        ref = load_volume(views.hidden / "labelsTs" / f"{cid}.nii.gz").data
        img = load_volume(views.public / "imagesTs" / f"{cid}.nii.gz").data
        empty[cid] = metric.per_label(np.zeros_like(ref), ref, labels)
        organ_everywhere[cid] = metric.per_label((img > -500).astype(np.uint8), ref, labels)
    return {"empty": macro_aggregate(empty, labels).value,
            "organ_everywhere": macro_aggregate(organ_everywhere, labels).value}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="seg_phantom")
    parser.add_argument("--agent", default="monai_unet")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/reference_agent.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "gate.cli", "run", f"task={args.task}",
                               f"agent={args.agent}", "progress=plain"], cwd=work,
                              capture_output=True, text=True)
        total = time.monotonic() - start
        if proc.returncode != 0:
            sys.exit(f"medgate run failed:\n{proc.stderr[-2000:]}")
        (path,) = work.glob(".medgate/runs/*/evaluation.json")
        record = json.loads(path.read_text())
        stdout = (Path(record["workspace"]).parent / "logs" / "agent.stdout.log").read_text()
        baselines = trivial_baselines(args.task, work)
    dice = record["outcome"]["value"]
    result = {
        "task": args.task, "agent": args.agent, "machine": platform.machine(),
        "cpus": record["config"].get("budget.cpus"),
        "iterations": record["config"].get("agent.args.iterations"),
        "dice_macro": dice, "dice_per_label": record["outcome"]["per_label"],
        "target_dice": 0.80, "meets_target": dice >= 0.80,
        "agent_wall_s": record["process"]["wall_s"], "gate_total_s": round(total, 1),
        "trivial_baselines": baselines,
        "ratio_vs_empty": dice / baselines["empty"] if baselines["empty"] else None,
        "stage_scores": {s["stage"]: s["score"] for s in record["stages"]},
        "codes": sorted({f["code"] for f in record["findings"]}),
        "verdict": record["verdict"],
        "training_lines": [ln for ln in stdout.splitlines() if "train" in ln.lower()][-3:],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(f"{args.task}/{args.agent}: Dice {dice:.3f} (target 0.80: "
          f"{'met' if dice >= 0.80 else 'NOT met'}); per label {result['dice_per_label']}")
    print(f"trivial baselines on the same labels: empty {baselines['empty']:.3f}, organ "
          f"everywhere {baselines['organ_everywhere']:.3f}; ratio vs empty "
          f"{result['ratio_vs_empty']:.2f}x")
    print(f"agent wall {result['agent_wall_s']:.0f} s, whole gate run {total:.0f} s; "
          f"verdict {record['verdict']}, codes {result['codes'] or 'none'}")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
