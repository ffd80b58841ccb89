"""Write docs/error-codes.md from gate/errors.py's table (the table is the only source).

python tools/gen_error_codes.py            # rewrite the doc
python tools/gen_error_codes.py --check    # exit 1 when the committed doc is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gate.errors import ERROR_CODES, Severity

DOC = Path(__file__).resolve().parents[1] / "docs" / "error-codes.md"
STAGE_ORDER = ["plan", "setup", "validate", "inference", "submit", "run"]


def render() -> str:
    lines = [
        "# Error codes",
        "",
        "Generated from `gate/errors.py` by `python tools/gen_error_codes.py`; do not edit by "
        "hand. Codes are assigned on every run, good or bad, and never cleared because the score "
        "was good. A **critical** code fails the verdict whatever the score.",
        "",
        "Root causes follow AutoMedBench's families: E1 hallucination, E2 resource, E3 logic, "
        "E4 code, E5 format.",
        "",
    ]
    for stage in STAGE_ORDER:
        codes = [e for e in ERROR_CODES.values() if e.stage == stage]
        if not codes:
            continue
        lines += [
            f"## {stage}",
            "",
            "| code | severity | root cause | what happened | fix |",
            "|---|---|---|---|---|",
        ]
        for e in codes:
            sev = f"**{e.severity.value}**" if e.severity is Severity.CRITICAL else e.severity.value
            lines.append(f"| `{e.code}` | {sev} | {e.cause.value} | {e.description} | {e.fix} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--check", action="store_true", help="fail when the doc is out of date")
    args = p.parse_args(argv)
    text = render()
    if args.check:
        if not DOC.is_file() or DOC.read_text() != text:
            print(f"{DOC} is out of date: run python tools/gen_error_codes.py", file=sys.stderr)
            return 1
        return 0
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)
    print(f"wrote {DOC} ({len(ERROR_CODES)} codes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
