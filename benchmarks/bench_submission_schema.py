"""Time the submission-schema GX suite against plain vectorised pandas checks of the same rules.

A table submission (case_id, label in {0,1,2}, score in [0,1]) of 10 k and 1 M rows, with a few
bad rows of each kind, is checked both ways; both must find the same faults. Prints the times
and the ratio, and writes benchmarks/results/submission_schema.json.

    python benchmarks/bench_submission_schema.py [--sizes 10000 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gate.contract import ColumnSpec, PredictionKind, SubmissionSpec

OUT = Path(__file__).resolve().parent / "results" / "submission_schema.json"
SPEC = SubmissionSpec(
    kind=PredictionKind.TABLE,
    index_file="submission/submission.csv",
    columns=[
        ColumnSpec(name="case_id", dtype="str"),
        ColumnSpec(name="label", dtype="int", allowed=[0, 1, 2]),
        ColumnSpec(name="score", dtype="float", min=0.0, max=1.0),
    ],
)


def make_table(n: int, seed: int = 0) -> tuple[pd.DataFrame, list[str]]:
    """A submission as read from CSV (text), with 3 bad rows per rule; and the test ids."""
    rng = np.random.default_rng(seed)
    ids = [f"case_{i:07d}" for i in range(n)]
    df = pd.DataFrame(
        {
            "case_id": ids,
            "label": rng.integers(0, 3, n).astype(str),
            "score": np.round(rng.random(n), 6).astype(str),
        }
    )
    df.loc[1:3, "label"] = "7"  # outside the label set
    df.loc[4:6, "score"] = "nan"
    df.loc[7:9, "score"] = "1.5"  # out of range
    df.loc[10:12, "case_id"] = df.loc[13:15, "case_id"].to_numpy()  # duplicates -> 3 ids missing
    df.loc[16, "case_id"] = "case_extra"
    return df, ids


def pandas_checks(df: pd.DataFrame, test_ids: list[str]) -> dict[str, int]:
    """The same rules as checks.submission's suite, vectorised; counts of rows at fault."""
    ids = df["case_id"]
    label_num = pd.to_numeric(df["label"], errors="coerce")
    score_num = pd.to_numeric(df["score"], errors="coerce")
    test = pd.Index(test_ids)
    return {
        "columns": int(list(df.columns) != [c.name for c in SPEC.columns]),
        "duplicates": int(ids.duplicated(keep=False).sum()),
        "extra_ids": int((~ids.isin(test)).sum()),
        "missing_ids": int((~test.isin(ids)).sum()),
        "label_empty": int((~df["label"].str.contains(r"\S")).sum()),
        "label_int": int((~df["label"].str.fullmatch(r"\s*[-+]?\d+\s*")).sum()),
        "label_finite": int((~np.isfinite(label_num.to_numpy(dtype=float))).sum()),
        "label_allowed": int((~df["label"].isin(["0", "1", "2"])).sum()),
        "score_empty": int((~df["score"].str.contains(r"\S")).sum()),
        "score_finite": int((~np.isfinite(score_num.to_numpy(dtype=float))).sum()),
        "score_range": int(((score_num < 0) | (score_num > 1)).sum()),
    }


def gx_checks(df: pd.DataFrame, test_ids: list[str]) -> dict[str, int]:
    from checks.submission import coverage_frame, coverage_suite, table_frame, table_suite

    runs = [
        table_suite(SPEC).run(table_frame(df, SPEC), SPEC.index_file, {"test_ids": test_ids}),
        coverage_suite().run(coverage_frame(df["case_id"], test_ids), SPEC.index_file),
    ]
    return {r.rule.what: r.failed for run in runs for r in run.results}


def best_of(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    t = time.perf_counter()
    import great_expectations  # noqa: F401

    from checks.gx import _batch_definition

    _batch_definition()
    setup_s = time.perf_counter() - t
    print(f"GX import + ephemeral context: {setup_s:.2f} s (once per process)")
    rows = []
    for n in args.sizes:
        df, ids = make_table(n)
        gx_checks(df.head(100), ids[:100])  # build the suite once, outside the timing
        gx_s, gx_out = best_of(lambda df=df, ids=ids: gx_checks(df, ids), args.repeat)
        pd_s, pd_out = best_of(lambda df=df, ids=ids: pandas_checks(df, ids), args.repeat)
        ratio = gx_s / pd_s
        print(
            f"{n:>9,} rows: GX suite {gx_s:8.3f} s   pandas {pd_s:7.3f} s   GX/pandas {ratio:6.1f}x"
        )
        print(f"           GX rows at fault: {gx_out}")
        print(f"           pandas rows at fault: {pd_out}")
        rows.append(
            {
                "rows": n,
                "gx_s": gx_s,
                "pandas_s": pd_s,
                "ratio": ratio,
                "gx_failed": gx_out,
                "pandas_failed": pd_out,
            }
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps({"gx_setup_s": setup_s, "repeat": args.repeat, "results": rows}, indent=2) + "\n"
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
