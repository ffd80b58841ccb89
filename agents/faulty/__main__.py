"""An agent that runs the reference pipeline and commits exactly one known failure.

Run as ``python agents/faulty --fault NAME [--cache DIR] [--iterations N]`` in a workspace, like
every agent. The reference pipeline (agents/monai_unet) runs once with a tiny training budget;
with ``--cache`` its clean artifacts are kept and later runs copy them instead of training again
(the point is the failure, not the Dice). Then the fault named by ``--fault`` is committed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # faults.py, a sibling, not an installed package

import faults  # noqa: E402

from gate import contract as C  # noqa: E402

# What the gate wrote into the workspace: never cached, never copied over.
GATE_FILES = {C.TASK_FILE, C.BRIEF_FILE, C.DATA_DIR}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="faulty", description=__doc__)
    p.add_argument(
        "--fault",
        choices=[*sorted(faults.FAULTS), "none"],
        required=True,
        help="'none': the clean reference run, the control of the fault matrix",
    )
    p.add_argument("--cache", default="", help="folder that keeps one clean run per task")
    p.add_argument("--iterations", type=int, default=12, help="training iterations (tiny)")
    p.add_argument("--val-every", type=int, default=4)
    p.add_argument(
        "--early",
        action="store_true",
        help="commit the fault right after a plan, without the pipeline (fast)",
    )
    return p.parse_args(argv)


def reference_run(ws: Path, iterations: int, val_every: int) -> None:
    """The reference agent's own main(), in this process, on this workspace."""
    import importlib.util

    ref = HERE.parent / "monai_unet"
    spec = importlib.util.spec_from_file_location("monai_unet_main", ref / "__main__.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # it puts its own folder on sys.path for its siblings
    argv = ["--iterations", str(iterations), "--val-every", str(val_every), "--channels", "8,16,32"]
    code = module.main(argv)
    if code:
        raise SystemExit(code)


def cache_key(ws: Path, args: argparse.Namespace) -> str:
    task = C.read_task(ws)
    digest = hashlib.sha256()
    digest.update((ws / task.data.cases).read_bytes())
    digest.update(f"{task.task}|{task.seed}|{args.iterations}|{args.val_every}".encode())
    return f"{task.task}-{digest.hexdigest()[:12]}"


def agent_files(ws: Path) -> list[Path]:
    return [p for p in ws.iterdir() if p.name not in GATE_FILES]


def restore_or_run(ws: Path, args: argparse.Namespace) -> None:
    if not args.cache:
        reference_run(ws, args.iterations, args.val_every)
        return
    root = Path(args.cache).resolve()
    entry = root / cache_key(ws, args)
    if entry.is_dir():
        for src in entry.iterdir():
            dst = ws / src.name
            shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)
        faults.fit_plan_budget(ws, float(os.environ.get("MEDGATE_BUDGET_S", "0") or 0))
        print(f"faulty agent: clean artifacts restored from {entry}", flush=True)
        return
    reference_run(ws, args.iterations, args.val_every)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".fill-", dir=root))
    for src in agent_files(ws):
        dst = tmp / src.name
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)
    try:
        os.rename(tmp, entry)
    except OSError:  # another run filled it first; theirs is as good
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ws = Path(os.environ.get("MEDGATE_WORKSPACE") or os.getcwd()).resolve()
    if args.fault == "none":
        restore_or_run(ws, args)
        return 0
    fault = faults.FAULTS[args.fault]
    if args.early:
        faults.write_plan(ws)
        fault.commit(ws)
        return 0
    restore_or_run(ws, args)
    print(f"faulty agent: committing fault {args.fault!r}: {fault.description}", flush=True)
    fault.commit(ws)
    return 0


if __name__ == "__main__":
    sys.exit(main())
