"""The report roles: their tools (`collect_results`, `render_report`), the page and text
builders, and the offline procedures of the frontend engineer and the synthesizer.

Every number is shown with its fact-check verdict: verified numbers plainly with a check
mark, mismatches flagged with the recomputed value, never silently kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agents.analysis.interpret import FAMILY_NAMES
from agents.analysis.model_step import LEFT_OUT
from agents.analysis.outputs import results_digest
from agents.analysis.report_groups import group_paragraphs, group_tables
from agents.analysis.report_models import diagnostic_tables, model_tables
from agents.analysis.schemas import ReportPage, ReportText
from swarm.errors import UserError

if TYPE_CHECKING:
    from agents.analysis.tools import AnalysisBoard
    from agents.loop import Attempt

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


def cell(record: dict[str, Any]) -> str:
    """A reported number with its verdict mark (mismatches say what the data gives)."""
    if record["verdict"] == "mismatch":
        return f"⚠ MISMATCH {fmt(record['value'])} (recomputed {fmt(record['recomputed'])})"
    return f"{fmt(record['value'])} {_MARK[record['verdict']]}"


def _column_table(recs: list[dict[str, Any]], placed: set[int]) -> Tab | None:
    by_col: dict[str, dict[str, dict[str, Any]]] = {}
    for i, r in enumerate(recs):
        stat, cols = r["statistic"], r["columns"]
        if stat in _COLUMN_STATS and r["predictors"] is None:
            slot = by_col.setdefault(cols[0], {})
            if stat not in slot:
                slot[stat] = r
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


def _corr_table(recs: list[dict[str, Any]], placed: set[int]) -> Tab | None:
    rows = []
    for i, r in enumerate(recs):
        # a pair behind a predictor left out of the model is shown with the diagnostics
        if r["statistic"] == "corr" and r.get("note") != LEFT_OUT:
            placed.add(i)
            rows.append([r["columns"][0], r["columns"][1], r["method"], cell(r)])
    return ("Strongest correlations", ["a", "b", "method", "r"], rows) if rows else None


def finding_sections(entry: dict[str, Any]) -> list[Section]:
    """One analysis as sections — profile, distributions, correlations, model, diagnostics,
    grouped comparison, other numbers — each with its reading and its tables (empty
    sections are left out)."""
    recs = entry["findings"]
    said = entry.get("interpretation") or {}
    placed: set[int] = set()
    column_table = _column_table(recs, placed)
    corr_table = _corr_table(recs, placed)
    tables: dict[str, list[Tab]] = {
        "profile": [],
        "distributions": [column_table] if column_table is not None else [],
        "correlations": [corr_table] if corr_table is not None else [],
        "model": model_tables(recs, placed, cell),
        "diagnostics": diagnostic_tables(recs, placed, cell),
        "groups": group_tables(recs, placed, cell),
    }
    other = [r for i, r in enumerate(recs) if i not in placed]
    tables["other"] = [(
        "Other reported numbers", ["statistic", "columns", "value"],
        [[r["statistic"], ", ".join(r["columns"]), cell(r)] for r in other],
    )] if other else []  # fmt: skip
    out = []
    for key, title in SECTIONS:
        reading = said.get(key, "")
        if reading or tables[key]:
            out.append((title, reading, tables[key]))
    return out


def finding_tables(entry: dict[str, Any]) -> list[Tab]:
    """The findings of one analysis as tables, in section order (`finding_sections`)."""
    return [tab for _, _, tabs in finding_sections(entry) for tab in tabs]


def model_notes(entry: dict[str, Any]) -> list[str]:
    """The model chosen and why, and the analysis's notes (predictors left out, refits)."""
    out = []
    reason, reading = entry.get("model_reason"), (entry.get("interpretation") or {}).get("model")
    if reason and reason not in (reading or ""):
        out.append(f"Model choice: {reason}.")
    out.extend(f"Note: {n}" for n in entry.get("notes") or [])
    return out


def mismatch_lines(entry: dict[str, Any]) -> list[str]:
    """One line per number the fact-checker could not reproduce."""
    return [
        f"MISMATCH: {r['statistic']} of {', '.join(r['columns'])} reported as {fmt(r['value'])}, "
        f"but the data gives {fmt(r['recomputed'])} — do not use this number"
        for r in entry["findings"]
        if r["verdict"] == "mismatch"
    ]


def section_status(entry: dict[str, Any]) -> str:
    """`error` for a failed analysis, `warning` for partial work or flagged numbers."""
    if entry["status"] == "failed":
        return "error"
    counts = entry["counts"]
    flagged = counts["mismatch"] or counts["unverifiable"] or counts["unchecked"]
    return "warning" if entry["status"] == "partial" or flagged else "ok"


def entry_notes(entry: dict[str, Any]) -> list[str]:
    """The status lines of one analysis: unanswered question, partial work, problems."""
    notes = []
    if entry["status"] == "failed":
        notes.append("The analysis failed; nothing was reported.")
    elif not entry["applicable"]:
        notes.append(f"Not applicable: {entry['reason']}")
    elif not entry["answered"]:
        notes.append(f"Question not answered: {entry['reason']}")
    elif entry["status"] == "partial" and entry["reason"]:
        notes.append(f"Partial analysis: {entry['reason']}")
    notes.extend(f"Problem: {p}" for p in entry["problems"] if p not in entry["reason"])
    return notes


def summary_rows(digest: dict[str, Any]) -> list[list[str]]:
    """dataset, question, rows, target, model, fit, strongest correlation, verified / total."""
    rows = []
    for e in digest["analyses"]:
        sc = e["strongest_corr"]
        corr = f"{sc['a']} ~ {sc['b']}: {fmt(sc['r'])}" if sc else "—"
        fit = e.get("fit")
        shown = f"{_FIT_NAMES[fit['statistic']]} {fmt(fit['value'])}" if fit else "—"
        rows.append([
            e["dataset"], e["question"], fmt(e["rows"]), e["target"] or "—",
            FAMILY_NAMES.get(e.get("model") or "", "—"), shown, corr,
            f"{e['counts']['verified']} / {e['total']}",
        ])  # fmt: skip
    return rows


_FIT_NAMES = {"r2": "R²", "pseudo_r2": "pseudo-R²"}
SUMMARY_HEADER = [
    "dataset", "question", "rows", "target", "model", "fit", "strongest correlation",
    "verified / total",
]  # fmt: skip


def intro_text(digest: dict[str, Any]) -> str:
    """A one-paragraph overview: analyses, numbers, and how many the data reproduced."""
    t = digest["totals"]
    text = (
        f"{t['analyses']} analyses of {len(digest['datasets'])} dataset(s) ran in parallel. "
        f"They reported {t['findings']} numbers; the fact-checkers recomputed each from the raw "
        f"data: {t['verified']} verified, {t['mismatch']} mismatched, "
        f"{t['unverifiable']} unverifiable, {t['unchecked']} unchecked."
    )
    if digest["not_loaded"]:
        text += f" {len(digest['not_loaded'])} dataset(s) could not be loaded (see Problems)."
    return text


# --- markdown ----------------------------------------------------------------------------


def _md_table(tab: Tab) -> list[str]:
    caption, header, rows = tab

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    out = [f"*{caption}*", "", line(header), line(["---"] * len(header))]
    return [*out, *(line(r) for r in rows), ""]


def _md_entry(entry: dict[str, Any]) -> list[str]:
    out = [f"## {entry['dataset']} — {entry['question']}", ""]
    if entry["summary"]:
        out += [entry["summary"], ""]
    out += [line for p in group_paragraphs(entry) for line in (p, "")]
    out += [f"> **{n}**" for n in entry_notes(entry)]
    flags = mismatch_lines(entry)
    if flags:
        out += ["", "**⚠ Fact-check flags:**", *(f"- ⚠ {m}" for m in flags)]
    c = entry["counts"]
    out += ["", f"Fact-check: {c['verified']} of {entry['total']} numbers verified.", ""]
    for title, reading, tabs in finding_sections(entry):
        out += [f"### {title}", ""]
        out += [reading, ""] if reading else []
        if title == "Model":
            out += [*(f"- {n}" for n in model_notes(entry)), ""] if model_notes(entry) else []
        for tab in tabs:
            out += _md_table(tab)
    out += [f"![{f['title']}](figures/{f['figure_id']}.png)" for f in entry["figures"]]
    return [*out, ""]


def render_markdown(digest: dict[str, Any], *, title: str = "Batch data analysis") -> str:
    """report.md: the summary table across datasets, then every analysis with its verdicts."""
    out = [f"# {title}", "", intro_text(digest), "", "## Findings across datasets", ""]
    out += _md_table(("one row per (dataset, question)", SUMMARY_HEADER, summary_rows(digest)))
    if digest["problems"]:
        out += ["## Problems", "", *(f"- {p}" for p in digest["problems"]), ""]
    for entry in digest["analyses"]:
        out += _md_entry(entry)
    marks = "✔ verified by recomputation; ⚠ MISMATCH: the data gives another value"
    return "\n".join([*out, "---", f"Legend: {marks}.", ""])


# --- HTML --------------------------------------------------------------------------------


def _html_sections(board: AnalysisBoard, digest: dict[str, Any], order: list[str]) -> list[Any]:
    from agents.tools.report import Figure, ReportSection, Table

    header = ReportSection(
        "Findings across datasets",
        tables=[Table(SUMMARY_HEADER, summary_rows(digest), "one row per (dataset, question)")],
    )
    sections: list[ReportSection] = [header]
    if digest["problems"]:
        sections.append(ReportSection("Problems", paragraphs=digest["problems"], status="error"))
    by_id = {e["id"]: e for e in digest["analyses"]}
    for aid in order:
        e = by_id[aid]
        paras = [f"Question: {e['question']}", *([e["summary"]] if e["summary"] else [])]
        paras += group_paragraphs(e) + entry_notes(e) + [f"⚠ {m}" for m in mismatch_lines(e)]
        paras.append(f"Fact-check: {e['counts']['verified']} of {e['total']} numbers verified.")
        parts = finding_sections(e)  # readings in section order; the tables follow in it
        paras += [f"{title}: {reading}" for title, reading, _ in parts if reading]
        paras += model_notes(e)
        sections.append(ReportSection(
            f"{e['dataset']} — {e['question']}",
            paragraphs=paras,
            tables=[Table(h, rows, cap) for _, _, tabs in parts for cap, h, rows in tabs],
            figures=[Figure(f["title"] or f["kind"], board.figures[f["figure_id"]])
                     for f in e["figures"] if f["figure_id"] in board.figures],
            status=section_status(e),
            anchor=aid,
        ))  # fmt: skip
    return sections


def compact_digest(digest: dict[str, Any]) -> dict[str, Any]:
    """The digest for a model's context: verified numbers as short lines, the rest in full."""
    analyses = []
    for e in digest["analyses"]:
        short = {k: v for k, v in e.items() if k != "findings"}
        short["verified_numbers"] = [
            f"{r['statistic']}({', '.join(r['columns'])}) = {fmt(r['value'])}"
            for r in e["findings"]
            if r["verdict"] == "verified"
        ]
        short["flagged"] = [
            {k: v for k, v in r.items() if k not in ("dataset", "question")}
            for r in e["findings"]
            if r["verdict"] != "verified"
        ]
        analyses.append(short)
    return {**digest, "analyses": analyses}


def report_tools(board: AnalysisBoard) -> list[Callable[..., Any]]:
    """`collect_results` and `render_report` over `board`."""

    def collect_results(detail: bool = False) -> dict[str, Any]:
        """Every analysis with its checked numbers, totals and problems (`detail`: each
        finding as a full record)."""
        digest = results_digest(board)
        return digest if detail else compact_digest(digest)

    def render_report(title: str, intro: str, order: list[str] | None = None) -> dict[str, Any]:
        """Build report.html (analyses in `order`, by id; the rest after) and write it."""
        from agents.tools.report import render_html, write_html

        digest = results_digest(board)
        known = [e["id"] for e in digest["analyses"]]
        unknown = [i for i in order or [] if i not in known]
        if unknown:
            raise UserError(f"unknown analysis ids {unknown} in order; known: {known}")
        full = list(dict.fromkeys([*(order or []), *known]))
        t = digest["totals"]
        summary = [("analyses", t["analyses"]), ("numbers reported", t["findings"]),
                   ("verified", t["verified"]), ("mismatched", t["mismatch"]),
                   ("unverifiable", t["unverifiable"])]  # fmt: skip
        html = render_html(
            title, _html_sections(board, digest, full), subtitle=intro, summary=summary
        )
        path = write_html(board.out_dir / "report.html", html)
        return {"path": str(path), "order": full}

    return [collect_results, render_report]


# --- procedures --------------------------------------------------------------------------


def build_report_page(run: Attempt) -> ReportPage:
    """report.html: a summary, then a section per analysis in plan order."""
    digest = run.call("collect_results", detail=True)
    n = len(digest["datasets"])
    title = f"Batch data analysis of {n} dataset{'s' if n != 1 else ''}"
    intro = intro_text(digest)
    order = [e["id"] for e in digest["analyses"]]
    page = run.call("render_report", title=title, intro=intro, order=order)
    return ReportPage(title=title, intro=intro, order=page["order"], path=page["path"])


def write_summary(run: Attempt) -> ReportText:
    """report.md: findings across datasets, verified numbers, flags, problems."""
    digest = run.call("collect_results", detail=True)
    return ReportText(markdown=render_markdown(digest))


__all__ = [
    "SUMMARY_HEADER",
    "build_report_page",
    "cell",
    "compact_digest",
    "entry_notes",
    "finding_sections",
    "finding_tables",
    "fmt",
    "intro_text",
    "mismatch_lines",
    "model_notes",
    "render_markdown",
    "report_tools",
    "section_status",
    "summary_rows",
    "write_summary",
]
