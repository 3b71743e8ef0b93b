"""Reading a wide-table goal in words into a `WideTask`, without a model — or saying why not.

The offline planner plans a wide goal only when it has understood *all* of it: a condition
on phrases in the title and/or abstract, filters on the records' fields (a decision, numeric
thresholds, e-mail domains), the requested columns and an optional sort. Every word of the
goal must be accounted for — by one of those parts or as common wording ("list every ICLR
2017 paper …") — so a goal with a condition it cannot represent ("the 10 most cited",
"not accepted", "from Google") is refused with the words it did not understand, instead of
being answered as a different question.

    task = read_wide_goal("List every ICLR 2017 submission whose title or abstract mentions "
                          "dropout, with its title, first author and citation count.")
    task.phrases, task.columns      # ('dropout',), ('title', 'first_author', 'citations')

    read_wide_goal("Which papers from Google have the most citations?")
    # GoalNotUnderstood: the offline planner does not understand 'google', 'most' in it
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from kimmy_swarm.agents.widesearch.task import FieldFilter, WideTask

__all__ = ["GoalNotUnderstood", "asks_for_table", "read_wide_goal"]


class GoalNotUnderstood(ValueError):
    """The goal is not a wide-table goal the offline planner can read (the message says why)."""


# --- the vocabulary ------------------------------------------------------------------------

_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "a single": 1, "single": 1,
}  # fmt: skip
_NUM = r"(?P<num>\d+(?:\.\d+)?|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + ")"
_CMP_WORDS = {
    ">": ("more than", "greater than", "higher than", "over", "above", "exceeding", ">"),
    ">=": ("at least", "no fewer than", "no less than", "not less than", "a minimum of",
           "minimum of", ">=", "≥"),
    "<": ("fewer than", "less than", "lower than", "under", "below", "<"),
    "<=": ("at most", "no more than", "not more than", "a maximum of", "maximum of", "<=", "≤"),
    "==": ("exactly", "equal to", "="),
}  # fmt: skip
_CMP_OF = {w: op for op, words in _CMP_WORDS.items() for w in words}
_CMP = "(?P<cmp>" + "|".join(re.escape(w) for w in sorted(_CMP_OF, key=len, reverse=True)) + ")"
#: "N or more" and its kin, after the number.
_TAIL_OPS = {"or more": ">=", "or higher": ">=", "or above": ">=", "or better": ">=", "+": ">=",
             "or fewer": "<=", "or less": "<=", "or lower": "<=", "or below": "<="}  # fmt: skip
_TAIL = "(?P<tail>" + "|".join(re.escape(w) for w in _TAIL_OPS) + ")"

#: The words of each numeric field, as a filter names it.
_FIELD_NAMES = {
    "citations": r"(?:citations?|citation counts?|number of citations|cites)",
    "rating": r"(?:(?:mean |average |weighted |confidence-weighted |overall |reviewer |review )?"
              r"(?:ratings?|scores?)|rated|scor(?:ing|ed))",
    "n_authors": r"(?:(?:co-?)?authors|number of authors|author counts?)",
    "rank": r"(?:rank|ranked|ranking)",
    "variance": r"(?:variance|standard deviation)(?: of (?:the |its |their )?ratings)?",
    "karpathy": r"(?:karpathy(?: counts?| scores?)?)",
}  # fmt: skip

_DECISIONS = (
    (r"\b(?:accepted\s+(?:as\s+|for\s+)?(?:an?\s+)?)?orals?(?:\s+(?:presentations?|talks?|"
     r"papers?))?\b", "Accept (Oral)"),
    (r"\b(?:accepted\s+(?:as\s+|for\s+)?(?:an?\s+)?)?posters?(?:\s+(?:presentations?|"
     r"papers?))?\b", "Accept (Poster)"),
    (r"\b(?:invited\s+to\s+(?:the\s+)?workshop(?:[-\s]track)?|workshop[-\s]track|"
     r"workshop)\b", "Invite to Workshop Track"),
    (r"\baccepted\b", "Accept"),
    (r"\brejected\b", "Reject"),
)  # fmt: skip

#: Column words, most specific first (the first pattern that matches a stretch wins).
_COLUMNS = (
    ("first_author", r"first[-\s]listed\s+authors?(?:'s)?(?:\s+names?)?|"
                     r"first[-\s]authors?(?:'s)?(?:\s+(?:full\s+)?names?)?|"
                     r"lead\s+authors?(?:'s)?(?:\s+names?)?|main\s+author"),
    ("n_authors", r"number\s+of\s+(?:co-?)?authors|author\s+counts?|how\s+many\s+authors|"
                  r"count\s+of\s+authors"),
    ("emails", r"e-?mail\s+domains?|e-?mail\s+addresses|e-?mails?|domains?|affiliations?"),
    ("authors", r"(?:full\s+|complete\s+|whole\s+)?(?:author\s+lists?|list\s+of\s+(?:its\s+|"
                r"their\s+|the\s+)?authors|author\s+names|authors?(?:'s)?(?:\s+names?)?|"
                r"co-?authors)"),
    ("decision", r"(?:acceptance\s+|review\s+|final\s+|openreview\s+)?(?:decisions?|"
                 r"outcomes?|verdicts?|status)"),
    ("citations", r"citation\s+counts?|number\s+of\s+citations|citations?|times\s+cited|"
                  r"how\s+often\s+(?:it\s+was|they\s+were)\s+cited"),
    ("variance", r"variance|standard\s+deviation(?:\s+of\s+(?:the\s+|its\s+|their\s+)?"
                 r"ratings)?"),
    ("rating", r"(?:mean\s+|average\s+|weighted\s+|confidence-weighted\s+|overall\s+|"
               r"reviewer\s+|review\s+)?(?:ratings?|scores?)"),
    ("rank", r"ranks?|rankings?"),
    ("karpathy", r"karpathy(?:\s+counts?|\s+scores?)?"),
    ("url", r"(?:openreview\s+|forum\s+)?(?:urls?|links?|pages?|web\s+addresses)"),
    ("title", r"(?:full\s+)?titles?|paper\s+names?|names?\s+of\s+the\s+papers?"),
)  # fmt: skip

#: Words that carry no condition: how people ask for a table of papers.
_COMMON = frozenset(
    """
    a along also an and any are as at be been being both but by can collect columns
    column compile conference corpus could create data dataset details do does each entries
    entry every extract fetch field fields find following for format from gather get give
    had has have having her his i identify in include included includes including
    information into is it its json list listing make markdown me my name named need of on
    one or our output per please plus produce provide publication publications record records
    report retrieve return row rows set should show showing so such table tabulate tell than
    that the their them these they this those to together us value values want was we were
    what which who whose will with work works would write you your paper papers submission
    submissions submitted article articles iclr 2017 iclr-2017 iclr2017 openreview
    following there where each all every ones one's item items
    """.split()  # noqa: SIM905 (a list of words is read best as words)
)
#: Words that ask for a table of papers (a goal without one is not a wide-table goal).
_TABLE_WORDS = re.compile(
    r"\b(?:list|lists|table|tabulate|enumerate|every|all|each|which|find|give|show|report|"
    r"collect|identify|extract|return|compile|gather|retrieve|fetch)\b",
    re.IGNORECASE,
)
_PHRASE_VERBS = (
    r"mentions?|mentioning|mentioned|contains?|containing|refers?\s+to|referring\s+to|"
    r"includes?|including|uses?|using|has|have|having|with"
)
#: Verbs that take only quoted phrases ("including its title" lists a column).
_QUOTED_ONLY_VERBS = frozenset({"include", "includes", "including", "use", "uses", "using",
                                "has", "have", "having", "with"})  # fmt: skip
_SCOPE = (
    r"(?P<scope>titles?\s+or\s+abstracts?|abstracts?\s+or\s+titles?|titles?\s+and\s+"
    r"abstracts?|titles?|abstracts?|texts?)"
)
_QUOTED = r"\"[^\"]+\"|'[^']+'"


# --- the reading ---------------------------------------------------------------------------


@dataclass
class _Reading:
    """The goal as it is read: its lower-case text and the stretches already understood."""

    text: str
    used: list[bool] = field(init=False)

    def __post_init__(self) -> None:
        self.used = [False] * len(self.text)

    def free(self, start: int, end: int) -> bool:
        return not any(self.used[start:end])

    def take(self, start: int, end: int) -> None:
        for i in range(start, end):
            self.used[i] = True

    def finditer(self, pattern: str) -> list[re.Match[str]]:
        """Matches of `pattern` over stretches not yet understood (left to right)."""
        found = []
        for m in re.finditer(pattern, self.text, re.IGNORECASE):
            if m.end() > m.start() and self.free(m.start(), m.end()):
                found.append(m)
                self.take(m.start(), m.end())
        return found

    def leftover(self) -> str:
        return "".join(c if not u else " " for c, u in zip(self.text, self.used, strict=True))


def _normalize(goal: str) -> str:
    text = goal.replace("\u201c", '"').replace("\u201d", '"').replace("\u2018", "'")
    text = text.replace("\u2019", "'").replace("\u2013", "-").replace("\u2014", "-")
    return " ".join(text.split())


def _number(text: str) -> float:
    key = text.lower()
    return float(_NUMBER_WORDS[key]) if key in _NUMBER_WORDS else float(key)


def _phrase_list(text: str, start: int) -> tuple[list[str], int]:
    """The phrases listed at `text[start:]` (quoted, or plain up to a clause boundary) and
    where the list ends."""
    rest = text[start:]
    quoted = re.match(rf"(?:either\s+)?((?:{_QUOTED})(?:\s*(?:,\s*or|,|or)\s*(?:{_QUOTED}))*)",
                      rest)  # fmt: skip
    if quoted:
        items = [q[1:-1] for q in re.findall(_QUOTED, quoted.group(1))]
        return [" ".join(i.split()) for i in items if i.strip()], start + quoted.end()
    boundary = re.search(
        r"[;.:()\"]|\s(?:with|whose|that|which|where|and|in|from|having|has|have|were|was|is|"
        r"are|listing|giving|showing|along|including|plus|sorted|ordered|as|by|for|"
        r"together|at)\b|,\s*(?:with|whose|that|which|where|and|giving|listing|showing|"
        r"sorted|ordered|along|including|plus|as|by|for|their|its)\b|$",
        rest,
    )
    end = boundary.start() if boundary else len(rest)
    body = re.sub(r"^either\s+", "", rest[:end].strip())
    items = [p.strip(" ,") for p in re.split(r"\s*,\s*(?:or\s+)?|\s+or\s+", body)]
    return [p for p in items if p], start + end


def _scope_of(words: str | None) -> str:
    if words is None or words.startswith("text") or " or " in words or " and " in words:
        return "title_or_abstract"
    return "title" if words.startswith("title") else "abstract"


def _phrases(reading: _Reading) -> tuple[tuple[str, ...], str]:
    """The key phrases and where they are looked for (consumed from the reading)."""
    text = reading.text
    verb = (
        rf"(?:\b{_SCOPE}\s+(?:(?:that|which)\s+)?(?:(?:both|also)\s+)?)?"
        rf"\b(?P<verb>{_PHRASE_VERBS})\s+(?:the\s+)?(?:(?:key\s*)?(?:words?|terms?|phrases?|"
        rf"expressions?|keywords?)\s+)?"
    )
    clauses: list[tuple[list[str], str]] = []
    for m in re.finditer(verb, text, re.IGNORECASE):
        if not reading.free(m.start(), m.end()):
            continue
        verb_word = m.group("verb").lower()
        plain_verb = verb_word in ("has", "have", "having", "with")
        if verb_word in _QUOTED_ONLY_VERBS and text[m.end() : m.end() + 1] not in ("'", '"'):
            continue  # "with its title", "including its rating": columns, not phrases
        phrases, end = _phrase_list(text, m.end())
        if not phrases:
            continue
        scope_words = m.group("scope")
        after = re.match(
            rf"\s*,?\s*(?:in|within|anywhere\s+in)\s+(?:its|their|the)\s+{_SCOPE}\b",
            text[end:], re.IGNORECASE,
        )  # fmt: skip
        if after:
            scope_words = after.group("scope")
            end += after.end()
        if plain_verb and scope_words is None:
            continue  # "with 'x'" alone is not a condition on the text
        clauses.append((phrases, _scope_of(scope_words and scope_words.lower())))
        reading.take(m.start(), end)
    if not clauses:
        return (), "title_or_abstract"
    if len({scope for _, scope in clauses}) > 1 or len(clauses) > 1:
        raise GoalNotUnderstood(
            "the offline planner reads one condition on the text (one list of phrases joined "
            "by 'or'), and this goal has several"
        )
    phrases, scope = clauses[0]
    return tuple(dict.fromkeys(phrases)), scope


def _decision(reading: _Reading) -> str | None:
    found = {value for pattern, value in _DECISIONS for _ in reading.finditer(pattern)}
    if len(found) > 1:
        raise GoalNotUnderstood(
            f"the offline planner takes one decision, and this goal names "
            f"{', '.join(sorted(found))}"
        )
    return found.pop() if found else None


def _filters(reading: _Reading) -> tuple[FieldFilter, ...]:
    out: list[FieldFilter] = []

    def add(fld: str, op: str, value: float) -> None:
        out.append(FieldFilter(field=fld, op=op, value=value))  # type: ignore[arg-type]

    for fld, names in _FIELD_NAMES.items():
        between = rf"\b{names}\s+(?:is\s+|are\s+|of\s+)?between\s+{_NUM}\s+and\s+(?P<hi>[\d.]+)"
        for m in reading.finditer(between):
            add(fld, ">=", _number(m.group("num")))
            add(fld, "<=", float(m.group("hi")))
        forms = [
            rf"\b{names}\s+(?:that\s+is\s+|is\s+|are\s+|of\s+|count\s+)?{_CMP}\s+{_NUM}"
            r"(?:\s+times)?",
            rf"(?<![\w.]){_CMP}\s+{_NUM}\s+{names}\b",
            rf"\b{_NUM}\s*{_TAIL}\s+{names}\b",
            rf"\b{names}\s+(?:of\s+)?{_NUM}\s*{_TAIL}",
        ]
        if fld == "citations":
            forms += [rf"\bcited\s+{_CMP}\s+{_NUM}(?:\s+times)?", rf"\bcited\s+{_NUM}\s*{_TAIL}"
                      r"(?:\s+times)?"]  # fmt: skip
        if fld == "rank":
            forms += [rf"\b(?:ranked\s+)?(?:in\s+)?the\s+top\s+{_NUM}(?:\s+by\s+rating)?"]
        for form in forms:
            for m in reading.finditer(form):
                groups = m.groupdict()
                if groups.get("cmp"):
                    op = _CMP_OF[groups["cmp"].lower()]
                elif groups.get("tail"):
                    op = _TAIL_OPS[groups["tail"].lower()]
                else:
                    op = "<="  # the top N by rank
                add(fld, op, _number(groups["num"]))
    for _single in reading.finditer(
        r"\b(?:by\s+)?(?:an?\s+|exactly\s+)?(?:single|sole|one)[-\s]author(?:ed|s)?\b"
        r"(?:\s+papers?)?|\bsingle[-\s]authored\b"
    ):
        add("n_authors", "==", 1.0)
    for m in reading.finditer(rf"\b(?:with|having|by)\s+{_NUM}\s+(?:co-?)?authors\b"):
        add("n_authors", "==", _number(m.group("num")))
    return tuple(out)


_DOMAIN = r"@?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b"
_DOMAIN_LIST = rf"(?P<domains>{_DOMAIN}(?:\s*(?:,\s*or|,|or)\s*{_DOMAIN})*)"


def _domains(reading: _Reading) -> tuple[str, ...]:
    forms = (
        r"\b(?:(?:with|having|where)\s+)?(?:(?:at\s+least\s+one|any|an?|one\s+or\s+more|some|"
        r"one)\s+(?:of\s+(?:the|its|their)\s+)?)?(?:co-?)?authors?\s+(?:(?:with|having|who\s+"
        r"has|who\s+have|whose)\s+)?(?:an?\s+)?(?:e-?mail\s+)?(?:(?:address(?:es)?|domains?)"
        r"\s+)?(?:(?:is|are)\s+)?(?:(?:at|from|in|on|of|under|ending\s+in|affiliated\s+with)"
        rf"\s+)?(?:an?\s+)?{_DOMAIN_LIST}(?:\s+(?:e-?mail\s+)?(?:address(?:es)?|domains?))?",
        r"\b(?:(?:with|having)\s+)?(?:an?\s+)?e-?mail\s+(?:address(?:es)?\s+|domains?\s+)?"
        rf"(?:(?:is|are)\s+)?(?:(?:at|from|in|on|of|under|ending\s+in)\s+)?{_DOMAIN_LIST}",
        rf"\b(?:(?:with|having)\s+)?(?:an?\s+)?{_DOMAIN_LIST}\s+(?:e-?mail\s+)?"
        r"(?:address(?:es)?|domains?|authors?|co-?authors?)",
        rf"\b(?:from|at)\s+{_DOMAIN_LIST}",
    )
    found: list[str] = []
    for form in forms:
        for m in reading.finditer(form):
            found += [d.lstrip("@") for d in re.findall(_DOMAIN, m.group("domains"))]
    return tuple(dict.fromkeys(found))


def _sort(reading: _Reading) -> tuple[str | None, bool]:
    names = "|".join(f"(?P<{c}>{p})" for c, p in _COLUMNS)
    m = next(
        iter(
            reading.finditer(
                rf"\b(?:sorted|ordered|sort(?:ed)?\s+them|order(?:ed)?\s+them|rank(?:ed)?\s+"
                rf"them)\s+by\s+(?:their\s+|its\s+|the\s+)?(?:{names})(?P<dir>\s*,?\s*\(?(?:in\s+)?"
                r"(?:descending|ascending|decreasing|increasing)(?:\s+order)?\)?|\s*,?\s*\(?"
                r"(?:highest|lowest|most|fewest|largest|smallest|best|worst)\s+first\)?|\s*,?\s*"
                r"from\s+(?:highest|lowest|most|fewest|best|worst)\s+to\s+(?:highest|lowest|"
                r"most|fewest|least|best|worst))?"
            )
        ),
        None,
    )
    if m is None:
        return None, False
    column = next(c for c, _ in _COLUMNS if m.group(c))
    words = (m.group("dir") or "").lower()
    descending = any(w in words for w in ("desc", "decreas", "highest first", "most first",
                                          "largest", "best first", "from highest", "from most",
                                          "from best"))  # fmt: skip
    return column, descending


def _columns(reading: _Reading) -> tuple[str, ...]:
    pattern = "|".join(rf"\b(?P<{c}>{p})\b" for c, p in _COLUMNS)
    seen: list[str] = []
    for m in reading.finditer(pattern):
        column = next(c for c, _ in _COLUMNS if m.group(c))
        if column not in seen:
            seen.append(column)
    if "title" in seen:
        seen.remove("title")
    return ("title", *seen)


def asks_for_table(goal: str) -> bool:
    """Whether the goal asks for a list or table of papers (then it is read as a wide goal)."""
    text = re.sub(_QUOTED, " ", _normalize(goal))  # quoted phrases are conditions
    if re.match(r"^\s*(?:please\s+)?(?:review|survey|summari[sz]e|overview)\b", text, re.I):
        return False
    if re.search(r"\b(?:overview|survey|literature|summari[sz]e|summary)\b", text, re.I):
        return False  # a review, whatever its verb ("give an overview of …")
    return bool(_TABLE_WORDS.search(text))


def read_wide_goal(goal: str, *, name: str | None = None) -> WideTask:
    """The wide task a goal in words asks for.

    Args:
        goal: the goal, e.g. "List every paper whose abstract mentions 'dropout' and that was
            accepted, with its first author and citation count".
        name: the task's name (default: `goal-` and a hash of the goal).

    Raises:
        GoalNotUnderstood: not every word of it is understood, it has no condition, or its
            conditions cannot be put together (the message names what).
    """
    text = _normalize(goal)
    if not text:
        raise GoalNotUnderstood("the goal is empty")
    reading = _Reading(text.lower())
    phrases, scope = _phrases(reading)
    filters = _filters(reading)
    domains = _domains(reading)
    decision = _decision(reading)
    sort_by, descending = _sort(reading)
    columns = _columns(reading)
    if sort_by is not None and sort_by not in columns:
        columns = (*columns, sort_by)  # sorted by it: it is shown
    unknown = [
        w for w in re.findall(r"[a-z0-9][a-z0-9'+-]*", reading.leftover().lower())
        if w not in _COMMON and w.rstrip("'s") not in _COMMON
    ]  # fmt: skip
    if unknown:
        shown = ", ".join(f"'{w}'" for w in dict.fromkeys(unknown))
        raise GoalNotUnderstood(f"the offline planner does not understand {shown} in it")
    if not (phrases or decision or filters or domains):
        raise GoalNotUnderstood("the goal sets no condition on the papers")
    options: dict[str, Any] = {
        "name": name or "goal-" + hashlib.sha256(text.encode()).hexdigest()[:10],
        "phrases": phrases, "where": scope, "decision": decision, "filters": filters,
        "email_domains": domains, "columns": columns, "sort_by": sort_by,
        "descending": descending,
    }  # fmt: skip
    return WideTask(**options)
