"""Every fault agent through the real `medgate run` + `medgate gate`: each fails with its code.

One shared working directory: the task data and the fault agents' cached clean run are built
once; every fault is still its own `medgate run` process. The catch-rate table is printed and
written to benchmarks/results/catch_rate.json when the module finishes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

from gate.errors import is_critical
from tests.conftest import ROOT, medgate

sys.path.insert(0, str(ROOT / "agents" / "faulty"))
from faults import FAULTS

pytestmark = pytest.mark.e2e
BASE = ["task=seg_phantom_tiny", "budget=ci", "progress=off"]
# The control: the same cached reference run as every fault, with no fault committed.
CLEAN = ["agent=faulty_none"]
RESULTS = ROOT / "benchmarks" / "results" / "catch_rate.json"
TABLE: dict[str, dict] = {}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("faults")
    yield path
    if TABLE:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(summary(TABLE), indent=2) + "\n")
        print("\n" + render(TABLE))


def summary(table: dict[str, dict]) -> dict:
    faults = {k: v for k, v in table.items() if k != "clean"}
    clean = {k: v for k, v in table.items() if k == "clean"}
    return {
        "faults_caught": sum(v["caught"] for v in faults.values()),
        "faults_run": len(faults),
        "clean_passed": sum(v["caught"] for v in clean.values()),
        "clean_run": len(clean),
        "runs": table,
    }


def render(table: dict[str, dict]) -> str:
    s = summary(table)
    lines = [f"{'fault':<22}{'expected':<24}{'verdict':<8}codes"]
    for name, v in table.items():
        lines.append(f"{name:<22}{v['expect']:<24}{v['verdict']:<8}{','.join(v['codes']) or '-'}")
    lines.append(
        f"faults caught {s['faults_caught']}/{s['faults_run']}, "
        f"clean runs passed {s['clean_passed']}/{s['clean_run']}"
    )
    return "\n".join(lines)


def _last_record(workdir: Path, agent: str) -> dict:
    paths = sorted(workdir.glob(f".medgate/runs/*-{agent}-*/evaluation.json"))
    assert paths, f"no evaluation.json for {agent}"
    return json.loads(paths[-1].read_text())


def _run_and_gate(workdir: Path, agent_args: list[str], extra: list[str] = ()) -> tuple[int, str]:
    run = medgate(workdir, "run", *BASE, *agent_args, *extra)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    gate = medgate(workdir, "gate")
    return gate.returncode, gate.stdout


def test_clean_reference_agent_passes_with_no_code(workdir):
    rc, out = _run_and_gate(workdir, CLEAN)
    record = _last_record(workdir, "faulty_none")
    codes = sorted({f["code"] for f in record["findings"]})
    TABLE["clean"] = {
        "expect": "PASS",
        "verdict": record["verdict"],
        "codes": codes,
        "caught": rc == 0 and not codes,
    }
    assert codes == [], [f["message"] for f in record["findings"]]
    assert rc == 0, out
    client = MlflowClient(f"sqlite:///{workdir}/mlflow.db")
    parent = client.get_run(record["mlflow_run_id"])
    assert parent.data.tags["medgate.error_codes"] == "none"
    assert parent.data.metrics["codes.count"] == 0
    children = client.search_runs(
        [parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'"
    )
    logged = {
        c.info.run_name: {a.path for a in client.list_artifacts(c.info.run_id, "checks")}
        for c in children
    }
    assert "checks/leakage.json" in logged["validate"]
    assert "checks/claims.json" in logged["validate"]
    assert "checks/submission.json" in logged["submit"]
    assert "checks/traceability.json" in logged["submit"]
    assert "checks/predictions.json" in logged["inference"]
    assert "checks/plan_direction.json" in logged["plan"]


@pytest.mark.parametrize("name", list(FAULTS))
def test_fault_agent_fails_with_its_code(workdir, name):
    fault = FAULTS[name]
    extra = ["budget.wall_clock_s=8"] if name == "timeout" else []
    rc, out = _run_and_gate(workdir, [f"agent=faulty_{name}"], extra)
    record = _last_record(workdir, f"faulty_{name}")
    codes = sorted({f["code"] for f in record["findings"]})
    unrelated = [c for c in codes if is_critical(c) and c not in (fault.expect, *fault.also)]
    TABLE[name] = {
        "expect": fault.expect,
        "verdict": record["verdict"],
        "codes": codes,
        "caught": rc == 1 and fault.expect in codes and not unrelated,
    }
    assert fault.expect in codes, [f["message"] for f in record["findings"]]
    assert not unrelated, [f["message"] for f in record["findings"]]
    assert rc == 1 and "FAIL" in out
    client = MlflowClient(f"sqlite:///{workdir}/mlflow.db")
    parent = client.get_run(record["mlflow_run_id"])
    assert fault.expect in parent.data.tags["medgate.error_codes"].split(",")
    assert parent.data.metrics["codes.critical"] >= 1
    assert parent.data.metrics.get(f"code.{fault.expect}") == 1.0
    finding = next(f for f in record["findings"] if f["code"] == fault.expect)
    assert "Fix:" in finding["message"] or finding["code"].startswith("RUN-")
