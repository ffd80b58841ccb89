"""The ``medgate`` command. Exit codes: 0 pass, 1 fail, 2 could not decide (bad config, no runs,
tracking store unreachable).

    medgate run [HYDRA OVERRIDES…]     run agents on tasks (``-m`` sweeps), evaluate, log to MLflow
    medgate gate [OVERRIDES…] [--run-id ID]… [--filter F] [--report FILE]   judge runs
    medgate baseline promote RUN_ID… [--set tracking=server]      tag runs as the baseline
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import traceback
import uuid
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from gate.config import RunConfig, conf_dir, register_configs
from gate.errors import ConfigError, MedgateError, TrackingError
from gate.pipeline import INVOCATION_ENV

LAST_INVOCATION = "last_invocation"


def _run(overrides: list[str]) -> int:
    import hydra

    from gate.pipeline import execute

    register_configs()
    os.environ.setdefault(INVOCATION_ENV, uuid.uuid4().hex[:12])
    state: dict[str, Any] = {"entered": False, "exit": 0}

    @hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")
    def job(raw: DictConfig) -> None:
        state["entered"] = True
        try:
            cfg = _to_run_config(raw)
            marker = Path(cfg.workdir) / LAST_INVOCATION
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(os.environ[INVOCATION_ENV])
            record = execute(cfg, raw)
        except (ConfigError, TrackingError) as exc:
            print(f"medgate: {exc}", file=sys.stderr)
            state["exit"] = 2
            return
        print(
            f"[medgate] {record.name} seed={record.seed}: {record.verdict.upper()} "
            f"overall={record.overall_score:.3f} workflow={record.workflow_score:.3f} "
            f"outcome={record.outcome.value if record.outcome else float('nan'):.3f} "
            f"codes={','.join(record.codes) or 'none'} (mlflow run {record.mlflow_run_id})",
            flush=True,
        )

    sys.argv = ["medgate run", *overrides]
    try:
        job()
    except SystemExit as exc:
        if exc.code not in (0, None) and not state["entered"]:
            print(
                "medgate: the configuration above could not be composed (file and key named "
                "above); fix the YAML under conf/ or the override.",
                file=sys.stderr,
            )
            return 2
        return int(exc.code or 0)
    return int(state["exit"])


def _to_run_config(raw: DictConfig) -> RunConfig:
    try:
        cfg: RunConfig = OmegaConf.to_object(raw)  # type: ignore[assignment]
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", "") or "?"
        group = key.split(".")[0]
        raise ConfigError(
            f"conf/{group}/<option>.yaml or an override",
            key,
            str(exc).splitlines()[0],
            "set the key to a valid value",
        ) from None
    _check_names(cfg)
    return cfg


def _check_names(cfg: RunConfig) -> None:
    """Names that point into registries fail here, before any agent runs."""
    from checks import CHECKS
    from gate.metrics import METRICS
    from gate.registry import Registry, UnknownNameError
    from gate.tasks import TASKS

    lookups: list[tuple[Registry[Any], str, list[str]]] = [
        (TASKS, "family", [cfg.task.family]),
        (METRICS, "metric", [cfg.task.metric]),
        (CHECKS, "checks", list(cfg.task.checks)),
    ]
    for registry, key, names in lookups:
        for name in names:
            if name in registry:  # membership only: importing every check here would be slow
                continue
            try:
                registry.get(name)
            except UnknownNameError as exc:
                raise ConfigError(
                    f"conf/task/{cfg.task.name}.yaml",
                    f"task.{key}",
                    str(exc),
                    "use one of the known names",
                ) from None


def compose(overrides: list[str]) -> RunConfig:
    """Compose the same configuration ``medgate run`` would, without running anything."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException

    register_configs()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            raw = hydra_compose("config", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(
            "conf/", "composition", str(exc).replace("\n", " "), "fix the named file or override"
        ) from None
    return _to_run_config(raw)


def _gate(args: argparse.Namespace) -> int:
    from gate import baseline, report, tracking
    from gate.verdict import judge, key_of

    cfg = compose(args.overrides)
    runs = _select_runs(args, cfg)
    if runs is None:
        return 2
    records, unreadable = [], []
    for run in runs:
        rec = tracking.load_record(cfg.tracking, run)
        if rec is None:
            unreadable.append(run.info.run_id)
        else:
            records.append(rec)
    baselines = {}
    if cfg.policy.regression.enabled and records:
        keys = sorted({key_of(r) for r in records})
        baselines = baseline.select(
            cfg.tracking,
            cfg.policy.baseline,
            keys,
            exclude={r.info.run_id for r in runs},
            data_keys={key_of(r): r.data_key for r in records},
        )
    verdict = judge(records, cfg.policy, baselines, unreadable)
    print(report.render_text(verdict))
    figure = None
    if args.report:
        path = Path(args.report)
        fig = report.stage_figure(verdict, path.with_suffix(".stages.png")) if records else None
        figure = fig.name if fig else None
        path.write_text(report.render_markdown(verdict, cfg.tracking.ui_url, figure))
        print(f"\nreport written to {path}" + (f" (figure {fig})" if fig else ""))
    _publish(verdict, report.render_markdown(verdict, cfg.tracking.ui_url), args)
    uri = cfg.tracking.uri or tracking.client(cfg.tracking).tracking_uri
    print(f"\nsee the runs in the MLflow UI: mlflow ui --backend-store-uri {shlex.quote(uri)}")
    return verdict.exit_code


def _select_runs(args: argparse.Namespace, cfg: RunConfig) -> list[Any] | None:
    from gate import tracking

    if args.run_id:
        return [tracking.get_run(cfg.tracking, rid) for rid in args.run_id]
    filt = args.filter
    if filt is None:
        invocation = args.invocation or _last_invocation(cfg)
        if invocation is None:
            print(
                "medgate: no runs to judge: no `medgate run` recorded in "
                f"{cfg.workdir}/{LAST_INVOCATION}; pass --invocation, --run-id or --filter",
                file=sys.stderr,
            )
            return None
        filt = f"tags.`medgate.invocation` = '{invocation}'"
    return tracking.search_runs(cfg.tracking, filt)


def _publish(verdict: Any, markdown: str, args: argparse.Namespace) -> None:
    """GitHub Actions outputs and the pull-request report; never changes the exit code."""
    from gate import actions, github
    from gate.report import summary_line

    actions.write_step_summary(markdown)
    actions.set_output("verdict", verdict.decision)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        actions.annotate_errors([str(r) for r in verdict.reasons if r.effect != "notice"])
    try:
        target, why = github.resolve_target(os.environ, repo=args.repo, pr=args.pr, sha=args.sha)
        if target is None:
            print(f"notice: {why}")
            return
        result = github.publish(
            target,
            passed=verdict.passed,
            undecided=verdict.decision == "undecided",
            title=summary_line(verdict),
            body_markdown=markdown,
            details_url=github.run_url_from_env(os.environ),
        )
        print(result.summary())
    except github.GitHubPublishError as exc:
        print(f"::warning title=medgate::could not report to GitHub: {exc}")


def _baseline(args: argparse.Namespace) -> int:
    from gate import baseline

    cfg = compose(args.overrides)
    try:
        done = baseline.promote(cfg.tracking, args.run_ids)
    except ValueError as exc:
        print(f"medgate: {exc}", file=sys.stderr)
        return 2
    for run_id, key in done:
        print(f"run {run_id} is now the baseline of {key}")
    return 0


def _last_invocation(cfg: RunConfig) -> str | None:
    # no guessing from the store: the newest run there may be someone else's (shared servers)
    marker = Path(cfg.workdir) / LAST_INVOCATION
    return marker.read_text().strip() if marker.is_file() else None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="medgate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "run", help="run agents on tasks (Hydra overrides follow; -m sweeps)", add_help=False
    )
    g = sub.add_parser("gate", help="judge runs against a policy; exit 0 pass, 1 fail, 2 undecided")
    g.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. policy=default")
    g.add_argument("--run-id", action="append", help="judge this MLflow run (repeatable)")
    g.add_argument("--filter", help="MLflow filter string selecting the parent runs to judge")
    g.add_argument("--invocation", help="judge the runs of this `medgate run` invocation id")
    g.add_argument("--report", help="also write the Markdown report to this file")
    g.add_argument(
        "--repo", help="owner/name for the pull-request report (default: GITHUB_REPOSITORY)"
    )
    g.add_argument("--pr", type=int, help="pull request number (default: from the Actions event)")
    g.add_argument("--sha", help="commit for the status (default: the PR head or GITHUB_SHA)")
    b = sub.add_parser("baseline", help="manage baseline runs")
    b.add_argument("action", choices=["promote"])
    b.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="MLflow parent run ids")
    b.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        help="Hydra override, e.g. --set tracking=server",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        return _run(argv[1:])
    args = _parser().parse_args(argv)
    # a tracking server that is down should be reported in seconds, not after minutes of retries
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
    try:
        return _baseline(args) if args.command == "baseline" else _gate(args)
    except (ConfigError, TrackingError) as exc:
        print(f"medgate: {exc}", file=sys.stderr)
        return 2
    except MedgateError as exc:
        print(f"medgate: {exc}", file=sys.stderr)
        return 2
    except Exception:  # a bug of the gate: it could not decide, which is never a pass or a fail
        traceback.print_exc()
        print("medgate: internal error (above); the verdict could not be decided", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
