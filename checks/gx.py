"""Great Expectations plumbing shared by every check: one context, suites of rules, summaries.

Importing GX and building a context costs seconds, so the process keeps one ephemeral context
with one pandas data source, and each suite's ``ExpectationSuite`` is built once; a run supplies
only its DataFrame and its task-specific values (``{"$PARAMETER": name}`` in the suite).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pandas as pd

from gate.record import Finding, RubricItem

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")  # the gate never phones home
# GX logs every context and expectation at INFO; under Hydra's root INFO that drowns the run.
logging.getLogger("great_expectations").setLevel(logging.WARNING)

PARTIAL = 20  # unexpected rows kept in a result: enough to name the first few and count them


@dataclass(frozen=True)
class Rule:
    """One expectation, the rubric item it scores, and the error code earned when it fails."""

    item: str
    code: str
    what: str  # the rule in words, e.g. "each patient is in exactly one fold"
    fix: str
    expectation: Any  # a gx.expectations.Expectation; built lazily by the suite's factory
    partial: bool = False  # score the item by the fraction of rows that pass, not 0/1


@dataclass(frozen=True)
class RuleResult:
    rule: Rule
    success: bool
    checked: int
    failed: int
    rows: list[str]  # the first rows at fault, named by the suite's id columns
    error: str | None = None  # GX raised (e.g. a column is absent): the rule could not hold

    def message(self, artifact: str) -> str:
        if self.error:
            detail = f"could not be checked ({self.error})"
        else:
            more = self.failed - min(len(self.rows), 5)
            detail = f"{self.failed} of {self.checked} rows at fault: " + ", ".join(self.rows[:5])
            detail += f" (+{more} more)" if more > 0 else ""
        return f"{artifact}: {self.rule.what} — {detail}. Fix: {self.rule.fix}"


@dataclass
class SuiteRun:
    name: str
    artifact: str
    results: list[RuleResult]
    gx: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return all(r.success for r in self.results)


@dataclass(frozen=True)
class Suite:
    """A named list of rules over one kind of DataFrame; ``ids`` name a row in messages."""

    name: str
    rules: tuple[Rule, ...]
    ids: tuple[str, ...]

    def run(
        self, df: pd.DataFrame, artifact: str, params: dict[str, Any] | None = None
    ) -> SuiteRun:
        return run_suite(self, df, artifact, params or {})


@cache
def _batch_definition() -> Any:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = ctx.data_sources.add_pandas("medgate").add_dataframe_asset("artifact")
    return asset.add_batch_definition_whole_dataframe("whole")


_SUITES: dict[int, Any] = {}


def _gx_suite(suite: Suite) -> Any:
    """The ExpectationSuite of ``suite``, built on first use and reused for the process."""
    import great_expectations as gx

    key = id(suite)
    if key not in _SUITES:
        built = gx.ExpectationSuite(name=suite.name)
        for i, rule in enumerate(suite.rules):
            exp = rule.expectation
            exp.meta = {"rule": i, "code": rule.code, "item": rule.item}
            built.add_expectation(exp)
        _SUITES[key] = (suite, built)  # holding ``suite`` keeps its id from being reused
    return _SUITES[key][1]


def run_suite(suite: Suite, df: pd.DataFrame, artifact: str, params: dict[str, Any]) -> SuiteRun:
    """Validate ``df`` against ``suite``; every rule's outcome, GX's JSON and the rows at fault."""
    ids = [c for c in suite.ids if c in df.columns]
    batch = _batch_definition().get_batch(batch_parameters={"dataframe": df})
    result = batch.validate(
        _gx_suite(suite),
        expectation_parameters=params,
        result_format={
            "result_format": "SUMMARY",
            "partial_unexpected_count": PARTIAL,
            **({"unexpected_index_column_names": ids} if ids else {}),
        },
    )
    payload = _jsonable(result.to_json_dict())
    payload["medgate"] = {"suite": suite.name, "artifact": artifact, "rows": len(df)}
    ordered = sorted(payload["results"], key=lambda r: int(r["expectation_config"]["meta"]["rule"]))
    results = [_rule_result(suite, r, ids, len(df)) for r in ordered]
    return SuiteRun(suite.name, artifact, results, payload)


def _rule_result(suite: Suite, r: dict[str, Any], ids: list[str], n_rows: int) -> RuleResult:
    rule = suite.rules[int(r["expectation_config"]["meta"]["rule"])]
    info = r.get("exception_info") or {}
    if info.get("raised_exception"):
        msg = str(info.get("exception_message") or "error").splitlines()[0]
        return RuleResult(rule, False, n_rows, n_rows, [], error=msg[:200])
    res = r.get("result") or {}
    failed = int(res.get("unexpected_count") or 0)
    checked = int(res.get("element_count") or n_rows)
    if not r["success"] and not failed:  # table-level expectations fail as a whole
        failed, checked = 1, 1
        observed = res.get("observed_value")
        return RuleResult(rule, False, checked, failed, [f"observed {observed}"])
    return RuleResult(rule, bool(r["success"]), checked, failed, _row_names(res, ids))


def _row_names(res: dict[str, Any], ids: list[str]) -> list[str]:
    rows = res.get("partial_unexpected_index_list") or []
    names = []
    for row in rows:
        if isinstance(row, dict) and ids:
            names.append("/".join(str(row.get(c)) for c in ids if c in row))
        else:
            names.append(str(row))
    if not names:
        names = [json.dumps(v, default=str) for v in res.get("partial_unexpected_list") or []]
    return list(dict.fromkeys(names))  # a row named twice (pair expectations) counts once


def _jsonable(obj: Any) -> Any:
    """GX results hold numpy scalars; MLflow's log_dict needs plain JSON."""
    return json.loads(json.dumps(obj, default=_plain))


def _plain(v: Any) -> Any:
    try:
        return v.item()  # numpy scalar
    except (AttributeError, ValueError):
        return str(v)


# ---------------------------------------------------------------- outcome of a check


@dataclass
class CheckOutcome:
    """What one check found: rubric items, error codes, and its GX results as JSON."""

    name: str
    stage: str
    items: list[RubricItem] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def skipped(cls, name: str, stage: str, items: tuple[str, ...], why: str) -> CheckOutcome:
        """Input missing or invalid: items score 0, no code (the presence code covers it)."""
        return cls(
            name,
            stage,
            [RubricItem(name=i, score=0.0, reason=why) for i in items],
            [],
            {"success": None, "skipped": why},
        )

    def add_item(self, name: str, score: float | bool, reason: str) -> None:
        self.items.append(
            RubricItem(name=name, score=max(0.0, min(1.0, float(score))), reason=reason)
        )

    def add_runs(self, *runs: SuiteRun, note: dict[str, str] | None = None) -> CheckOutcome:
        """Score one item per rule group and add one finding per failed rule."""
        note = note or {}
        by_item: dict[str, list[tuple[SuiteRun, RuleResult]]] = {}
        for run in runs:
            for rr in run.results:
                by_item.setdefault(rr.rule.item, []).append((run, rr))
            self.result.setdefault("suites", {})[run.name] = run.gx
        for item, pairs in by_item.items():
            failed = [(run, rr) for run, rr in pairs if not rr.success]
            score = min((_score(rr) for _, rr in pairs), default=1.0)
            reason = (
                "; ".join(rr.message(run.artifact) for run, rr in failed)
                if failed
                else "all pass: " + "; ".join(rr.rule.what for _, rr in pairs)
            )
            if item in note:
                reason += f" ({note[item]})"
            self.add_item(item, score, reason)
            for run, rr in failed:
                self.findings.append(Finding.of(rr.rule.code, rr.message(run.artifact)))
        self.result["success"] = all(r.success for r in runs) and not self.findings
        return self


def _score(rr: RuleResult) -> float:
    if rr.success:
        return 1.0
    if rr.rule.partial and not rr.error and rr.checked:
        return 1.0 - rr.failed / rr.checked
    return 0.0
