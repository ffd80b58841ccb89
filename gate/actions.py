"""GitHub Actions outputs: the job summary, error annotations and step outputs.

Each function reads the environment it is given (``os.environ`` by default) and does nothing
outside Actions, so the CLI can call them unconditionally.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

ANNOTATION_TITLE = "medgate"


def write_step_summary(markdown: str, environ: Mapping[str, str] | None = None) -> bool:
    """Append Markdown to the job summary ($GITHUB_STEP_SUMMARY); False outside Actions."""
    path = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    # Append: other steps of the job write to the same file.
    with Path(path).open("a", encoding="utf-8") as f:
        f.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return True


def annotate_errors(
    reasons: list[str], stream: TextIO | None = None, title: str = ANNOTATION_TITLE
) -> None:
    """Print one ``::error`` workflow command per failing reason (shown on the run and the PR)."""
    out = sys.stdout if stream is None else stream
    for reason in reasons:
        out.write(f"::error title={escape_property(title)}::{escape_data(reason)}\n")
    out.flush()


def set_output(name: str, value: str, environ: Mapping[str, str] | None = None) -> bool:
    """Append a step output to $GITHUB_OUTPUT; False outside Actions.

    A multi-line value uses the heredoc form with a random delimiter, as actions/toolkit does,
    so a value cannot end the block early.
    """
    if not name or any(c in name for c in "=\r\n") or name.strip() != name:
        raise ValueError(
            f"output name {name!r} must be non-empty, without '=', newlines or surrounding spaces"
        )
    path = (os.environ if environ is None else environ).get("GITHUB_OUTPUT")
    if not path:
        return False
    if "\n" in value or "\r" in value:
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        entry = f"{name}<<{delimiter}\n{value}\n{delimiter}\n"
    else:
        entry = f"{name}={value}\n"
    with Path(path).open("a", encoding="utf-8") as f:
        f.write(entry)
    return True


def escape_data(text: str) -> str:
    """Escape a workflow command's message: %, CR and LF (actions/toolkit escapeData)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value: also ':' and ',' (escapeProperty)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
