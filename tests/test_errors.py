"""The error-code table: closed, well-formed, and documented by the generated doc."""

import re

import pytest

from gate.errors import ERROR_CODES, RootCause, Severity, is_critical, lookup
from gate.record import Finding
from tools.gen_error_codes import DOC, main, render

STAGES = {"plan", "setup", "validate", "inference", "submit", "run"}
PREFIX = {
    "plan": "PLAN",
    "setup": "SETUP",
    "validate": "VALID",
    "inference": "INFER",
    "submit": "SUBMIT",
    "run": "RUN",
}


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
def test_every_code_is_stage_kind_with_a_stage_cause_severity_and_fix(code):
    e = ERROR_CODES[code]
    assert re.fullmatch(r"[A-Z]+(-[A-Z]+)+", code)
    assert e.stage in STAGES and code.startswith(PREFIX[e.stage] + "-")
    assert isinstance(e.cause, RootCause) and isinstance(e.severity, Severity)
    assert e.description.endswith(".") and e.fix.endswith(".")


def test_unknown_code_is_a_gate_bug_not_a_silent_default():
    with pytest.raises(KeyError, match=r"not in gate/errors\.py"):
        lookup("VALID-NOPE")
    with pytest.raises(KeyError):
        Finding.of("VALID-NOPE", "x")


def test_leaks_and_unreproducible_claims_are_critical():
    for code in (
        "VALID-LEAK-PATIENT",
        "VALID-LEAK-TEST",
        "VALID-CLAIM-MISMATCH",
        "VALID-DIRECTION",
        "SUBMIT-SCHEMA",
        "SUBMIT-CHECKSUM",
        "RUN-CRASH",
    ):
        assert is_critical(code)
    assert not is_critical("VALID-LEAK-DUPLICATE")


def test_committed_doc_is_up_to_date():
    assert DOC.read_text() == render(), "run: python tools/gen_error_codes.py"
    assert main(["--check"]) == 0
    for code in ERROR_CODES:
        assert f"`{code}`" in DOC.read_text()
