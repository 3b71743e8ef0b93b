"""Conditions on the records' fields that the runtime checks itself: `where` of the
orchestrator's `search` and `fan_out` (and of the single agent's `search`), the fields the
orchestrator is told of with what their values look like, and columns named once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kimmy_swarm.agents.orchestrator.actions import Actions
from kimmy_swarm.agents.orchestrator.agent_specs import AgentSpec
from kimmy_swarm.agents.orchestrator.conditions import Condition
from kimmy_swarm.agents.orchestrator.corpus_view import (
    CorpusView,
    NothingMeetsError,
    UnknownFieldError,
    search_tool,
)
from kimmy_swarm.agents.orchestrator.prompts import ResourceBrief, opening_messages
from kimmy_swarm.agents.orchestrator.state import OrchestratorState
from kimmy_swarm.agents.orchestrator.table import TableSpec
from kimmy_swarm.agents.tools.corpus import load_corpus
from kimmy_swarm.agents.tools.search import SearchIndex
from kimmy_swarm.swarm import ApprovalPolicy
from kimmy_swarm.swarm.llm.types import FunctionCall, ToolCall

RECORDS = [
    {"id": "p1", "title": "Deep RL at scale", "abstract": "Reinforcement learning for games.",
     "authors": ["Ann Lee", "Bo Chen"], "decision": "Accept (Oral)", "rating": "8.5",
     "citations": 120, "emails": ["google.com", "mit.edu"]},
    {"id": "p2", "title": "Policy search", "abstract": "Reinforcement learning with policies.",
     "authors": ["Cy Dunn"], "decision": "Reject", "rating": "4.0", "citations": 3,
     "emails": ["cs.berkeley.edu"]},
    {"id": "p3", "title": "Dropout revisited", "abstract": "Dropout regularizes nets.",
     "authors": ["Di Erb", "Ed Fox", "Flo Gu"], "decision": "Accept (Poster)", "rating": "6.25",
     "citations": 40, "emails": ["research.google.com"]},
]  # fmt: skip


@pytest.fixture
def view(tmp_path: Path) -> CorpusView:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(RECORDS))
    corpus = load_corpus(path)
    return CorpusView(corpus, SearchIndex(corpus.documents))


def _c(field: str, op: str, value: Any) -> Condition:
    return Condition.model_validate({"field": field, "op": op, "value": value})


def test_a_condition_compares_text_without_case_lists_by_item_and_numbers_as_numbers() -> None:
    assert _c("decision", "contains", "oral").holds("Accept (Oral)")
    assert not _c("decision", "contains", "oral").holds("Accept (Poster)")
    assert _c("decision", "==", "reject").holds("Reject")
    assert not _c("decision", "==", "Accept").holds("Accept (Oral)")  # equal is whole
    assert _c("decision", "!=", "Reject").holds("Accept (Oral)")
    assert _c("emails", "contains", "google.com").holds(["research.google.com", "x.org"])
    assert _c("emails", "==", "mit.edu").holds(["google.com", "mit.edu"])
    assert _c("rating", ">=", 7).holds("8.5") and not _c("rating", ">=", "7").holds("6.25")
    assert _c("citations", "<", 50).holds(40) and _c("n_authors", "==", "1").holds(1)
    assert not _c("rating", ">", 1).holds("n/a")  # not a number: not met
    assert not _c("rating", ">", 1).holds(None)
    assert _c("emails", "contains", "x").words() == "emails contains 'x'"


def test_the_view_selects_by_fields_and_names_the_unknown_one(view: CorpusView) -> None:
    assert view.fields[:7] == ["title", "authors", "n_authors", "text", "year", "venue", "url"]
    assert {"decision", "rating", "citations", "emails"} <= set(view.fields)
    assert view.field_value("p3", "n_authors") == 3
    assert view.where(view.ids, [_c("emails", "contains", "google.com")]) == ["p1", "p3"]
    both = [_c("emails", "contains", "google.com"), _c("decision", "contains", "Oral")]
    assert view.where(view.ids, both) == ["p1"]
    assert view.where(view.ids, [_c("n_authors", ">=", 2)]) == ["p1", "p3"]
    with pytest.raises(UnknownFieldError, match="unknown field 'affiliation'; the documents "
                       "have: title, authors, n_authors"):  # fmt: skip
        view.where(view.ids, [_c("affiliation", "contains", "Google")])


def test_field_hints_say_what_values_look_like(view: CorpusView) -> None:
    hints = view.field_hints(choices=3)
    assert "decision (one of: Accept (Oral), Reject, Accept (Poster))" in hints
    assert "emails (lists, e.g. google.com, mit.edu)" in hints
    assert "n_authors (one of: 2, 1, 3)" in hints  # few values: named
    assert "citations (one of: 120, 3, 40)" in view.field_hints(choices=3)
    assert "citations (numbers from 3 to 120)" in view.field_hints(choices=2)
    assert "title" in hints and "year_from" not in " ".join(hints)  # provenance left out


class _Ctx(SimpleNamespace):
    def __init__(self) -> None:
        super().__init__(
            inputs={"goal": "g"}, instructions="g", spawned=[], approval_policy=ApprovalPolicy()
        )

    def spawn(self, subtasks: list[dict[str, Any]]) -> None:
        self.spawned += subtasks


def _call(actions: Actions, name: str, arguments: dict[str, Any]) -> str:
    call = ToolCall(id="c", function=FunctionCall(name=name, arguments=json.dumps(arguments)))
    return asyncio.run(actions.run(call)).text


def test_search_and_fan_out_keep_only_the_documents_meeting_where(view: CorpusView) -> None:
    ctx: Any = _Ctx()
    actions = Actions(ctx, OrchestratorState(), roles=("extractor",), tools=(), corpus=view)
    google = [{"field": "emails", "op": "contains", "value": "google.com"}]
    found = json.loads(_call(actions, "search", {"query": "'reinforcement learning'",
                                                 "where": google}))  # fmt: skip
    assert found["matches"] == 1 and found["shown"][0]["id"] == "p1"
    assert found["where"] == ["emails contains 'google.com'"]
    every = json.loads(_call(actions, "search", {"where": google}))  # no query: every document
    assert [d["id"] for d in every["shown"]] == ["p1", "p3"]
    told = json.loads(_call(actions, "fan_out", {"agent": "extractor", "task": "Rows.",
                                                 "all_documents": True, "where": google,
                                                 "per_task": 1}))  # fmt: skip
    assert told["documents"] == 2
    assert [s["inputs"]["doc_ids"] for s in ctx.spawned] == [["p1"], ["p3"]]
    none = _call(
        actions,
        "fan_out",
        {
            "agent": "extractor",
            "task": "R.",
            "all_documents": True,
            "where": [{"field": "rating", "op": ">", "value": 9}],
        },
    )
    assert none == "error: no document meets where (rating > 9.0): rating ranges from 4 to 8.5"
    unknown = _call(actions, "search", {"where": [{"field": "lab", "value": "x"}]})
    assert unknown.startswith("error: unknown field 'lab'; the documents have: title,")
    assert len(ctx.spawned) == 2  # the refused calls spawned nothing


def test_the_single_agents_search_takes_the_same_arguments(view: CorpusView) -> None:
    tool = search_tool(view)
    args = tool.parse({"query": "", "where": [{"field": "decision", "value": "reject"}]})
    assert tool.fn(**args)["shown"] == [{"id": "p2", "title": "Policy search"}]
    assert set(tool.spec()["function"]["parameters"]["properties"]) == {"query", "where", "limit"}


def test_the_orchestrator_is_told_the_fields_and_shown_where_in_the_example(
    view: CorpusView,
) -> None:
    resources = ResourceBrief(documents=view.ids, corpus="c.json", fields=view.field_hints())
    messages = opening_messages("goal", resources, budget_chars=4_000)
    told = messages[-1]["content"]
    assert "\n- decision (one of: Accept (Oral), Reject, Accept (Poster))\n" in told
    fan_outs = [json.loads(c["function"]["arguments"]) for m in messages
                for c in m.get("tool_calls", ()) if c["function"]["name"] == "fan_out"]  # fmt: skip
    assert fan_outs[0]["where"] == [
        {"field": "decision", "op": "contains", "value": "Accept"},
        {"field": "emails", "op": "contains", "value": "mit.edu"},
    ]
    for condition in fan_outs[0]["where"]:
        Condition.model_validate(condition)  # the example's conditions are valid


def test_a_column_named_twice_is_one_column() -> None:
    spec = AgentSpec(name="x", system_prompt="p", output_columns=("title", "citations",
                                                                   "citations"))  # fmt: skip
    assert spec.output_columns == ("title", "citations")
    assert TableSpec(columns=["title", "Citations", "citations"]).columns == ["title", "citations"]


def test_a_where_that_keeps_nothing_says_which_field_holds_the_value(view: CorpusView) -> None:
    # the 1.5B asked for authors containing 'google.com' and got only "no document meets"
    ctx: Any = _Ctx()
    actions = Actions(ctx, OrchestratorState(), roles=("extractor",), tools=(), corpus=view)
    wrong_field = [{"field": "authors", "op": "contains", "value": "google.com"}]
    told = json.loads(
        _call(
            actions,
            "fan_out",
            {"agent": "extractor", "task": "R.", "all_documents": True, "where": wrong_field},
        )
    )
    assert told["documents"] == 2  # one other field holds it: read there, and said so
    assert told["read_as"] == ["authors contains 'google.com' read as emails contains 'google.com'"]
    found = json.loads(_call(actions, "search", {"where": wrong_field}))
    assert found["matches"] == 2 and "read_as" in found

    def fan_out_all(where: list[dict[str, Any]]) -> str:
        args = {"agent": "extractor", "task": "R.", "all_documents": True, "where": where}
        return _call(actions, "fan_out", args)

    two_fields = [{"field": "decision", "op": "contains", "value": "Dropout"}]
    assert fan_out_all(two_fields) == (
        "error: no document meets where (decision contains 'Dropout'): "
        "'Dropout' is in title (1 documents), text (1 documents)"
    )
    wrong_value = [{"field": "decision", "op": "==", "value": "Oral"}]
    assert fan_out_all(wrong_value) == (
        "error: no document meets where (decision == 'Oral'): decision is one "
        "of: Accept (Oral), Accept (Poster), Reject"
    )
    nothing = json.loads(_call(actions, "search", {"where": wrong_value}))
    assert nothing["matches"] == 0 and nothing["note"].startswith("no document meets where")
    assert len(ctx.spawned) == 1  # the read-as fan-out only


def test_a_field_or_column_named_another_way_is_the_field_it_names(view: CorpusView) -> None:
    # the 1.5B wrote where abstract contains …, and a column "openreview_link" it then made up
    assert view.resolve("abstract") == "text" and view.resolve("Citations") == "citations"
    assert view.resolve("email") == "emails" and view.resolve("citation_count") == "citations"
    assert view.resolve("OpenReview link") == "url" and view.resolve("number of authors") == (
        "n_authors"
    )
    assert view.resolve("affiliation") is None
    assert view.where(view.ids, [_c("abstract", "contains", "policies")]) == ["p2"]
    (cells,) = view.cells(["p1"], ["title", "openreview_link", "first author", "method"])
    assert cells == {"id": "p1", "title": "Deep RL at scale", "first author": "Ann Lee",
                     "openreview_link": "https://openreview.net/forum?id=p1"}  # fmt: skip


def test_title_and_text_containing_one_value_read_as_either_mentions_it(view: CorpusView) -> None:
    # the 1.5B wrote where title contains 'dropout' and abstract contains 'dropout' for
    # "mentions 'dropout' in the title or abstract": both had to hold, and it lost the rest
    both = [_c("title", "contains", "reinforcement"), _c("abstract", "contains", "reinforcement")]
    kept, notes = view.select(view.ids, both)
    assert kept == ["p1", "p2"]  # p1's and p2's abstracts mention it, neither title does
    assert notes == ["title contains 'reinforcement' and text contains 'reinforcement' read as: "
                     "the title or the text mentions 'reinforcement'"]  # fmt: skip
    with_google = [*both, _c("emails", "contains", "google.com")]
    assert view.select(view.ids, with_google)[0] == ["p1"]
    assert view.select(view.ids, [_c("title", "contains", "dropout")]) == (["p3"], [])
    with pytest.raises(NothingMeetsError):
        view.select(view.ids, [_c("title", "contains", "zebra"), _c("text", "contains", "zebra")])


def test_a_query_that_leaves_out_what_where_wants_says_so(view: CorpusView) -> None:
    ctx: Any = _Ctx()
    actions = Actions(ctx, OrchestratorState(), roles=("extractor",), tools=(), corpus=view)
    cited = [{"field": "citations", "op": ">", "value": 100}]
    told = _call(actions, "fan_out", {"agent": "extractor", "task": "R.", "query": "policy",
                                      "where": cited})  # fmt: skip
    # the message leads with the query's part: the values of `citations` among the query's
    # documents would read as if the condition were wrong (issue 33, "single author")
    assert told == (
        "error: the query 'policy' matched 1 document and none of them meets where "
        "(citations > 100.0), but 1 document of the corpus does: the query left it out. "
        "Give all_documents=true with the same where instead of the query"
    )
    assert "ranges from" not in told
    assert ctx.spawned == []


def test_the_worked_examples_conditions_are_dropped_where_the_goal_does_not_say_them(
    view: CorpusView,
) -> None:
    # the 0.5B searched "decision contains 'Accept', emails contains 'mit.edu'" (the worked
    # example's where) nine turns in a row for a goal about 'dropout' that names neither
    from kimmy_swarm.agents.orchestrator.prompts import EXAMPLE_WHERE

    copied = [dict(c) for c in EXAMPLE_WHERE]
    ctx: Any = _Ctx()
    ctx.inputs = {"goal": "Which papers mention 'dropout'? Titles please, submitted ones too."}
    actions = Actions(ctx, OrchestratorState(), roles=("extractor",), tools=(), corpus=view)
    found = json.loads(_call(actions, "search", {"query": "'dropout'", "where": copied}))
    assert found["matches"] == 1 and found["shown"][0]["id"] == "p3"
    assert found["dropped"] == [
        "decision contains 'Accept': the worked example's condition, not the goal's; take "
        "conditions from the goal's words",
        "emails contains 'mit.edu': the worked example's condition, not the goal's; take "
        "conditions from the goal's words",
    ]
    fan = {"agent": "extractor", "task": "R.", "query": "'dropout'", "where": copied}
    told = json.loads(_call(actions, "fan_out", fan))
    assert told["documents"] == 1 and len(told["dropped"]) == 2
    # a goal that does say them keeps them ("submitted" does not say "mit")
    ctx.inputs = {"goal": "Accepted papers with an author at MIT (mit.edu)?"}
    kept = json.loads(_call(actions, "search", {"where": copied}))
    assert kept["matches"] == 1 and "dropped" not in kept
    # a condition of the goal's own is never dropped
    ctx.inputs = {"goal": "Which papers mention 'dropout'?"}
    own = json.loads(_call(actions, "search", {"where": [_c("decision", "contains", "Oral")
                                                         .model_dump()]}))  # fmt: skip
    assert own["matches"] == 1 and "dropped" not in own


def test_a_list_fields_values_are_named_by_item(tmp_path: Path) -> None:
    # "emails is one of: cs.cmu.edu, cmu.edu, gmail.com, gmail.com": each record's list
    # was one value, its items in the record's order and repeated
    records = [{"id": "a", "title": "A", "emails": ["gmail.com", "gmail.com"]},
               {"id": "b", "title": "B", "emails": ["cs.cmu.edu", "cmu.edu"]}]  # fmt: skip
    path = tmp_path / "lists.json"
    path.write_text(json.dumps(records))
    corpus = load_corpus(path)
    lists = CorpusView(corpus, SearchIndex(corpus.documents))
    hint = lists.where_else(_c("emails", "==", "mit.edu"), lists.ids)
    assert hint == "emails is one of: cmu.edu, cs.cmu.edu, gmail.com"


def test_a_fan_out_that_leaves_out_a_condition_of_the_goal_gets_it_added(
    view: CorpusView,
) -> None:
    # the 1.5B fanned out over 'reinforcement learning' for "every paper with an author at a
    # google.com address that mentions 'reinforcement learning'", and its table held every
    # RL paper (item-F1 0.57); refused, it gave one sub-agent every document (F1 0.00)
    ctx: Any = _Ctx()
    goal = ("Give me every paper with an author at a google.com address that mentions "
            "'reinforcement learning', with title and citations.")  # fmt: skip
    ctx.inputs = {"goal": goal}
    actions = Actions(ctx, OrchestratorState(), roles=("extractor",), tools=(), corpus=view,
                      check_goal=True)  # fmt: skip
    fan = {"agent": "extractor", "task": "Rows.", "query": "'reinforcement learning'"}
    told = json.loads(_call(actions, "fan_out", fan))
    assert told["documents"] == 1  # p1 only: RL and an author at google.com
    assert told["added"] == ["an author's e-mail at google.com (the goal asks for it; this "
                             "fan-out did not state it)"]  # fmt: skip
    # in where already, or in an earlier search's: nothing added
    google = [{"field": "emails", "op": "contains", "value": "google.com"}]
    assert "added" not in json.loads(_call(actions, "fan_out", {**fan, "where": google}))
    # said only in words (the task): checked by the runtime all the same
    said = json.loads(_call(actions, "fan_out", {**fan, "task": "Rows of google.com authors."}))
    assert said["documents"] == 1 and len(said["added"]) == 1
    json.loads(_call(actions, "search", {"query": "'reinforcement learning'", "where": google}))
    by_ids = json.loads(_call(actions, "fan_out", {"agent": "extractor", "task": "R.",
                                                   "ids": ["p1"]}))  # fmt: skip
    assert "added" not in by_ids  # the search that found the ids had it
    # two domains cannot be one where (its conditions all hold): the task says them
    ctx.inputs = {"goal": "List the papers with an author at cmu.edu or stanford.edu that "
                          "mention 'dropout', with titles."}  # fmt: skip
    ctx.spawned = []
    actions = Actions(ctx, OrchestratorState(), roles=("extractor",), tools=(), corpus=view,
                      check_goal=True)  # fmt: skip
    either = json.loads(_call(actions, "fan_out", {"agent": "extractor", "task": "R.",
                                                   "query": "'dropout'"}))  # fmt: skip
    assert either["added"][0].startswith("an author's e-mail at cmu.edu or stanford.edu")
    assert ctx.spawned[0]["instructions"].startswith(
        "R.\n\nOnly documents with an author's e-mail at cmu.edu or stanford.edu meet"
    )
    # the offline planner's plans are the goal reader's own: not checked
    plain = Actions(ctx, OrchestratorState(), roles=("extractor",), tools=(), corpus=view)
    unchecked = {"agent": "extractor", "task": "R.", "query": "'dropout'"}
    assert "added" not in json.loads(_call(plain, "fan_out", unchecked))


def test_a_table_leaves_out_rows_that_name_no_document(view: CorpusView) -> None:
    from kimmy_swarm.agents.orchestrator.table import TableSpec, assemble

    outputs = [{"rows": [{"title": "Deep RL at scale"}, {"title": "Reinforcement Learning: A "
                                                                  "Survey"}]}]  # fmt: skip
    built = assemble(TableSpec(columns=["title"]), outputs, titles=view.title_keys)
    assert [r["title"] for r in built.rows] == ["Deep RL at scale"] and built.unknown == 1
    assert len(assemble(TableSpec(columns=["title"]), outputs).rows) == 2  # no corpus: as is
