"""Statistics of the verdict: seed aggregation and the paired bootstrap of per-case outcomes."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MeanSE:
    mean: float
    se: float  # standard error of the mean; 0 for a single value
    n: int

    def __str__(self) -> str:
        return f"{self.mean:.3f}" if self.n < 2 else f"{self.mean:.3f} ± {self.se:.3f}"


def mean_se(values: list[float]) -> MeanSE:
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return MeanSE(float("nan"), float("nan"), 0)
    arr = np.asarray(finite, dtype=float)
    se = float(arr.std(ddof=1) / math.sqrt(len(arr))) if len(arr) > 1 else 0.0
    return MeanSE(float(arr.mean()), se, len(arr))


@dataclass(frozen=True)
class PairedDelta:
    """candidate − baseline over paired cases, oriented so that positive is better."""

    delta: float
    low: float
    high: float
    confidence: float
    n_pairs: int

    def __str__(self) -> str:
        return f"{self.delta:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def paired_bootstrap(
    candidate: dict[str, float],
    baseline: dict[str, float],
    greater_is_better: bool,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> PairedDelta:
    """Confidence interval of the mean per-case difference, by ``scipy.stats.bootstrap`` (BCa).

    Cases are paired by id; only cases present in both are compared.
    """
    ids = sorted(set(candidate) & set(baseline))
    if not ids:
        raise ValueError("candidate and baseline share no case ids")
    sign = 1.0 if greater_is_better else -1.0
    diffs = np.array([sign * (candidate[i] - baseline[i]) for i in ids], dtype=float)
    delta = float(diffs.mean())
    if len(diffs) < 2 or np.allclose(diffs, diffs[0]):  # no spread: the interval is the point
        return PairedDelta(delta, delta, delta, confidence, len(diffs))
    low, high = _interval(diffs, confidence, n_resamples, seed, "BCa")
    if math.isnan(low) or math.isnan(high):  # BCa can degenerate on tiny samples
        low, high = _interval(diffs, confidence, n_resamples, seed, "percentile")
    return PairedDelta(delta, low, high, confidence, len(diffs))


def _interval(
    values: np.ndarray, confidence: float, n_resamples: int, seed: int, method: str
) -> tuple[float, float]:
    from scipy.stats import bootstrap

    res = bootstrap(
        (values,),
        np.mean,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method=method,
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def case_interval(
    values: list[float], confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Bootstrap (percentile) interval of the mean over cases: how much the test set alone
    could move the outcome."""
    arr = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if len(arr) < 2 or np.allclose(arr, arr[0]):
        m = float(arr.mean()) if len(arr) else float("nan")
        return m, m
    return _interval(arr, confidence, n_resamples, seed, "percentile")
