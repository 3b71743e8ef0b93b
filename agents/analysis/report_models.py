"""The model and diagnostics sections of an analysis in the reports.

Per fitted model (target, predictors, family, and the part of a two-part model): a
coefficient table — per class for a multinomial model, without standard errors but with
bootstrap intervals for a penalised one, the effect of one SD of each term beside the
coefficient of an unpenalised one, a nominal predictor's dummies each on a row, HC3 robust
standard errors said in the caption — and a table of the fit measures that apply to its
family (in-sample accuracy beside the cross-validated accuracy of a classifier, and the
cross-validated AUC of a binary one); then a diagnostics table (residual normality,
Breusch–Pagan, the influential rows of an OLS fit or a logit by Cook's distance, the OLS
coefficients refitted without a dominant row and the logit's without its influential rows,
the Poisson dispersion — of the Poisson fit, or the one behind a switch to negative
binomial — VIFs, condition number). Every number carries its fact-check mark (`cell`).
"""

from __future__ import annotations

from collections.abc import Callable

from kimmy_swarm.agents.analysis.answers import bootstrap_text
from kimmy_swarm.agents.analysis.digest import FindingRecord
from kimmy_swarm.agents.analysis.interpret import FAMILY_NAMES, PART_TITLES
from kimmy_swarm.agents.analysis.model_step import LEFT_OUT
from kimmy_swarm.agents.tools.finding import BOOTSTRAP_LEVEL

__all__ = ["DIAGNOSTIC_STATS", "diagnostic_tables", "model_tables"]

Tab = tuple[str, list[str], list[list[str]]]  # caption, header, rows
Cell = Callable[[FindingRecord], str]
DIAGNOSTIC_STATS = frozenset({
    "jb", "jb_pvalue", "bp", "bp_pvalue", "vif", "cond_number", "dispersion", "influential",
    "cooks_max", "cooks_max_row",
})  # fmt: skip
_COEF_STATS = frozenset({"intercept", "slope", "se", "pvalue"})
_FIT_COLUMNS = (
    ("r2", "R²"), ("adj_r2", "adjusted R²"), ("pseudo_r2", "McFadden pseudo-R²"),
    ("accuracy", "accuracy (in-sample)"), ("cv_accuracy", "accuracy (5-fold CV)"),
    ("cv_auc", "AUC (5-fold CV)"), ("llf", "log-likelihood"), ("aic", "AIC"),
    ("alpha", "NB alpha"), ("nobs", "observations"),
)  # fmt: skip

#: exp(coefficient) columns of a coefficient table, by statistic.
_RATIO_NAMES = {"odds_ratio": "odds ratio", "rate_ratio": "rate ratio"}
#: The other columns a coefficient table may have: the effect of one SD of the term (an
#: unpenalised fit), the bootstrap interval (a penalised one).
_EXTRA_COLUMNS = (
    ("slope_per_sd", "per SD of the term"),
    ("ci_low", f"{100 * BOOTSTRAP_LEVEL:g}% bootstrap low"),
    ("ci_high", f"{100 * BOOTSTRAP_LEVEL:g}% bootstrap high"),
)
Slot = dict[tuple[str, str, str], FindingRecord]  # (statistic, level, term) -> record


def _fits(recs: list[FindingRecord], placed: set[int], diagnostic: bool) -> dict[tuple, Slot]:
    """Model records by (target, predictors, model, part); diagnostics or the rest (whose
    model is "")."""
    out: dict[tuple, Slot] = {}
    for i, r in enumerate(recs):
        if r.predictors is None or i in placed:
            continue
        # a coefficient refitted without influential rows is a diagnostic of the fit
        refitted = r.without_row is not None or r.without_influential
        if (r.statistic in DIAGNOSTIC_STATS or refitted) != diagnostic:
            continue
        model = r.model or "ols"
        key = (r.columns[0], tuple(r.predictors), model if not diagnostic else "", r.part)
        term = "const" if r.statistic == "intercept" else (r.columns[1:] or [""])[0]
        slot = out.setdefault(key, {})
        name = (r.statistic, r.level or "", term)
        if name not in slot:
            slot[name] = r
            placed.add(i)
    return out


def _subject(target: str, part: str) -> str:
    """What a model describes: its target, or the part of a two-part model."""
    return PART_TITLES[part].format(target).lower() if part else target


def _coef_table(key: tuple, slot: Slot, cell: Cell) -> Tab:
    target, preds, model, part = key
    levels = list(dict.fromkeys(lv for (_, lv, _) in slot))
    # the terms in the order reported (a nominal predictor's dummies in place of it)
    terms = list(dict.fromkeys(t for (stat, _, t) in slot if stat in ("intercept", "slope")))
    penalised = model.endswith("_l2")
    header = ["term", *(["class"] if any(levels) else []), "coefficient"]
    header += [] if penalised else ["std. error", "p-value"]
    ratio = next((st for st in _RATIO_NAMES if any(k[0] == st for k in slot)), None)
    header += [_RATIO_NAMES[ratio]] if ratio else []
    extra = [(st, name) for st, name in _EXTRA_COLUMNS if any(k[0] == st for k in slot)]
    header += [name for _, name in extra]
    rows = []
    for level in levels:
        for term in terms:
            coef = slot.get(("intercept" if term == "const" else "slope", level, term))
            if coef is None:
                continue
            shown = f"{level} ({coef.note})" if coef.note else level
            row = [term, *([shown] if any(levels) else []), cell(coef)]
            if not penalised:
                row += [cell(s) if (s := slot.get((stat, level, term))) else ""
                        for stat in ("se", "pvalue")]  # fmt: skip
            for stat in [*([ratio] if ratio else []), *(st for st, _ in extra)]:
                row.append(cell(s) if (s := slot.get((stat, level, term))) else "")
            rows.append(row)
    name = FAMILY_NAMES.get(model, model)
    caption = f"{name[0].upper()}{name[1:]}: {target} ~ const + {' + '.join(preds)}"
    if part:
        caption = f"{PART_TITLES[part].format(target)} ({name}): {target} ~ const + " + (
            " + ".join(preds)
        )
    robust = [r for (stat, _, _), r in slot.items() if stat == "se" and r.cov_type == "HC3"]
    if robust:
        caption += " (HC3 robust standard errors: Breusch–Pagan rejects constant variance)"
    nominal = next((r.nominal for r in slot.values() if r.nominal), [])
    if nominal:
        caption += f" ({', '.join(nominal)}: dummies against the most frequent level)"
    if model == "mnlogit":
        caption += " (each class against the base class, the smallest)"
    if penalised:
        caption += " (L2-penalised, predictors standardised: no standard errors)"
    if extra and extra[0][0] == "ci_low":
        caption += f" ({bootstrap_text()})"
    return caption, header, rows


def model_tables(recs: list[FindingRecord], placed: set[int], cell: Cell) -> list[Tab]:
    """Per fitted model: its coefficient table and its fit-measures table."""
    tables: list[Tab] = []
    for key, slot in _fits(recs, placed, diagnostic=False).items():
        if any(stat in _COEF_STATS for (stat, _, _) in slot):
            tables.append(_coef_table(key, slot, cell))
        present = [(s, label) for s, label in _FIT_COLUMNS if (s, "", "") in slot]
        if present:
            row = [cell(slot[(s, "", "")]) for s, _ in present]
            name = FAMILY_NAMES.get(key[2], key[2])
            tables.append((f"Fit of {_subject(key[0], key[3])} ({name})",
                           [lbl for _, lbl in present], [row]))  # fmt: skip
    return tables


_CHECKS = (
    ("Jarque–Bera (residual normality)", "jb", "jb_pvalue"),
    ("Breusch–Pagan (heteroscedasticity)", "bp", "bp_pvalue"),
)


def _influence_rows(slot: Slot, cell: Cell) -> list[list[str]]:
    """Influence of an OLS fit's rows: how many have Cook's distance > 4/n, the largest, and
    the coefficients refitted without it where it dominates the fit."""
    rows = []
    if (r := slot.get(("influential", "", ""))) is not None:
        rows.append(["rows with Cook's distance > 4/n (influential)", cell(r), ""])
    if (r := slot.get(("cooks_max", "", ""))) is not None:
        rows.append(["largest Cook's distance", cell(r), ""])
    if (r := slot.get(("cooks_max_row", "", ""))) is not None:
        label = f" ({r.note})" if r.note else ""
        rows.append([f"its row, counted from 0{label}", cell(r), ""])
    for (stat, _, term), r in slot.items():  # the fit refitted without that row
        if stat in ("intercept", "slope") and r.without_row is not None:
            what = "intercept" if stat == "intercept" else f"coefficient of {term}"
            rows.append([f"{what} without row {r.without_row}", cell(r), ""])
        if stat == "slope" and r.without_influential:  # a logit's, without them all
            p = slot.get(("pvalue", "", term))
            rows.append([f"coefficient of {term} without the influential rows", cell(r),
                         cell(p) if p is not None else ""])  # fmt: skip
    return rows


def diagnostic_tables(recs: list[FindingRecord], placed: set[int], cell: Cell) -> list[Tab]:
    """Per model: residual tests, the Poisson dispersion, the influential rows (OLS), VIFs
    and the condition number."""
    tables: list[Tab] = []
    for (target, preds, _, part), slot in _fits(recs, placed, diagnostic=True).items():
        rows = []
        for label, stat, pstat in _CHECKS:
            if (stat, "", "") in slot:
                p = slot.get((pstat, "", ""))
                rows.append([label, cell(slot[(stat, "", "")]), cell(p) if p else ""])
        if ("dispersion", "", "") in slot:
            rows.append(["Poisson dispersion (Pearson χ²/df)", cell(slot[("dispersion", "", "")]),
                         ""])  # fmt: skip
        rows += _influence_rows(slot, cell)
        rows += [[f"VIF of {t}", cell(r), ""]
                 for (stat, _, t), r in slot.items() if stat == "vif"]  # fmt: skip
        if ("cond_number", "", "") in slot:
            rows.append(["condition number of [1, X]", cell(slot[("cond_number", "", "")]), ""])
        for i, r in enumerate(recs):  # why predictors were left out (the first model's)
            if r.statistic == "corr" and r.note == LEFT_OUT and i not in placed:
                placed.add(i)
                a, b = r.columns
                rows.append([f"{a} left out: r with {b}", cell(r), ""])
        if rows:
            caption = f"Diagnostics: {target} ~ const + {' + '.join(preds)}"
            if part:
                caption = f"Diagnostics of {_subject(target, part)}: {target} ~ const + " + (
                    " + ".join(preds)
                )
            tables.append((caption, ["check", "statistic", "p-value"], rows))
    return tables
