"""The conventions the analyst's statistics and the fact-checker's recomputation share."""

from __future__ import annotations

import numpy as np

from kimmy_swarm.agents.tools.conventions import AnalysisError, group_key, level_name
from kimmy_swarm.swarm.errors import UserError


def test_group_keys_name_codes_as_written() -> None:
    assert [group_key(v) for v in (2, np.int64(2), 2.0, np.float64(0.5), "b", True)] == [
        "2", "2", "2", "0.5", "b", "True",
    ]  # fmt: skip


def test_level_names_write_whole_classes_as_integers() -> None:
    assert [level_name(v) for v in (2.0, np.float64(0.0), 0.5, -1.0)] == ["2", "0", "0.5", "-1"]


def test_analysis_errors_are_user_errors() -> None:
    # bad input to a statistic: the CLI reports it in one line, and a verdict says it
    assert issubclass(AnalysisError, UserError)
