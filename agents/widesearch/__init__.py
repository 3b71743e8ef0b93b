"""A WideSearch-style wide task over the ICLR 2017 paper corpus: task, answers, grader.

- `task`: `WideTask` (a condition on papers and the columns to report), its goal in words
  and its ground truth; `WIDE_TASKS` presets; `Paper` and `load_papers`.
- `answer`: a Markdown table or JSON rows parsed into rows; cell normalization.
- `grader`: item-level precision / recall / F1 and cell accuracy; `WideGrader`.
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
from kimmy_swarm.agents.widesearch.grader import (
    WideGrader,
    WideScore,
    final_answer,
    grade_answer,
    score_rows,
)
from kimmy_swarm.agents.widesearch.task import (
    ICLR_DEFAULTS,
    WIDE_TASKS,
    Column,
    Paper,
    Row,
    WideTask,
    load_papers,
)

__all__ = [
    "ICLR_DEFAULTS",
    "WIDE_TASKS",
    "Column",
    "ExtractedRows",
    "Paper",
    "Row",
    "WideGrader",
    "WideScore",
    "WideTask",
    "extract_rows",
    "extractor_role",
    "final_answer",
    "grade_answer",
    "load_papers",
    "normalize_cell",
    "parse_answer",
    "rows_markdown",
    "score_rows",
    "serial_rows",
    "title_key",
    "wide_toolbox",
]
