"""The 3D U-Net: build, train for a fixed number of iterations, predict, post-process, score."""

from __future__ import annotations

import copy
import io
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from monai.data import DataLoader, Dataset
from monai.inferers import sliding_window_inference
from monai.losses import DiceCELoss
from monai.metrics import compute_dice
from monai.networks.nets import UNet
from scipy import ndimage


def build_net(n_classes: int, channels: tuple[int, ...]) -> UNet:
    return UNet(
        spatial_dims=3,
        in_channels=1,
        out_channels=n_classes,
        channels=channels,
        strides=(2,) * (len(channels) - 1),
        num_res_units=1,
        norm="instance",
    )


def make_loss() -> DiceCELoss:
    # batch=True pools Dice over the batch, so lesion-free volumes do not blow up the lesion term.
    return DiceCELoss(to_onehot_y=True, softmax=True, batch=True)


def batches(data: list[dict], transform: Callable, batch_size: int, seed: int) -> Iterator[dict]:
    """An endless, seeded stream of augmented training batches (single process: reproducible)."""
    gen = torch.Generator().manual_seed(seed)
    loader = DataLoader(
        Dataset(data, transform),
        batch_size=batch_size,
        shuffle=True,
        num_workers=0,
        generator=gen,
        drop_last=len(data) > batch_size,
    )
    while True:
        yield from loader


@torch.no_grad()
def predict(
    net: torch.nn.Module, image: torch.Tensor, roi: tuple[int, ...], device: torch.device
) -> np.ndarray:
    """Label map of one channel-first image, on the image's own grid."""
    net.eval()
    logits = sliding_window_inference(
        image[None].to(device), roi, sw_batch_size=1, predictor=net, overlap=0.25, mode="gaussian"
    )
    return logits.argmax(1)[0].cpu().numpy().astype(np.uint8)


def postprocess(label: np.ndarray, min_lesion_voxels: int) -> np.ndarray:
    """Keep the largest foreground component; lesion specks become organ.

    A lesion-free case with a single false-positive lesion voxel scores lesion Dice 0, so tiny
    lesion components cost far more than the boundary voxels they might add.
    """
    out = label.copy()
    comps, n = ndimage.label(out > 0)
    if n > 1:
        sizes = ndimage.sum_labels(np.ones_like(comps), comps, index=np.arange(1, n + 1))
        out[(comps != 1 + int(np.argmax(sizes))) & (comps > 0)] = 0
    comps, n = ndimage.label(out == 2)
    if n:
        sizes = ndimage.sum_labels(np.ones_like(comps), comps, index=np.arange(1, n + 1))
        small = np.isin(comps, 1 + np.flatnonzero(sizes < min_lesion_voxels))
        out[small] = 1
    return out


def dice_per_label(pred: np.ndarray, ref: np.ndarray, labels: list[int]) -> dict[int, float]:
    """Task metric: empty reference + empty prediction = 1, + any predicted voxel = 0."""
    p = torch.as_tensor(pred.astype(np.int64))
    r = torch.as_tensor(ref.astype(np.int64))
    y_pred = torch.stack([p == lab for lab in labels]).unsqueeze(0).float()
    y = torch.stack([r == lab for lab in labels]).unsqueeze(0).float()
    values = compute_dice(y_pred, y, include_background=True, ignore_empty=False)[0]
    return {lab: float(v) for lab, v in zip(labels, values.tolist(), strict=True)}


def macro(per_case: list[dict[int, float]], labels: list[int]) -> tuple[float, dict[int, float]]:
    per_label = {lab: float(np.mean([c[lab] for c in per_case])) for lab in labels}
    return float(np.mean(list(per_label.values()))), per_label


@dataclass
class TrainResult:
    best_state: dict
    best_iteration: int
    history: list[dict] = field(default_factory=list)
    iterations_done: int = 0
    seconds: float = 0.0
    stopped_early: bool = False


def train(
    net: torch.nn.Module,
    stream: Iterator[dict],
    *,
    iterations: int,
    lr: float,
    val_every: int,
    evaluate: Callable[[], float],
    greater_is_better: bool,
    max_seconds: float,
    device: torch.device,
    log: Callable[[str], None],
) -> TrainResult:
    """Train a fixed number of iterations; keep the checkpoint with the best validation metric."""
    loss_fn = make_loss()
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=iterations, power=0.9)
    start = time.monotonic()
    result = TrainResult(best_state={}, best_iteration=0)
    best, losses = None, []
    for it in range(1, iterations + 1):
        net.train()
        batch = next(stream)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(batch["image"].to(device)), batch["label"].to(device))
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        result.iterations_done = it
        over_time = time.monotonic() - start > max_seconds
        if it % val_every == 0 or it == iterations or over_time:
            value = evaluate()
            mean_loss = float(np.mean(losses[-val_every:]))
            result.history.append({"epoch": it, "value": value, "loss": mean_loss})
            log(
                f"[validate] iteration {it}/{iterations} loss {mean_loss:.4f} dice {value:.4f} "
                f"({time.monotonic() - start:.0f}s)"
            )
            if best is None or (value > best if greater_is_better else value < best):
                best, result.best_iteration = value, it
                result.best_state = copy.deepcopy(net.state_dict())
        elif it % 25 == 0:
            log(f"[train] iteration {it}/{iterations} loss {np.mean(losses[-25:]):.4f}")
        if over_time:
            result.stopped_early = True
            log(f"[train] safety stop after {it} iterations: --max-seconds {max_seconds:.0f} hit")
            break
    result.seconds = time.monotonic() - start
    return result


def state_bytes(state: dict) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()
