"""Reference agent: a MONAI 3D U-Net taken through the five stages of the medgate contract.

Run as ``python agents/monai_unet [--iterations N ...]`` with the workspace as working directory.
It talks to the gate only through files (gate.contract); the gate never imports it.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # siblings, not an installed package
# Must be set before CUDA initialises for deterministic cuBLAS.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import artifacts
import data as D
import model as M
import numpy as np
import torch
from monai.utils import set_determinism

from gate import contract as C

T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"{time.monotonic() - T0:7.1f}s {msg}", flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="monai_unet", description=__doc__)
    p.add_argument("--iterations", type=int, default=800, help="training iterations (fixed)")
    p.add_argument("--val-every", type=int, default=100, help="iterations between validations")
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--channels", default="16,32,64,128", help="U-Net channels per level")
    p.add_argument("--val-fraction", type=float, default=0.25)
    p.add_argument(
        "--min-lesion-voxels",
        type=int,
        default=20,
        help="smaller predicted lesion components become organ",
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=0.0,
        help="safety stop for training; 0 = derived from MEDGATE_BUDGET_S",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ws = Path(os.environ.get("MEDGATE_WORKSPACE") or os.getcwd()).resolve()
    seed = int(os.environ.get("MEDGATE_SEED", "0"))
    budget_s = float(os.environ.get("MEDGATE_BUDGET_S", "3600"))
    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS") or 2)))
    use_cuda = bool(os.environ.get("CUDA_VISIBLE_DEVICES")) and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    set_determinism(seed=seed)
    torch.use_deterministic_algorithms(True, warn_only=True)

    task = C.read_task(ws)
    labels = task.foreground_labels()
    n_classes = max(labels) + 1
    greater = task.metric.greater_is_better
    cases = D.read_cases(ws / task.data.cases)
    train_cases = [c for c in cases if c.split == "train"]
    test_ids = sorted(c.case_id for c in cases if c.split == "test")
    pattern = task.data.image_pattern
    log(
        f"[start] task {task.task}: {len(train_cases)} training, {len(test_ids)} test cases, "
        f"seed {seed}, device {device}, budget {budget_s:.0f}s"
    )
    C.append_trace(ws, "start", seed=seed, device=str(device))

    # ------------------------------------------------------------------ S1 plan
    train_budget = 0.7 * budget_s
    plan = C.Plan(
        task_type=task.task_type,
        metric=task.metric.name,
        greater_is_better=greater,
        split=C.SplitPlan(
            strategy="group_holdout",
            group_key=task.grouping_key,
            n_folds=1,
            validation_fraction=args.val_fraction,
        ),
        lanes=[
            C.MethodLane(
                name="unet3d_dicece",
                budget_s=train_budget,
                hypothesis=(
                    "A 3D U-Net trained with Dice+CE on whole volumes, soft-tissue windowing and "
                    "site-like gain/offset/noise augmentation segments organ and lesions across "
                    "sites."
                ),
            ),
            C.MethodLane(
                name="lesion_cleanup",
                budget_s=0.05 * budget_s,
                hypothesis=(
                    "Keeping the largest foreground component and turning lesion specks "
                    f"smaller than {args.min_lesion_voxels} voxels into organ removes false "
                    "positives that score lesion Dice 0 on lesion-free cases."
                ),
            ),
        ],
        budget_s=budget_s,
        notes=(
            f"{args.iterations} fixed training iterations; validation every {args.val_every} "
            "iterations (history 'epoch' = iteration); the best validation checkpoint is kept."
        ),
    )
    C.write_model(ws, C.PLAN_FILE, plan)
    log("[plan] wrote plan.yaml")

    # ------------------------------------------------------------------ S2 setup
    code_sha = artifacts.copy_code(ws)
    artifacts.write_environment(ws)
    load = D.load_transforms()

    def item(folder: str, cid: str, with_label: bool = True) -> dict:
        rel = pattern.format(case_id=cid)
        d = {"image": str(ws / folder / rel)}
        if with_label:
            d["label"] = str(ws / task.data.train_labels / rel)
        return load(d)

    fold_of = D.group_holdout(train_cases, args.val_fraction, seed)
    train_data = [
        item(task.data.train_images, c.case_id) for c in train_cases if fold_of[c.case_id] == 0
    ]
    val_ids = [c.case_id for c in train_cases if fold_of[c.case_id] == 1]
    val_data = [item(task.data.train_images, cid) for cid in val_ids]
    roi = D.roi_for(tuple(train_data[0]["image"].shape[1:]))
    channels = tuple(int(x) for x in args.channels.split(","))
    net = M.build_net(n_classes, channels).to(device)
    stream = M.batches(train_data, D.augment_transforms(roi), args.batch_size, seed)

    t = time.monotonic()
    batch = next(M.batches(train_data, D.augment_transforms(roi), args.batch_size, seed + 1))
    smoke_loss = M.make_loss()(net(batch["image"].to(device)), batch["label"].to(device))
    smoke_loss.backward()
    net.zero_grad(set_to_none=True)
    smoke = C.SmokeRecord(
        ok=bool(torch.isfinite(smoke_loss)),
        batch_shape=list(batch["image"].shape),
        loss=smoke_loss.item(),
        seconds=time.monotonic() - t,
        device=str(device),
        code_sha256=code_sha,
    )
    C.write_model(ws, C.SMOKE_FILE, smoke)
    log(f"[setup] smoke batch {smoke.batch_shape} loss {smoke.loss:.4f}; roi {roi}")

    # ------------------------------------------------------------------ S3 validate
    C.write_split(ws, [(c.case_id, c.patient_id, fold_of[c.case_id]) for c in train_cases])
    log(f"[validate] {len(train_data)} training / {len(val_ids)} validation cases")

    def predict_val() -> list[np.ndarray]:
        return [
            M.postprocess(M.predict(net, d["image"], roi, device), args.min_lesion_voxels)
            for d in val_data
        ]

    def evaluate() -> float:
        scores = [
            M.dice_per_label(p, d["label"][0].numpy(), labels)
            for p, d in zip(predict_val(), val_data, strict=True)
        ]
        return M.macro(scores, labels)[0]

    max_seconds = args.max_seconds or max(30.0, train_budget - (time.monotonic() - T0))
    result = M.train(
        net,
        stream,
        iterations=args.iterations,
        lr=args.lr,
        val_every=args.val_every,
        evaluate=evaluate,
        greater_is_better=greater,
        max_seconds=max_seconds,
        device=device,
        log=log,
    )
    net.load_state_dict(result.best_state)
    model_file = ws / "model" / "model.pt"
    model_file.parent.mkdir(parents=True, exist_ok=True)
    model_file.write_bytes(M.state_bytes(result.best_state))
    log(
        f"[validate] trained {result.iterations_done} iterations in {result.seconds:.1f}s; "
        f"best iteration {result.best_iteration}"
    )

    # The claim is measured on exactly the files written, read back from disk.
    scores = []
    for cid, pred, d in zip(val_ids, predict_val(), val_data, strict=True):
        path = ws / C.VALIDATION_PREDICTIONS_DIR / pattern.format(case_id=cid)
        artifacts.save_label(path, pred, ws / task.data.train_images / pattern.format(case_id=cid))
        written = np.asarray(artifacts.nib.load(path).dataobj)
        scores.append(M.dice_per_label(written, d["label"][0].numpy(), labels))
    value, per_label = M.macro(scores, labels)
    report = C.ValidationReport(
        metric=task.metric.name,
        greater_is_better=greater,
        value=value,
        per_label={str(k): v for k, v in per_label.items()},
        validation_folds=[1],
        n_cases=len(val_ids),
        history=[C.EpochLog(**h) for h in result.history],
        selected_epoch=result.best_iteration,
    )
    C.write_model(ws, C.VALIDATION_REPORT_FILE, report)
    C.append_trace(ws, "validated", value=value, iterations=result.iterations_done)
    log(
        f"[validate] {task.metric.name} {value:.4f} per label "
        + " ".join(f"{k}={v:.4f}" for k, v in per_label.items())
    )

    # ------------------------------------------------------------------ S4 inference
    image_tf = D.image_transforms()
    for cid in test_ids:
        src = ws / task.data.test_images / pattern.format(case_id=cid)
        pred = M.postprocess(
            M.predict(net, image_tf(str(src)), roi, device), args.min_lesion_voxels
        )
        out = ws / C.PREDICTIONS_DIR / task.prediction.file_pattern.format(case_id=cid)
        artifacts.save_label(out, pred, src)
    log(f"[inference] wrote {len(test_ids)} predictions")

    # ------------------------------------------------------------------ S5 submit
    claimed = {task.metric.name: value} if math.isfinite(value) else {}
    artifacts.write_submission(
        ws, test_ids, task.prediction.file_pattern, model_file, claimed, code_sha
    )
    C.append_trace(ws, "submitted", n=len(test_ids))
    log("[submit] wrote submission/ and manifest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
