"""The text of the analysis reports, from an `AnalysisDigest`: numbers with their verdict
marks, each analysis as titled sections of readings and tables, the status lines, and
report.md (`render_markdown`). report.html (`agents.analysis.report_html`) is built from
the same pieces.

Every number is shown with its fact-check verdict: verified numbers plainly with a check
mark, mismatches flagged with the recomputed value, never silently kept.
"""

from __future__ import annotations

from kimmy_swarm.agents.analysis.digest import AnalysisDigest, AnalysisEntry, FindingRecord
from kimmy_swarm.agents.analysis.interpret import FAMILY_NAMES
from kimmy_swarm.agents.analysis.model_step import LEFT_OUT
from kimmy_swarm.agents.analysis.report_groups import group_paragraphs, group_tables
from kimmy_swarm.agents.analysis.report_levels import level_table
from kimmy_swarm.agents.analysis.report_models import diagnostic_tables, model_tables

__all__ = [
    "SECTIONS",
    "SUMMARY_HEADER",
    "Section",
    "Tab",
    "cell",
    "entry_answer",
    "entry_notes",
    "finding_sections",
    "fmt",
    "intro_text",
    "mismatch_lines",
    "model_notes",
    "render_markdown",
    "run_status",
    "section_status",
    "summary_rows",
]

Tab = tuple[str, list[str], list[list[str]]]  # caption, header, rows
_COLUMN_STATS = ("count", "missing", "mean", "median", "std", "min", "max", "skew", "outliers")
_MARK = {"verified": "✔", "unverifiable": "? unverifiable", "unchecked": "(unchecked)"}


def fmt(value: float | None) -> str:
    """A number as shown in the reports (6 significant digits; counts as integers)."""
    if value is None:
        return "—"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


def cell(record: FindingRecord) -> str:
    """A reported number with its verdict mark (mismatches say what the data gives)."""
    if record.verdict == "mismatch":
        return f"⚠ MISMATCH {fmt(record.value)} (recomputed {fmt(record.recomputed)})"
    return f"{fmt(record.value)} {_MARK[record.verdict]}"


def _column_table(recs: list[FindingRecord], placed: set[int]) -> Tab | None:
    by_col: dict[str, dict[str, FindingRecord]] = {}
    for i, r in enumerate(recs):
        if r.statistic in _COLUMN_STATS and r.predictors is None:
            slot = by_col.setdefault(r.columns[0], {})
            if r.statistic not in slot:
                slot[r.statistic] = r
                placed.add(i)
    if not by_col:
        return None
    rows = [[c, *(cell(s[k]) if k in s else "" for k in _COLUMN_STATS)] for c, s in by_col.items()]
    return ("Distributions (non-missing values; outliers beyond 1.5 IQR)",
            ["column", *_COLUMN_STATS], rows)  # fmt: skip


#: The sections of an analysis in the reports, in order: (interpretation key, title).
SECTIONS = (
    ("profile", "Profile"), ("distributions", "Distributions"),
    ("correlations", "Correlations"), ("model", "Model"), ("diagnostics", "Diagnostics"),
    ("groups", "Grouped comparison"), ("other", "Other reported numbers"),
)  # fmt: skip
Section = tuple[str, str, list[Tab]]  # title, reading in words, tables


#: How the correlation table names a measure that is no r (a nominal column's).
_MEASURES = {"eta": "correlation ratio eta (a over b's levels)", "cramers_v": "Cramér's V"}


def _corr_table(recs: list[FindingRecord], placed: set[int]) -> Tab | None:
    rows = []
    for i, r in enumerate(recs):
        # a pair behind a predictor left out of the model is shown with the diagnostics
        if r.statistic == "corr" and r.note != LEFT_OUT:
            placed.add(i)
            rows.append([r.columns[0], r.columns[1], _MEASURES.get(r.method, r.method), cell(r)])
    if not rows:
        return None
    plain = all(r[2] in ("pearson", "spearman", "kendall") for r in rows)
    return ("Strongest correlations", ["a", "b", "method", "r" if plain else "value"], rows)


def finding_sections(entry: AnalysisEntry) -> list[Section]:
    """One analysis as sections — profile, distributions, correlations, model, diagnostics,
    grouped comparison, other numbers — each with its reading and its tables (empty
    sections are left out)."""
    recs = entry.findings
    placed: set[int] = set()
    column_table = _column_table(recs, placed)
    levels = level_table(recs, placed, cell)  # categorical columns: counts per level
    corr_table = _corr_table(recs, placed)
    tables: dict[str, list[Tab]] = {
        "profile": [],
        "distributions": [t for t in (column_table, levels) if t is not None],
        "correlations": [corr_table] if corr_table is not None else [],
        "model": model_tables(recs, placed, cell),
        "diagnostics": diagnostic_tables(recs, placed, cell),
        "groups": group_tables(recs, placed, cell),
    }
    other = [r for i, r in enumerate(recs) if i not in placed]
    tables["other"] = [(
        "Other reported numbers", ["statistic", "columns", "value"],
        [[r.statistic, ", ".join(r.columns), cell(r)] for r in other],
    )] if other else []  # fmt: skip
    out = []
    for key, title in SECTIONS:
        reading = entry.interpretation.get(key, "")
        if reading or tables[key]:
            out.append((title, reading, tables[key]))
    return out


def model_notes(entry: AnalysisEntry) -> list[str]:
    """The model chosen and why, and the analysis's notes (predictors left out, refits)."""
    out = []
    reason, reading = entry.model_reason, entry.interpretation.get("model")
    if reason and reason not in (reading or ""):
        out.append(f"Model choice: {reason}.")
    out.extend(f"Note: {n}" for n in entry.notes)
    return out


def mismatch_lines(entry: AnalysisEntry) -> list[str]:
    """One line per number the fact-checker could not reproduce."""
    return [
        f"MISMATCH: {r.statistic} of {', '.join(r.columns)} reported as {fmt(r.value)}, "
        f"but the data gives {fmt(r.recomputed)} — do not use this number"
        for r in entry.findings
        if r.verdict == "mismatch"
    ]


def section_status(entry: AnalysisEntry) -> str:
    """`error` for a failed analysis, `warning` for partial work or flagged numbers."""
    if entry.status == "failed":
        return "error"
    counts = entry.counts
    flagged = counts.mismatch or counts.unverifiable or counts.unchecked
    return "warning" if entry.status == "partial" or flagged else "ok"


def run_status(digest: AnalysisDigest) -> str:
    """The whole run's badge: `ok` only when no analysis is partial, failed or flagged and
    the run has no problems (a partial run's summary is no `ok`)."""
    flagged = digest.problems or any(section_status(e) != "ok" for e in digest.analyses)
    return "warning" if flagged else "ok"


def entry_notes(entry: AnalysisEntry) -> list[str]:
    """The status lines of one analysis: unanswered question, partial work, problems."""
    notes = []
    if entry.status == "failed":
        notes.append("The analysis failed; nothing was reported.")
    elif not entry.applicable:
        notes.append(f"Not applicable: {entry.reason}")
    elif not entry.answered:
        notes.append(f"Question not answered: {entry.reason}")
    elif entry.status == "partial" and entry.reason:
        notes.append(f"Partial analysis: {entry.reason}")
    notes.extend(f"Problem: {p}" for p in entry.problems if p not in entry.reason)
    return notes


def entry_answer(entry: AnalysisEntry) -> str:
    """One analysis's answer in one line, as report.md gives it first: the direct answer to
    the question (a grouped comparison), else the summary; or why there is none."""
    if entry.status == "failed":
        text = "failed: " + (entry.problems[0] if entry.problems else "nothing was reported")
    elif not entry.applicable:
        text = f"not applicable: {entry.reason}"
    elif not entry.answered:
        text = f"not answered: {entry.reason}"
    else:
        text = entry.interpretation.get("question") or entry.summary or "(no summary)"
    return " ".join(text.split())


_FIT_NAMES = {"r2": "R²", "pseudo_r2": "pseudo-R²"}
SUMMARY_HEADER = [
    "dataset", "question", "rows", "target", "model", "fit", "strongest correlation",
    "verified / total",
]  # fmt: skip


def summary_rows(digest: AnalysisDigest) -> list[list[str]]:
    """dataset, question, rows, target, model, fit, strongest correlation, verified / total."""
    rows = []
    for e in digest.analyses:
        sc = e.strongest_corr
        corr = f"{sc.a} ~ {sc.b}: {fmt(sc.r)}" if sc else "—"
        shown = f"{_FIT_NAMES[e.fit.statistic]} {fmt(e.fit.value)}" if e.fit else "—"
        rows.append([
            e.dataset, e.question, fmt(e.rows), e.target or "—",
            FAMILY_NAMES.get(e.model or "", "—"), shown, corr,
            f"{e.counts.verified} / {e.total}",
        ])  # fmt: skip
    return rows


def intro_text(digest: AnalysisDigest) -> str:
    """A one-paragraph overview: analyses, numbers, and how many the data reproduced."""
    t = digest.totals
    text = (
        f"{t.analyses} analyses of {len(digest.datasets)} dataset(s) ran in parallel. "
        f"They reported {t.findings} numbers; the fact-checkers recomputed each from the raw "
        f"data: {t.verified} verified, {t.mismatch} mismatched, "
        f"{t.unverifiable} unverifiable, {t.unchecked} unchecked."
    )
    failed = sum(e.status == "failed" for e in digest.analyses)
    if failed:
        text += f" {failed} of the analyses failed and reported nothing (see Problems)."
    if digest.not_loaded:
        text += f" {len(digest.not_loaded)} dataset(s) could not be loaded (see Problems)."
    return text


# --- markdown ----------------------------------------------------------------------------


def _md_table(tab: Tab) -> list[str]:
    caption, header, rows = tab

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    out = [f"*{caption}*", "", line(header), line(["---"] * len(header))]
    return [*out, *(line(r) for r in rows), ""]


def _md_entry(entry: AnalysisEntry) -> list[str]:
    out = [f"## {entry.dataset} — {entry.question}", ""]
    if entry.summary:
        out += [entry.summary, ""]
    out += [line for p in group_paragraphs(entry) for line in (p, "")]
    out += [f"> **{n}**" for n in entry_notes(entry)]
    flags = mismatch_lines(entry)
    if flags:
        out += ["", "**⚠ Fact-check flags:**", *(f"- ⚠ {m}" for m in flags)]
    out += ["", f"Fact-check: {entry.counts.verified} of {entry.total} numbers verified.", ""]
    for title, reading, tabs in finding_sections(entry):
        out += [f"### {title}", ""]
        out += [reading, ""] if reading else []
        if title == "Model":
            out += [*(f"- {n}" for n in model_notes(entry)), ""] if model_notes(entry) else []
        for tab in tabs:
            out += _md_table(tab)
    out += [f"![{f.title}](figures/{f.figure_id}.png)" for f in entry.figures]
    return [*out, ""]


def render_markdown(digest: AnalysisDigest, *, title: str = "Batch data analysis") -> str:
    """report.md: the summary table across datasets, then every analysis with its verdicts."""
    out = [f"# {title}", "", intro_text(digest), "", "## Findings across datasets", ""]
    out += _md_table(("one row per (dataset, question)", SUMMARY_HEADER, summary_rows(digest)))
    if digest.problems:
        out += ["## Problems", "", *(f"- {p}" for p in digest.problems), ""]
    for entry in digest.analyses:
        out += _md_entry(entry)
    marks = "✔ verified by recomputation; ⚠ MISMATCH: the data gives another value"
    return "\n".join([*out, "---", f"Legend: {marks}.", ""])
