"""Custom Great Expectations for rules GX 1.x has no built-in expectation for (pandas only).

Kept small on purpose: each is one row-wise condition; GX supplies the counting, the unexpected
rows and the result JSON.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from great_expectations.execution_engine import PandasExecutionEngine
from great_expectations.expectations.expectation import (
    ColumnMapExpectation,
    MulticolumnMapExpectation,
)
from great_expectations.expectations.metrics.map_metric_provider import (
    ColumnMapMetricProvider,
    MulticolumnMapMetricProvider,
    column_condition_partial,
)
from great_expectations.expectations.metrics.map_metric_provider.multicolumn_condition_partial import (  # noqa: E501
    multicolumn_condition_partial,
)

_DOMAIN_KEYS = (
    "batch_id",
    "table",
    "column_list",
    "row_condition",
    "condition_parser",
    "ignore_row_if",
)


class OneValuePerGroup(MulticolumnMapMetricProvider):
    """Rows whose group (first column) holds a single distinct value of the second column."""

    condition_metric_name = "medgate.multicolumn_values.one_per_group"
    condition_domain_keys = _DOMAIN_KEYS

    @multicolumn_condition_partial(engine=PandasExecutionEngine)
    def _pandas(cls, column_list: pd.DataFrame, **kwargs: Any) -> pd.Series:
        group, value = column_list.columns[0], column_list.columns[1]
        return column_list.groupby(group)[value].transform("nunique") <= 1


class ExpectColumnValuesToBeOnePerGroup(MulticolumnMapExpectation):
    """Expect ``column_list[1]`` to take one value within each group of ``column_list[0]``.

    e.g. ``[patient_id, fold]``: every patient in exactly one fold.
    """

    map_metric = "medgate.multicolumn_values.one_per_group"


class FiniteValues(ColumnMapMetricProvider):
    condition_metric_name = "medgate.column_values.finite"

    @column_condition_partial(engine=PandasExecutionEngine)
    def _pandas(cls, column: pd.Series, **kwargs: Any) -> pd.Series:
        # Non-numeric text ("nan", "inf", "x") is not a finite number either.
        values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        return pd.Series(np.isfinite(values), index=column.index)


class ExpectColumnValuesToBeFinite(ColumnMapExpectation):
    """Expect every non-null value of the column to be a finite number (no ±inf, no text).

    GX counts NaN as missing and skips it in map expectations, so pair this with
    ``ExpectColumnValuesToNotBeNull`` to reject NaN too.
    """

    map_metric = "medgate.column_values.finite"
