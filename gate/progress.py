"""Shows what a run is doing: the stage reached, time elapsed and budget left.

A live display in a terminal; plain lines (on each stage change, and every ``every_s``) in CI
logs, where a redrawn display would be noise.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import TracebackType

from gate.contract import STAGE_ARTIFACTS, STAGE_LABELS, STAGES


def stage_reached(workspace: Path) -> str:
    reached = "starting"
    for stage in STAGES:
        if any((workspace / rel).exists() for rel in STAGE_ARTIFACTS[stage]):
            reached = STAGE_LABELS[stage]
    return reached


class Progress:
    def __init__(
        self, name: str, workspace: Path, budget_s: float, mode: str = "auto", every_s: float = 30.0
    ) -> None:
        if mode == "auto":
            mode = "rich" if sys.stdout.isatty() else "plain"
        self.name, self.workspace, self.budget_s, self.mode = name, workspace, budget_s, mode
        self.every_s = every_s
        self._last_stage = ""
        self._last_line = 0.0
        self._live = None

    def __enter__(self) -> Progress:
        if self.mode == "rich":
            from rich.live import Live
            from rich.text import Text

            # Text, not a markup string: "[medgate]" would otherwise be read as a style tag
            self._text = Text
            self._live = Live(
                Text(self._render("starting", 0.0)), refresh_per_second=4, transient=True
            )
            self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)

    def _render(self, stage: str, elapsed: float) -> str:
        left = max(0.0, self.budget_s - elapsed)
        return f"[medgate] {self.name}: {stage} | {elapsed:5.0f} s elapsed | {left:5.0f} s left"

    def tick(self, elapsed: float) -> None:
        stage = stage_reached(self.workspace)
        line = self._render(stage, elapsed)
        if self._live is not None:
            self._live.update(self._text(line))
        elif self.mode == "plain":
            now = time.monotonic()
            if stage != self._last_stage or now - self._last_line >= self.every_s:
                print(line, flush=True)
                self._last_line = now
        self._last_stage = stage

    def note(self, message: str) -> None:
        if self.mode != "off":
            print(f"[medgate] {self.name}: {message}", flush=True)
