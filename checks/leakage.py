"""Split leakage (S3): the agent's split against the task's own case table.

Every row of the split is joined to ``data/cases.csv`` by case id, so the rules use the task's
patient ids, not the agent's (an agent cannot relabel patients to hide a leak). Near-duplicate
images of different patients are found by an image hash; a pair that straddles training and
validation is a leak.
"""

from __future__ import annotations

import itertools
from functools import cache

import pandas as pd

from checks import Check
from checks.expectations import ExpectColumnValuesToBeOnePerGroup
from checks.gx import CheckOutcome, Rule, Suite
from checks.imagehash import NEAR_DUPLICATE, distance, image_hash
from gate.contract import SPLIT_FILE
from gate.errors import ArtifactError
from gate.evidence import Evidence

SPLIT_ITEMS = ("split_valid", "split_grouped", "no_test_cases", "no_duplicate_leak")


def split_frame(split: pd.DataFrame, cases: pd.DataFrame) -> pd.DataFrame:
    """The split's rows joined to the task's cases, plus a row per training case it omits."""
    truth = cases[["case_id", "patient_id", "site", "split"]].rename(
        columns={"patient_id": "task_patient_id", "split": "task_split"}
    )
    df = split[["case_id", "patient_id", "fold"]].merge(
        truth, on="case_id", how="outer", indicator=True
    )
    keep = (df["_merge"] != "right_only") | (df["task_split"] == "train")
    return df.loc[keep].drop(columns="_merge").reset_index(drop=True)


@cache
def split_suite() -> Suite:
    import great_expectations.expectations as gxe

    fix = "write one row per training case of data/cases.csv with its case_id and patient_id"
    return Suite(
        "split",
        (
            Rule(
                "split_valid",
                "VALID-SPLIT-INVALID",
                "each case id appears once",
                "drop the duplicated rows",
                gxe.ExpectColumnValuesToBeUnique(column="case_id"),
            ),
            Rule(
                "split_valid",
                "VALID-SPLIT-INVALID",
                "every case id is a case of data/cases.csv",
                fix,
                gxe.ExpectColumnValuesToBeInSet(
                    column="case_id", value_set={"$PARAMETER": "case_ids"}
                ),
            ),
            Rule(
                "split_valid",
                "VALID-SPLIT-INVALID",
                "every training case has a fold",
                fix,
                gxe.ExpectColumnValuesToNotBeNull(column="fold"),
            ),
            Rule(
                "split_valid",
                "VALID-SPLIT-INVALID",
                "patient ids equal data/cases.csv's",
                "copy patient_id from data/cases.csv; never relabel patients",
                gxe.ExpectColumnPairValuesToBeEqual(
                    column_A="patient_id",
                    column_B="task_patient_id",
                    ignore_row_if="either_value_is_missing",
                ),
            ),
            Rule(
                "split_grouped",
                "VALID-LEAK-PATIENT",
                "each patient (by data/cases.csv) is in exactly one fold",
                "split by patient_id (group k-fold or group holdout), never by case",
                ExpectColumnValuesToBeOnePerGroup(
                    column_list=["task_patient_id", "fold"], ignore_row_if="any_value_is_missing"
                ),
            ),
            Rule(
                "no_test_cases",
                "VALID-LEAK-TEST",
                "no test case is in a training or validation fold",
                "use only cases whose split is 'train' in data/cases.csv",
                gxe.ExpectColumnValuesToNotBeInSet(
                    column="case_id", value_set={"$PARAMETER": "test_ids"}
                ),
            ),
        ),
        ("case_id", "task_patient_id", "fold"),
    )


@cache
def site_suite() -> Suite:
    return Suite(
        "split_site",
        (
            Rule(
                "split_site_grouped",
                "VALID-LEAK-SITE",
                "each acquisition site is in exactly one fold",
                "split by site: hold out whole sites (leave-site-out)",
                ExpectColumnValuesToBeOnePerGroup(
                    column_list=["site", "fold"], ignore_row_if="any_value_is_missing"
                ),
            ),
        ),
        ("case_id", "site", "fold"),
    )


@cache
def duplicate_suite() -> Suite:
    import great_expectations.expectations as gxe

    return Suite(
        "near_duplicates",
        (
            Rule(
                "no_duplicate_leak",
                "VALID-LEAK-DUPLICATE",
                "near-duplicate images of different patients share a fold",
                "put near-duplicate images in the same fold, or drop one of them",
                gxe.ExpectColumnPairValuesToBeEqual(column_A="fold_a", column_B="fold_b"),
            ),
        ),
        ("case_a", "case_b"),
    )


def near_duplicates(ev: Evidence, frame: pd.DataFrame) -> pd.DataFrame:
    """Pairs of split cases of different (task) patients whose images are near-duplicates."""
    rows = frame.dropna(subset=["fold", "task_patient_id"]).drop_duplicates("case_id")
    rows = rows[rows["task_split"] == "train"]
    hashes = {cid: image_hash(ev.image_path(cid)) for cid in rows["case_id"]}
    info = rows.set_index("case_id")
    pairs = []
    for a, b in itertools.combinations(sorted(hashes), 2):
        if info.at[a, "task_patient_id"] == info.at[b, "task_patient_id"]:
            continue
        d = distance(hashes[a], hashes[b])
        if d <= NEAR_DUPLICATE:
            pairs.append(
                {
                    "case_a": a,
                    "case_b": b,
                    "patient_a": info.at[a, "task_patient_id"],
                    "patient_b": info.at[b, "task_patient_id"],
                    "fold_a": int(info.at[a, "fold"]),
                    "fold_b": int(info.at[b, "fold"]),
                    "distance": d,
                }
            )
    cols = ["case_a", "case_b", "patient_a", "patient_b", "fold_a", "fold_b", "distance"]
    return pd.DataFrame(pairs, columns=cols)


def _frame(ev: Evidence) -> pd.DataFrame | ArtifactError:
    split = ev.split
    if isinstance(split, ArtifactError):
        return split
    return split_frame(split, ev.cases.reset_index(drop=True))


def leakage(ev: Evidence) -> CheckOutcome:
    frame = _frame(ev)
    if isinstance(frame, ArtifactError):
        return CheckOutcome.skipped("leakage", "validate", SPLIT_ITEMS, str(frame))
    params = {"case_ids": sorted(ev.cases.index), "test_ids": list(ev.test_ids)}
    dupes = near_duplicates(ev, frame)
    found = ", ".join(f"{r.case_a}~{r.case_b}" for r in dupes.head(3).itertuples())
    note = f"{len(dupes)} near-duplicate pairs across patients" + (f": {found}" if found else "")
    out = CheckOutcome("leakage", "validate")
    out.add_runs(
        split_suite().run(frame, SPLIT_FILE, params),
        duplicate_suite().run(dupes, f"{SPLIT_FILE} + data images"),
        note={"no_duplicate_leak": note},
    )
    out.result["near_duplicates"] = dupes.to_dict(orient="records")
    return out


def site_leakage(ev: Evidence) -> CheckOutcome:
    frame = _frame(ev)
    if isinstance(frame, ArtifactError):
        return CheckOutcome.skipped("site_leakage", "validate", ("split_site_grouped",), str(frame))
    return CheckOutcome("site_leakage", "validate").add_runs(site_suite().run(frame, SPLIT_FILE))


LEAKAGE = Check("leakage", "validate", SPLIT_ITEMS, leakage)
SITE_LEAKAGE = Check("site_leakage", "validate", ("split_site_grouped",), site_leakage)
