"""End to end through the real `medgate` command, the real agents and MLflow's SQLite store."""

import json
import shutil
from pathlib import Path

import psutil
import pytest
from mlflow import MlflowClient

from gate.config import conf_dir
from tests.conftest import medgate

pytestmark = pytest.mark.e2e
STAGES = ["plan", "setup", "validate", "inference", "submit"]
QUICK = ["task=seg_phantom_tiny", "agent=monai_unet_quick", "budget=ci"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("e2e")


def _records(workdir: Path, agent: str) -> list[dict]:
    paths = sorted(workdir.glob(f".medgate/runs/*-{agent}-*/evaluation.json"))
    return [json.loads(p.read_text()) for p in paths]


def test_reference_agent_passes_with_one_parent_and_five_stage_runs(workdir):
    run = medgate(workdir, "run", *QUICK)
    assert run.returncode == 0, run.stdout + run.stderr
    gate = medgate(workdir, "gate")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert gate.stdout.startswith("medgate: PASS")
    assert "mlflow ui --backend-store-uri" in gate.stdout

    client = MlflowClient(f"sqlite:///{workdir}/mlflow.db")
    exp = client.get_experiment_by_name("medgate")
    parents = client.search_runs([exp.experiment_id], "tags.`medgate.kind` = 'parent'")
    assert len(parents) == 1
    parent = parents[0]
    assert parent.info.run_name == "seg_phantom_tiny/monai_unet_quick/lite"
    assert parent.data.tags["medgate.verdict"] == "pass"
    assert parent.data.tags["medgate.error_codes"] == "none"
    for key in ["score.overall", "score.workflow", "outcome.dice", "cost.wall_s",
                *[f"stage.{s}.score" for s in STAGES]]:
        assert key in parent.data.metrics, key
    assert parent.data.params["agent.name"] == "monai_unet_quick"
    children = client.search_runs(
        [exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert sorted(c.info.run_name for c in children) == sorted(STAGES)
    assert all(c.data.tags["mlflow.parentRunId"] == parent.info.run_id for c in children)
    assert all(f"stage.{c.info.run_name}.score" in c.data.metrics for c in children)
    top = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"evaluation.json", "cases.json", "logs", "workspace"} <= top
    submit = next(c for c in children if c.info.run_name == "submit")
    assert "workspace" in {a.path for a in client.list_artifacts(submit.info.run_id)}
    assert parent.info.status == "FINISHED"


def test_same_seed_gives_identical_scores(workdir):
    run = medgate(workdir, "run", *QUICK)
    assert run.returncode == 0, run.stderr
    first, second = _records(workdir, "monai_unet_quick")[-2:]
    assert [s["score"] for s in first["stages"]] == [s["score"] for s in second["stages"]]
    assert first["outcome"] == second["outcome"]
    assert first["workflow_score"] == second["workflow_score"]


@pytest.mark.parametrize("agent, extra, code", [
    ("crasher", [], "RUN-CRASH"),
    ("sleeper", ["budget.wall_clock_s=4"], "RUN-TIMEOUT"),
])
def test_failing_agent_is_logged_evaluated_and_fails(workdir, agent, extra, code):
    run = medgate(workdir, "run", "task=seg_phantom_tiny", f"agent={agent}", "budget=ci", *extra)
    assert run.returncode == 0, run.stderr
    gate = medgate(workdir, "gate")
    assert gate.returncode == 1, gate.stdout
    assert code in gate.stdout
    record = _records(workdir, agent)[-1]
    assert code in {f["code"] for f in record["findings"]}
    assert record["verdict"] == "fail"
    ws = record["workspace"]
    assert not [p for p in psutil.process_iter(["cwd"]) if (p.info["cwd"] or "").startswith(ws)]
    client = MlflowClient(f"sqlite:///{workdir}/mlflow.db")
    run_info = client.get_run(record["mlflow_run_id"])
    assert run_info.data.tags["medgate.verdict"] == "fail"
    assert code in run_info.data.tags["medgate.error_codes"]
    logs = {a.path for a in client.list_artifacts(record["mlflow_run_id"], "logs")}
    assert "logs/agent.stderr.log" in logs


def test_multirun_sweeps_seeds_and_the_gate_judges_them_all(workdir):
    run = medgate(workdir, "run", "-m", "task=seg_phantom_tiny", "agent=crasher", "budget=ci",
                  "seed=0,1")
    assert run.returncode == 0, run.stderr
    gate = medgate(workdir, "gate")
    assert gate.returncode == 1
    assert "2 runs judged" in gate.stdout


def test_gate_with_no_runs_cannot_decide(tmp_path):
    gate = medgate(tmp_path, "gate")
    assert gate.returncode == 2
    assert "no runs" in gate.stderr + gate.stdout


def test_gate_with_unreachable_tracking_store_cannot_decide(tmp_path):
    gate = medgate(tmp_path, "gate", "tracking=server", "--invocation", "x",
                   env={"MLFLOW_TRACKING_URI": "http://127.0.0.1:9",
                        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
                        "MLFLOW_HTTP_REQUEST_TIMEOUT": "3"})
    assert gate.returncode == 2
    assert "unreachable" in gate.stderr or "cannot" in gate.stderr


def test_agent_that_writes_into_the_task_data_is_caught(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(conf_dir(), conf)
    code = ("import pathlib; p = pathlib.Path('data/../hidden/labelsTs/planted.txt'); "
            "p.write_text('x'); print('wrote', p)")
    (conf / "agent" / "tamper.yaml").write_text(
        "defaults:\n  - agent_schema\n  - _self_\nname: tamper\n"
        f"command: ['{{python}}', '-c', \"{code}\"]\n")
    env = {"MEDGATE_CONF_DIR": str(conf)}
    run = medgate(tmp_path, "run", "task=seg_phantom_tiny", "agent=tamper", "budget=ci", env=env)
    assert run.returncode == 0, run.stderr
    (record,) = _records(tmp_path, "tamper")
    assert "wrote" in Path(record["process"]["stdout_log"]).read_text()
    assert "RUN-SANDBOX" in {f["code"] for f in record["findings"]}
    assert record["verdict"] == "fail"
    assert not list(tmp_path.glob(".medgate/cache/seg_phantom_tiny-*/hidden/labelsTs/planted.txt"))
