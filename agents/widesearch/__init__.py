"""A WideSearch-style wide task over the ICLR 2017 paper corpus: task, answers, grader.

- `task`: `WideTask` (a condition on papers and the columns to report), its goal in words
  and its ground truth; `WIDE_TASKS` presets; `Paper` and `load_papers`.
- `answer`: a Markdown table or JSON rows parsed into rows; cell normalization.
- `grader`: item-level precision / recall / F1 and cell accuracy; `WideGrader`.
- `suite`: `WIDE_SUITE`, goals in words with their tasks (the wide-task benchmark's goals).
- `goal_reader`: `read_wide_goal`, a goal in words read into a `WideTask` offline (or
  refused, naming what it did not understand).
- `extract`: the `extractor` role's offline procedure and the serial baseline.
- `pipeline`: the wide search as a `Pipeline` (`WIDESEARCH`): `WideRules`, the
  orchestrator's offline plan of a wide task, and its grader for a run.
"""

from kimmy_swarm.agents.widesearch.answer import (
    normalize_cell,
    parse_answer,
    rows_markdown,
    title_key,
)
from kimmy_swarm.agents.widesearch.extract import (
    ExtractedRows,
    extract_rows,
    extractor_role,
    serial_rows,
    wide_toolbox,
)
from kimmy_swarm.agents.widesearch.goal_reader import (
    GoalNotUnderstood,
    asks_for_table,
    read_wide_goal,
)
from kimmy_swarm.agents.widesearch.grader import (
    WideGrader,
    WideScore,
    final_answer,
    grade_answer,
    score_rows,
)
from kimmy_swarm.agents.widesearch.suite import WIDE_SUITE, SuiteGoal, suite_goal_of
from kimmy_swarm.agents.widesearch.task import (
    ICLR_DEFAULTS,
    WIDE_TASKS,
    Column,
    FieldFilter,
    Paper,
    Row,
    WideTask,
    load_papers,
)

__all__ = [
    "ICLR_DEFAULTS",
    "WIDE_SUITE",
    "WIDE_TASKS",
    "Column",
    "ExtractedRows",
    "FieldFilter",
    "GoalNotUnderstood",
    "Paper",
    "Row",
    "SuiteGoal",
    "WideGrader",
    "WideScore",
    "WideTask",
    "asks_for_table",
    "extract_rows",
    "extractor_role",
    "final_answer",
    "grade_answer",
    "load_papers",
    "normalize_cell",
    "parse_answer",
    "read_wide_goal",
    "rows_markdown",
    "score_rows",
    "serial_rows",
    "suite_goal_of",
    "title_key",
    "wide_toolbox",
]
