"""Traceability (S5): the manifest's checksums match the files, the submission is the S4
predictions byte for byte, and the code hash recorded in S2 is the code that ran.

A submission that cannot be traced to the predictions and the code the gate saw is not evidence
of anything, whatever it scores.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pandas as pd

from checks import Check
from checks.gx import CheckOutcome, Rule, Suite
from checks.submission import read_table
from gate.contract import (
    MANIFEST_FILE,
    PREDICTIONS_DIR,
    SETUP_CODE_DIR,
    SMOKE_FILE,
    SUBMISSION_DIR,
    sha256_file,
    sha256_tree,
)
from gate.errors import ArtifactError
from gate.evidence import Evidence

ITEMS = ("checksums_match", "manifest_complete", "traceable", "code_traceable")


def _sha(path: Path) -> str | None:
    return sha256_file(path) if path.is_file() else None


def _sha_inside(ev: Evidence, rel: str) -> str | None:
    """Hash a path the agent named, only when it is a file inside the workspace: a manifest
    entry like /etc/shadow or ../../cache/... counts as a missing file, never gets read."""
    path = ev.path(rel).resolve()
    if not path.is_relative_to(ev.workspace.resolve()):
        return None
    try:
        return _sha(path)
    except OSError:  # unreadable (mode 000, a FIFO): not a verifiable file
        return None


@cache
def trace_suite() -> Suite:
    import great_expectations.expectations as gxe

    return Suite(
        "traceability",
        (
            Rule(
                "checksums_match",
                "SUBMIT-CHECKSUM",
                "each manifest checksum is the sha256 of its file",
                "compute sha256 of each file after writing it and record that in the manifest",
                gxe.ExpectColumnPairValuesToBeEqual(
                    column_A="recorded", column_B="actual", ignore_row_if="both_values_are_missing"
                ),
                partial=True,
            ),
        ),
        ("path",),
    )


@cache
def coverage_suite() -> Suite:
    import great_expectations.expectations as gxe

    return Suite(
        "manifest_coverage",
        (
            Rule(
                "manifest_complete",
                "SUBMIT-CHECKSUM",
                "every file under submission/ has a checksum in the manifest",
                "list every submitted file with its sha256 in submission/manifest.json",
                gxe.ExpectColumnValuesToBeInSet(column="listed", value_set=[True]),
            ),
        ),
        ("path",),
    )


@cache
def lineage_suite() -> Suite:
    import great_expectations.expectations as gxe

    return Suite(
        "lineage",
        (
            Rule(
                "traceable",
                "SUBMIT-UNTRACEABLE",
                "each submitted file is byte for byte the S4 prediction of its case",
                "submit exactly the files in predictions/; never edit them after inference",
                gxe.ExpectColumnPairValuesToBeEqual(
                    column_A="submitted_sha",
                    column_B="prediction_sha",
                    ignore_row_if="both_values_are_missing",
                ),
                partial=True,
            ),
        ),
        ("case_id",),
    )


@cache
def code_suite() -> Suite:
    import great_expectations.expectations as gxe

    return Suite(
        "code_hash",
        (
            Rule(
                "code_traceable",
                "SUBMIT-UNTRACEABLE",
                "the recorded code hash is the hash of setup/code",
                "record sha256_tree(setup/code) of the code that ran, and do not change "
                "setup/code afterwards",
                gxe.ExpectColumnPairValuesToBeEqual(column_A="recorded", column_B="actual"),
            ),
        ),
        ("source",),
    )


def traceability(ev: Evidence) -> CheckOutcome:
    manifest = ev.manifest
    if isinstance(manifest, ArtifactError):
        return CheckOutcome.skipped("traceability", "submit", ITEMS, str(manifest))
    listed = [*manifest.files, *([manifest.model] if manifest.model else [])]
    sums = pd.DataFrame(
        [{"path": f.path, "recorded": f.sha256, "actual": _sha_inside(ev, f.path)} for f in listed],
        columns=["path", "recorded", "actual"],
    )
    on_disk = sorted(
        p.relative_to(ev.workspace).as_posix()
        for p in ev.path(SUBMISSION_DIR).rglob("*")
        if p.is_file() and p != ev.path(MANIFEST_FILE)
    )
    names = {f.path for f in manifest.files}
    coverage = pd.DataFrame({"path": on_disk, "listed": [p in names for p in on_disk]})
    runs = [
        trace_suite().run(sums, MANIFEST_FILE),
        coverage_suite().run(coverage, MANIFEST_FILE),
        lineage_suite().run(_lineage(ev), f"{ev.contract.submission.index_file} vs predictions/"),
    ]
    code = _code_rows(ev, manifest.code_sha256)
    out = CheckOutcome("traceability", "submit")
    if code.empty:
        out.add_item("code_traceable", 0, f"no code hash recorded in {SMOKE_FILE} or the manifest")
    else:
        runs.append(code_suite().run(code, f"{SMOKE_FILE} / {MANIFEST_FILE} vs {SETUP_CODE_DIR}/"))
    return out.add_runs(*runs)


def _lineage(ev: Evidence) -> pd.DataFrame:
    """Submitted file vs S4 prediction of the same case, by content hash."""
    spec = ev.contract.submission
    cols = ["case_id", "file", "submitted_sha", "prediction_sha"]
    table = read_table(ev.path(spec.index_file)) if ev.path(spec.index_file).is_file() else None
    if spec.files_dir is None or not isinstance(table, pd.DataFrame):
        return pd.DataFrame(columns=cols)
    if not {"case_id", "file"} <= set(table.columns):
        return pd.DataFrame(columns=cols)  # the schema check names the missing columns
    base = ev.path(spec.index_file).parent
    tests = set(ev.test_ids)  # rows of other ids are the schema check's business
    rows = [
        {
            "case_id": cid,
            "file": rel,
            "submitted_sha": _sha(base / rel) if rel else None,
            "prediction_sha": _sha(ev.prediction_path(PREDICTIONS_DIR, cid)),
        }
        for cid, rel in zip(table["case_id"], table["file"], strict=True)
        if cid in tests
    ]
    return pd.DataFrame(rows, columns=cols)


def _code_rows(ev: Evidence, manifest_code: str | None) -> pd.DataFrame:
    code_dir = ev.path(SETUP_CODE_DIR)
    actual = sha256_tree(code_dir) if code_dir.is_dir() else None
    rows = []
    smoke = ev.smoke
    if not isinstance(smoke, ArtifactError):
        rows.append({"source": SMOKE_FILE, "recorded": smoke.code_sha256, "actual": actual})
    if manifest_code:
        rows.append({"source": MANIFEST_FILE, "recorded": manifest_code, "actual": actual})
    return pd.DataFrame(rows, columns=["source", "recorded", "actual"])


TRACEABILITY = Check("traceability", "submit", ITEMS, traceability)
