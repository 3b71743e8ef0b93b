"""The orchestrator's tools over the corpus — `search`, `fan_out` over a query, ids or the
whole corpus — and `finish` with a table assembled from sub-agents' rows by reference."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kimmy_swarm.agents.orchestrator.actions import Actions
from kimmy_swarm.agents.orchestrator.corpus_view import CorpusView, chunks
from kimmy_swarm.agents.orchestrator.state import OrchestratorState
from kimmy_swarm.agents.orchestrator.table import TableSpec, assemble
from kimmy_swarm.agents.orchestrator.tools import CORPUS_TOOLS, TOOLS
from kimmy_swarm.agents.tools.corpus import load_corpus
from kimmy_swarm.agents.tools.search import SearchIndex
from kimmy_swarm.swarm import ApprovalPolicy
from kimmy_swarm.swarm.llm.types import FunctionCall, ToolCall
from kimmy_swarm.swarm.schema import SubtaskResult, SubtaskStatus

RECORDS = [
    ("a1", "Dropout as regularization", "We study dropout in deep nets."),
    ("a2", "Attention for translation", "An attention model; no dropout-free baseline."),
    ("a3", "Memory networks", "Networks with an external memory."),
    ("a4", "GANs for images", "Generative adversarial networks (GAN) make images."),
    ("a5", "Dropouts galore", "Plural forms only: dropouts."),
    ("a6", "Batch normalization", "Normalizing activations speeds up training."),
]


@pytest.fixture
def view(tmp_path: Path) -> CorpusView:
    path = tmp_path / "c.jsonl"
    lines = [json.dumps({"id": i, "title": t, "abstract": a, "authors": ["A B"]})
             for i, t, a in RECORDS]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    corpus = load_corpus(path)
    return CorpusView(corpus, SearchIndex(corpus.documents))


class Ctx(SimpleNamespace):
    """The part of a `SubtaskContext` the tools use: spawn, and finished results."""

    def __init__(self) -> None:
        super().__init__(
            inputs={"goal": "g"},
            instructions="g",
            spawned=[],
            approval_policy=ApprovalPolicy(),
            results={},
        )

    def spawn(self, subtasks: list[dict[str, Any]]) -> None:
        self.spawned += subtasks

    async def wait(self, ids: list[str], **_: Any) -> dict[str, Any]:
        return {k: self.results[k] for k in ids if k in self.results}


def _actions(view: CorpusView | None) -> Actions:
    ctx: Any = Ctx()
    return Actions(ctx, OrchestratorState(), roles=("extractor",), tools=("read_document",),
                   corpus=view)  # fmt: skip


def _run(actions: Actions, name: str, arguments: dict[str, Any]) -> Any:
    call = ToolCall(id="c1", function=FunctionCall(name=name, arguments=json.dumps(arguments)))
    return asyncio.run(actions.run(call))


def test_corpus_tools_are_offered_with_a_corpus_only(view: CorpusView) -> None:
    assert list(_actions(view).toolbox) == list(TOOLS)
    assert not CORPUS_TOOLS & set(_actions(None).toolbox)
    refused = _actions(None)
    assert _run(refused, "search", {"query": "x"}).text.startswith("error: unknown tool 'search'")


def test_search_counts_matches_and_quoted_phrases_keep_only_whole_word_holders(
    view: CorpusView,
) -> None:
    actions = _actions(view)
    found = json.loads(_run(actions, "search", {"query": "dropout", "limit": 1}).text)
    assert found["matches"] == 3 and len(found["shown"]) == 1  # BM25 stems: "dropouts" too
    every = json.loads(_run(actions, "search", {"query": "dropout"}).text)["shown"]
    assert {"id": "a1", "title": "Dropout as regularization"} in every
    assert sorted(d["id"] for d in every) == ["a1", "a2", "a5"]
    quoted = json.loads(_run(actions, "search", {"query": "'dropout'"}).text)
    # a2 says "dropout-free" (a hyphen ends the word: it holds "dropout"); a5 only "dropouts".
    assert sorted(d["id"] for d in quoted["shown"]) == ["a1", "a2"]
    either = json.loads(_run(actions, "search", {"query": "'GAN' or \"memory\""}).text)
    assert sorted(d["id"] for d in either["shown"]) == ["a3", "a4"]


def test_fan_out_over_a_query_ids_or_the_corpus_without_listing_them(view: CorpusView) -> None:
    actions = _actions(view)
    out = _run(actions, "fan_out", {"agent": "extractor", "task": "Rows.", "query": "'dropout'",
                                    "per_task": 1, "inputs": {"k": 1},
                                    "with_documents": False})  # fmt: skip
    told = json.loads(out.text)
    assert told == {"task_ids": ["t1", "t2"], "documents": 2, "tasks": 2}
    assert [s["inputs"] for s in actions.ctx.spawned] == [
        {"k": 1, "doc_ids": ["a1"]}, {"k": 1, "doc_ids": ["a2"]}
    ]  # fmt: skip
    with_docs = _actions(view)  # by default each task gets its documents themselves too
    _run(with_docs, "fan_out", {"agent": "extractor", "task": "R.", "ids": ["a1", "a3"]})
    (spawned,) = with_docs.ctx.spawned
    assert spawned["inputs"] == {"doc_ids": ["a1", "a3"], "documents": [
        {"id": "a1", "title": "Dropout as regularization"},
        {"id": "a3", "title": "Memory networks"}]}  # fmt: skip
    # the task, the swarm's goal in the user's words, then the documents
    assert spawned["instructions"].startswith("R.\n\nThe swarm's goal, in the user's words")
    assert "the document shows): g\n\nYour documents are below" in spawned["instructions"]
    assert spawned["instructions"].endswith(
        "Document 2 of 2 (id a3)\ntitle: Memory networks\nauthors: A B\n"
        "text: Networks with an external memory."
    )
    over_all = {"agent": "extractor", "task": "Rows.", "all_documents": True, "tasks": 4}
    whole = json.loads(_run(actions, "fan_out", over_all).text)
    assert whole["documents"] == 6 and whole["tasks"] == 4
    sizes = [len(s["inputs"]["doc_ids"]) for s in actions.ctx.spawned[2:]]
    assert sizes == [2, 2, 1, 1]
    listed = _run(actions, "fan_out", {"agent": "extractor", "task": "R.", "ids": ["a3", "a3"]})
    assert json.loads(listed.text)["documents"] == 1  # repeats once
    bad = _run(actions, "fan_out", {"agent": "extractor", "task": "R.", "ids": ["zz"]})
    assert bad.text == "error: unknown document ids ['zz']: search finds the ids"
    both = _run(actions, "fan_out", {"agent": "extractor", "task": "R.", "query": "x",
                                     "all_documents": True})  # fmt: skip
    assert "exactly one of query, ids or all_documents" in both.text
    none = _run(actions, "fan_out", {"agent": "extractor", "task": "R.", "query": "'zebra'"})
    assert none.text.startswith("error: no document matches the query")
    assert _run(actions, "fan_out", {"agent": "nobody", "task": "R.", "query": "memory"}
                ).text.startswith("error: unknown agent 'nobody'")  # fmt: skip


def test_chunks_split_evenly_or_by_size() -> None:
    assert chunks(list("abcde"), per_task=2, tasks=None) == [["a", "b"], ["c", "d"], ["e"]]
    assert chunks(list("abcde"), per_task=2, tasks=2) == [["a", "b", "c"], ["d", "e"]]
    assert chunks(list("ab"), per_task=None, tasks=9) == [["a"], ["b"]]
    assert chunks([], per_task=3, tasks=None) == []


def _done(key: str, output: Any) -> SubtaskResult:
    return SubtaskResult(id=key, role="extractor", status=SubtaskStatus.DONE, output=output)


def test_finish_assembles_the_table_from_the_rows_by_reference(view: CorpusView) -> None:
    actions = _actions(view)
    _run(actions, "fan_out", {"agent": "extractor", "task": "R.", "all_documents": True,
                              "tasks": 3})  # fmt: skip
    early = _run(actions, "finish", {"table": {"columns": ["title"]}})
    assert early.text.startswith("error: tasks ['t1', 't2', 't3'] have not finished")
    actions.ctx.results.update({
        "t1": _done("t1", {"rows": [{"Title": "Memory networks", "citations": 3},
                                    {"title": "GANs for images", "citations": "12"}]}),
        "t2": _done("t2", {"rows": [{"title": "gans  FOR images", "citations": 99},  # a repeat
                                    {"title": "An imagined paper", "citations": 7}]}),
        "t3": _done("t3", {"rows": []}),
    })  # fmt: skip
    out = _run(
        actions,
        "finish",
        {
            "answer": "Two papers.",
            "table": {
                "columns": ["title", "citations"],
                "sort_by": "citations",
                "descending": True,
            },
        },
    )
    assert json.loads(out.text) == {"finished": True, "rows": 2, "repeats_dropped": 1,
                                    "failed_tasks": 0, "rows_naming_no_document": 1}  # fmt: skip
    assert actions.state.answer == (
        "Two papers.\n\n| title | citations |\n|---|---|\n| GANs for images | 12 |\n"
        "| Memory networks | 3 |\n"
    )
    neither = _run(_actions(view), "finish", {})
    assert "give the answer text, or a table to assemble" in neither.text


def test_a_table_spec_names_its_columns_as_headers_do() -> None:
    spec = TableSpec(columns=["Title", "First author"], dedup_by="title")
    assert spec.columns == ["title", "first_author"] and spec.dedup_by == "title"
    with pytest.raises(ValueError, match="sort_by 'rating' is not one of the columns"):
        TableSpec(columns=["title"], sort_by="rating")
    table = assemble(TableSpec(columns=["title"]), [{"rows": [{"title": ""}, {"x": 1}]}, "text"])
    assert table.rows == [] and table.dropped == 2 and table.outputs == 2
    judged = [{"rows": [{"meets": False, "title": "x"}, {"meets": True, "title": "y"}]}]
    assert assemble(TableSpec(columns=["title"]), judged).rows == [{"title": "y"}]


def test_a_created_extractor_may_report_only_rows_of_its_documents(tmp_path: Path) -> None:
    """A row naming a paper the sub-agent was not given is invalid: the repair turn shows
    it its documents' titles; rows not one per document fail the task."""
    from kimmy_swarm.agents.orchestrator import SolveConfig, run_solve
    from tests.support.orchestration import orchestration

    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"id": i, "title": t, "abstract": a})
                              for i, t, a in RECORDS) + "\n")  # fmt: skip
    created = {"name": "finder", "system_prompt": "Report the rows of papers on dropout.",
               "output_columns": ["title"]}  # fmt: skip
    fan = {"agent": "finder", "task": "Rows.", "ids": ["a1", "a3"], "per_task": 1}
    seen: list[str] = []

    def finder(task: str, inputs: dict[str, Any], messages: list[dict[str, Any]]) -> Any:
        seen.append(messages[-1]["content"])
        if inputs["doc_ids"] == ["a1"] and len(messages) > 2:  # the repair turn
            return {"rows": [{"meets": True, "title": "Dropout as regularization"}]}
        if inputs["doc_ids"] == ["a3"] and len(messages) > 2:  # a row too many
            return {"rows": [{"meets": False, "title": "Memory networks"}] * 2}
        return {"rows": [{"meets": True, "title": "Imagined paper"}]}

    model = orchestration(
        [[("create_subagent", created), ("fan_out", fan), ("wait", {"ids": "all"})],
         [("finish", {"table": {"columns": ["title"]}})]],
        subagent=finder,
    )  # fmt: skip
    out = run_solve(SolveConfig(goal="Find dropout papers", out=tmp_path / "o", corpus=path,
                                model=model))  # fmt: skip
    assert out.answer == "| title |\n|---|\n| Dropout as regularization |\n"
    repair = next(text for text in seen if text.startswith("Your answer is invalid"))
    assert "'Imagined paper' is not the title of one of your documents" in repair
    assert "'Dropout as regularization'" in repair
    assert any("finder" in p and "still invalid" in p and "2 rows for 1 documents" in p
               for p in out.problems)  # fmt: skip


def test_a_task_shows_each_field_of_its_documents_on_a_line(tmp_path: Path) -> None:
    """Fields joined on one line were copied whole as one value by a small model."""
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"id": "p", "title": "T", "abstract": "A.", "authors": ["X Y"],
                                "decision": "Accept (Poster)", "citations": 7}) + "\n")  # fmt: skip
    corpus = load_corpus(path)
    text = CorpusView(corpus, SearchIndex(corpus.documents)).as_text(["p"])
    assert text == ("Document 1 of 1 (id p)\ntitle: T\nauthors: X Y\ndecision: Accept (Poster)\n"
                    "citations: 7\ntext: A.")  # fmt: skip


def test_a_fan_out_tasks_rows_pin_the_cells_the_records_hold(tmp_path: Path) -> None:
    """The rows brief: a task given its documents answers one row per document, in order,
    under a schema whose record cells (title, citations) are `const` — the model decides
    `meets` and the columns no record holds — and is offered no tools."""
    from kimmy_swarm.agents.orchestrator import SolveConfig, run_solve
    from tests.support.orchestration import is_orchestrator, orchestration

    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"id": i, "title": t, "abstract": a, "citations": n})
                              for n, (i, t, a) in enumerate(RECORDS)) + "\n")  # fmt: skip
    created = {"name": "finder", "system_prompt": "Report the rows of papers on dropout.",
               "output_columns": ["title", "citations", "why"]}  # fmt: skip
    fan = {"agent": "finder", "task": "Rows.", "ids": ["a1", "a3"], "per_task": 2}

    def finder(task: str, inputs: dict[str, Any], messages: list[dict[str, Any]]) -> Any:
        return {"rows": [{"title": d["title"], "citations": d["citations"], "why": "dropout",
                          "meets": d["id"] == "a1"} for d in inputs["documents"]]}  # fmt: skip

    model = orchestration(
        [[("create_subagent", created), ("fan_out", fan), ("wait", {"ids": "all"})],
         [("finish", {"table": {"columns": ["title", "citations"]}})]],
        subagent=finder,
    )  # fmt: skip
    out = run_solve(SolveConfig(goal="Find dropout papers", out=tmp_path / "o", corpus=path,
                                model=model))  # fmt: skip
    assert out.answer == "| title | citations |\n|---|---|\n| Dropout as regularization | 0 |\n"
    [(_, options)] = [c for c in model.calls if not is_orchestrator(c[1])]
    assert not options.get("tools")
    rows = options["response_format"]["json_schema"]["schema"]["properties"]["rows"]
    assert rows["minItems"] == rows["maxItems"] == 2 and rows["items"] is False
    first, second = (r["properties"] for r in rows["prefixItems"])
    assert first["title"] == {"const": "Dropout as regularization"}
    assert first["citations"] == {"const": 0} and second["citations"] == {"const": 2}
    assert first["meets"] == {"type": "boolean"} and list(first)[-1] == "meets"
    assert "const" not in first["why"]  # no record holds it: the model writes it


def test_a_search_repeated_turn_after_turn_is_said_to_be_a_repeat_and_stops_the_run(
    tmp_path: Path,
) -> None:
    """The 0.5B made one search nine turns in a row (its answer cannot change) until the
    turn limit: the repeat is now said in the answer, and such turns count as idle."""
    from kimmy_swarm.agents.orchestrator import ORCHESTRATOR_ID, SolveConfig, run_solve
    from kimmy_swarm.agents.orchestrator.actions import REPEATED_SEARCH
    from kimmy_swarm.agents.orchestrator.agent import MAX_IDLE_TURNS
    from kimmy_swarm.swarm.store import RunStore
    from tests.support.orchestration import orchestration

    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"id": i, "title": t, "abstract": a})
                              for i, t, a in RECORDS) + "\n")  # fmt: skip
    search = ("search", {"query": "'dropout'"})
    model = orchestration([[search, search]], subagent=lambda *_: {})
    out = run_solve(SolveConfig(goal="Find dropout papers", out=tmp_path / "o", corpus=path,
                                model=model, runs_dir=tmp_path / "r", max_turns=20))  # fmt: skip
    assert out.status != "completed"
    assert f"{MAX_IDLE_TURNS} turns in a row without one successful tool call" in out.answer
    with RunStore(tmp_path / "r", create=False) as store:
        turns = store.load_run(out.run_id).turns[ORCHESTRATOR_ID]
    answers = [json.loads(m["content"]) for t in turns for m in t.messages if m["role"] == "tool"]
    assert len(answers) == 2 * (1 + MAX_IDLE_TURNS)  # not on to the turn limit (20)
    assert "repeated" not in answers[0] and "repeated" not in answers[1]  # one turn: no repeat
    assert answers[2]["repeated"] == REPEATED_SEARCH.format(turn=1)
    assert answers[2]["matches"] == answers[0]["matches"] > 0


@pytest.mark.parametrize(("context", "compact"), [(4_096, True), (8_192, False)])
def test_a_model_with_a_small_context_gets_the_compact_opening(
    tmp_path: Path, context: int, compact: bool
) -> None:
    """SmolLM2 (4,096 tokens) was sent an opening of 4,051 tokens and could take no turn:
    where the whole opening would take more than `OPENING_SHARE` of the context, the
    worked example and the assign tools are left out."""
    from kimmy_swarm.agents.orchestrator import SolveConfig, run_solve
    from kimmy_swarm.agents.orchestrator.prompts import COMPACT_ORCHESTRATOR_PROMPT, EXAMPLE_GOAL
    from kimmy_swarm.swarm.llm import ScriptedChat
    from kimmy_swarm.swarm.llm.types import ChatResponse
    from kimmy_swarm.swarm.schema import Usage
    from tests.support.orchestration import is_orchestrator

    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"id": i, "title": t, "abstract": a})
                              for i, t, a in RECORDS) + "\n")  # fmt: skip
    asked: list[tuple[list[dict[str, Any]], list[str]]] = []

    def step(messages: list[dict[str, Any]], options: dict[str, Any]) -> ChatResponse:
        assert is_orchestrator(options)
        asked.append((messages, [t["function"]["name"] for t in options["tools"]]))
        finish = {"id": "c", "type": "function",
                  "function": {"name": "finish", "arguments": '{"answer": "none"}'}}  # fmt: skip
        return ChatResponse(tool_calls=[finish], finish_reason="tool_calls",
                            usage=Usage(prompt_tokens=900, completion_tokens=9,
                                        total_tokens=909, model_calls=1))  # fmt: skip

    out = run_solve(SolveConfig(goal="Find dropout papers", out=tmp_path / "o", corpus=path,
                                model=ScriptedChat.always(step), context_tokens=context,
                                runs_dir=tmp_path / "r"))  # fmt: skip
    assert out.status == "completed", out.answer
    messages, tools = asked[0]
    shown_example = any(EXAMPLE_GOAL in str(m.get("content")) for m in messages)
    assert shown_example is not compact
    assert ("assign_task" in tools) is not compact and "fan_out" in tools
    assert (messages[0]["content"] == COMPACT_ORCHESTRATOR_PROMPT) is compact
    assert "Goal: Find dropout papers" in messages[-1]["content"]
