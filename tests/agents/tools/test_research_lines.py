"""Themes as lines of research (`agents.tools.research_lines`), on small sets and ICLR 2017."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.agents.tools._line_names import names_alone, seed_name
from kimmy_swarm.agents.tools.corpus import Corpus, Document, load_corpus
from kimmy_swarm.agents.tools.research_lines import (
    GENERIC_TERMS,
    OTHER_WORK,
    is_generic,
    research_lines,
)
from kimmy_swarm.agents.tools.search import SearchIndex, tokenize_terms

ICLR = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "papers"
ICLR_JSON = ICLR / "iclr2017_citations_in_2018.json"
EBGAN = "ryh9pmcee"  # "Energy-based Generative Adversarial Networks" (OpenReview id)

#: Names the old TF-IDF themes gave (issue 37) and others a reader would not keep.
GENERIC_NAMES = (
    "supervised, approach and feature",
    "machine learning",
    "high resolution",
    "neural network architecture",
    "image, present and approach",
    "representations, multiple and unsupervised",
    "state-of-the-art",
)


@pytest.fixture(scope="module")
def iclr() -> Corpus:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    return load_corpus(ICLR_JSON)


def test_generic_names_are_told_from_lines_of_research() -> None:
    for name in GENERIC_NAMES:
        assert is_generic(name), name
    for name in ("energy-based GANs", "imitation learning", "policy gradient", "exploration"):
        assert not is_generic(name), name
    assert is_generic("") and is_generic("the of")


def _paper(i: int, title: str, text: str) -> Document:
    return Document(f"p{i:02d}", title, text)


def _set() -> tuple[list[Document], list[Document]]:
    """Sixteen papers: four on imitation learning, four on policy gradients, eight on other
    things; and a corpus of thirty more around them."""
    papers = [
        _paper(i, f"Imitation learning from demonstrations {i}", "We imitate an expert.")
        for i in range(4)
    ]
    papers += [
        _paper(i, f"Variance of policy gradient estimators {i}", "We reduce variance.")
        for i in range(4, 8)
    ]
    papers += [_paper(8 + i, f"Topic {w}", f"We study {w}.") for i, w in enumerate("abcdefgh")]
    corpus = papers + [
        _paper(20 + i, f"Image classification {i}", "We classify images with networks.")
        for i in range(60)
    ]
    return papers, corpus


def test_themes_are_named_by_phrases_most_of_their_papers_carry() -> None:
    papers, corpus = _set()
    themes = research_lines(papers, background=corpus)
    by_label = {t.label: t for t in themes}
    assert set(by_label) == {"imitation learning", "policy gradient estimators", OTHER_WORK}
    assert sorted(by_label["imitation learning"].doc_ids) == ["p00", "p01", "p02", "p03"]
    assert sorted(by_label[OTHER_WORK].doc_ids) == [f"p{i:02d}" for i in range(8, 16)]
    assert themes[-1].label == OTHER_WORK  # the miscellany comes last
    assert sorted(d for t in themes for d in t.doc_ids) == sorted(d.id for d in papers)
    assert research_lines(papers, background=corpus) == themes  # deterministic
    # The topic's own words name nothing.
    topical = research_lines(papers, background=corpus, exclude_terms=["imitation"])
    assert "imitation learning" not in {t.label for t in topical}


def test_bad_and_degenerate_inputs() -> None:
    assert research_lines([]) == []
    (only,) = research_lines([_paper(0, "A", "b"), _paper(1, "C", "d")])
    assert only.label == OTHER_WORK and sorted(only.doc_ids) == ["p00", "p01"]
    with pytest.raises(ValueError, match="k must be a positive integer or None, got 0"):
        research_lines([_paper(0, "A", "b")], k=0)
    with pytest.raises(ValueError, match="'p00' occurs more than once"):
        research_lines([_paper(0, "A", "b"), _paper(0, "A", "b")])


def _carried(name: str, doc: Document) -> bool:
    """Whether a paper carries a name (either part of "a and b"), as written or, for two
    words, with one word inside ("miss important modes" carries "missing modes")."""
    text = tokenize_terms(f"{doc.title}\n{doc.text}")
    for part in name.split(" and "):
        words = [w for w in tokenize_terms(part) if w not in {"gan", "rl"}]
        if any(text[i : i + len(words)] == words for i in range(len(text) - len(words) + 1)):
            return True
        if len(words) == 2 and any(text[i : i + 3 : 2] == words for i in range(len(text) - 2)):
            return True
    return False


@pytest.mark.parametrize("topic", ["generative adversarial networks", "reinforcement learning"])
def test_iclr_themes_are_named_lines_that_most_of_their_papers_carry(
    iclr: Corpus, topic: str
) -> None:
    from kimmy_swarm.agents.review.tools import build_toolbox

    ids = [h.doc_id for h in SearchIndex(iclr.documents).relevant(topic)]
    themes = build_toolbox(iclr)["find_themes"](doc_ids=ids, topic=topic)
    named = [t for t in themes if t["label"] != OTHER_WORK]
    assert len(named) >= 4
    for t in named:
        assert not is_generic(t["label"]), t["label"]
        carriers = [d for d in t["doc_ids"] if _carried(t["label"], iclr.get(d))]
        assert 2 * len(carriers) > len(t["doc_ids"]), t["label"]
    assert sorted(d for t in themes for d in t["doc_ids"]) == sorted(ids)
    if topic.startswith("generative"):
        energy = next(t for t in named if t["label"] == "energy-based GANs")
        assert EBGAN in energy["doc_ids"]
    else:
        assert "actor-critic" in {t["label"] for t in named}


def _id(corpus: Corpus, title: str) -> str:
    return next(d.id for d in corpus.documents if d.title.startswith(title))


def _iclr_themes(corpus: Corpus, topic: str) -> list[dict]:
    from kimmy_swarm.agents.review.tools import build_toolbox

    ids = [h.doc_id for h in SearchIndex(corpus.documents).relevant(topic)]
    return build_toolbox(corpus)["find_themes"](doc_ids=ids, topic=topic)


@pytest.mark.parametrize("topic", ["generative adversarial networks", "reinforcement learning"])
def test_iclr_themes_are_never_a_lone_generic_word(iclr: Corpus, topic: str) -> None:
    # Issue 37: "density", "mode", "game", "skills", "experience" named themes; a word
    # names one alone only when it names a process or is a compound noun, or (papers the
    # first pass left) when it is a singular noun two of the theme's titles use.
    for t in _iclr_themes(iclr, topic):
        label = t["label"]
        term = (tokenize_terms(label) or [""])[0]
        titled = sum(term in tokenize_terms(iclr.get(d).title) for d in t["doc_ids"])
        late = label.isalpha() and not label.endswith("s") and titled > 1
        assert " " in label or names_alone(label) or late, label


def test_iclr_gan_theme_of_unrolled_and_mode_regularized_gans_names_modes(iclr: Corpus) -> None:
    unrolled = _id(iclr, "Unrolled Generative Adversarial Networks")  # Metz et al.
    regularized = _id(iclr, "Mode Regularized Generative Adversarial")  # Che et al.
    themes = _iclr_themes(iclr, "generative adversarial networks")
    (modes,) = [t for t in themes if unrolled in t["doc_ids"]]
    assert regularized in modes["doc_ids"]
    assert "mode collapse" in modes["label"] and "missing modes" in modes["label"]


def test_iclr_rl_has_an_exploration_line(iclr: Corpus) -> None:
    themes = _iclr_themes(iclr, "reinforcement learning")
    (exploration,) = [t for t in themes if t["label"] == "exploration"]
    for title in ("#Exploration", "Surprise-Based Intrinsic Motivation"):  # Tang, Achiam
        assert _id(iclr, title) in exploration["doc_ids"], title
    labels = {t["label"] for t in themes}
    assert not labels & {"game", "skills", "experience", "first-person RL"}


_NOUN = ("GANs", frozenset(tokenize_terms("generative adversarial networks GAN")))


def _seed(words: str) -> tuple[str, ...]:
    return tuple(tokenize_terms(words))


def test_a_word_seed_is_named_by_the_phrases_that_hold_it() -> None:
    papers = [
        "We solve the common problem of mode collapse.",  # framed as a problem
        "GANs are prone to miss modes; this is the missing modes problem.",
        "We measure how far models miss important modes.",  # an adjective inside
        "We improve mode coverage.",
    ]
    name = seed_name(_seed("mode"), "mode", papers, _NOUN, GENERIC_TERMS)
    assert name == "missing modes and mode collapse"
    # Without a second phrase two papers use or one frames as its problem: no name.
    assert (
        seed_name(_seed("mode"), "mode", [papers[1], papers[3], "Modes."], _NOUN, GENERIC_TERMS)
        == ""
    )
    # One phrase most papers use names the theme alone.
    dense = ["We study density ratio estimation.", "Density ratio estimation in GANs.", "Density."]
    assert seed_name(_seed("density"), "density", dense, _NOUN, GENERIC_TERMS) == (
        "density ratio estimation"
    )
    # A word that names a process or is a compound noun names a theme alone; others don't.
    scattered = ["Count-based exploration.", "Directed exploration bonus.", "Exploration."]
    assert seed_name(_seed("exploration"), "exploration", scattered, _NOUN, GENERIC_TERMS) == (
        "exploration"
    )
    assert names_alone("f-divergence") and names_alone("compression")
    assert not any(names_alone(w) for w in ("game", "mode", "density", "energy-based"))


def test_an_adjective_seed_is_completed_by_the_topic_only_where_papers_write_it_so() -> None:
    ebgan = ["Energy-based Generative Adversarial Networks.", "An energy-based view."]
    assert seed_name(_seed("energy-based"), "energy-based", ebgan, _NOUN, GENERIC_TERMS) == (
        "energy-based GANs"
    )
    doom = ["A first-person shooter game.", "First-person demonstrations."]
    assert seed_name(_seed("first-person"), "first-person", doom, _NOUN, GENERIC_TERMS) == ""


#: Single words a researcher would not name a line of research by (issue 37).
BAD_WORDS = ("game", "skills", "experience", "mode", "density")


@pytest.mark.parametrize(
    "topic", ["reinforcement learning", "generative adversarial networks", "question answering"]
)
def test_iclr_theme_names_are_no_bad_single_word(iclr: Corpus, topic: str) -> None:
    labels = {t["label"].lower() for t in _iclr_themes(iclr, topic)}
    assert not labels & set(BAD_WORDS), labels


def test_iclr_rl_other_work_holds_at_most_a_third_of_the_papers(iclr: Corpus) -> None:
    # The second pass groups what the first leaves by titles and contribution sentences
    # (it held 26 of 52 before it).
    themes = _iclr_themes(iclr, "reinforcement learning")
    total = sum(len(t["doc_ids"]) for t in themes)
    other = next((t for t in themes if t["label"] == OTHER_WORK), {"doc_ids": []})
    assert 3 * len(other["doc_ids"]) <= total, [t["label"] for t in themes]
    dialogue = _id(iclr, "Dialogue Learning With Human-in-the-Loop")
    (line,) = [t for t in themes if dialogue in t["doc_ids"]]
    assert line["label"] != OTHER_WORK


def test_late_names_ask_more_of_a_single_word() -> None:
    from kimmy_swarm.agents.tools._line_names import late_name

    titles = ["Dialogue Learning With Humans", "Learning through Dialogue Interactions"]
    assert late_name(_seed("dialogue"), "dialogue", titles, titles, _NOUN, GENERIC_TERMS) == (
        "dialogue"
    )
    # Not when only one title uses it, nor for a seed not specific to the set.
    one = [titles[0], "Asking questions"]
    assert late_name(_seed("dialogue"), "dialogue", one, one, _NOUN, GENERIC_TERMS) == ""
    assert (
        late_name(_seed("dialogue"), "dialogue", titles, titles, _NOUN, GENERIC_TERMS, alone=False)
        == ""
    )
    # A bare plural names things, not a line; a word after "to" is a verb.
    skills = ["Generalizing Skills with RL", "Feature Spaces to Transfer Skills"]
    assert late_name(_seed("skills"), "skills", skills, skills, _NOUN, GENERIC_TERMS) == ""
    attend = ["Learning to attend in scenes", "Attend, Adapt and Transfer"]
    assert late_name(_seed("attend"), "attend", attend, attend, _NOUN, GENERIC_TERMS) == ""


def _own_words(doc: Document) -> str:
    """A paper's title and the sentences in its own voice (not its background): what it
    does, not what it contrasts with ("unlike model-free methods …")."""
    from kimmy_swarm.agents.review._sentence_roles import classify
    from kimmy_swarm.agents.tools.passages import sentences

    own = [r.text for r in classify([s.text for s in sentences(doc)]) if r.role != "background"]
    return "\n".join([doc.title, *own])


def _written(name: str, text: str) -> bool:
    """Whether a text writes every hyphenated word of a name, with a hyphen or a space
    ("f-divergence", which its terms alone, "divergence", would not tell from "KL
    divergence")."""
    low = text.lower()
    hyphened = [w.lower() for w in name.split() if "-" in w.strip("-")]
    return all(w in low or w.replace("-", " ") in low for w in hyphened)


@pytest.mark.parametrize("topic", ["generative adversarial networks", "reinforcement learning"])
def test_iclr_theme_names_are_carried_by_most_members_own_words(iclr: Corpus, topic: str) -> None:
    # A blind read found "f-divergence" over five papers, three of which do not work on
    # f-divergences; and "model-free RL" over papers that are model-based.
    for t in _iclr_themes(iclr, topic):
        if t["label"] == OTHER_WORK:
            continue
        docs = [iclr.get(d) for d in t["doc_ids"]]
        own = [Document(d.id, d.title, _own_words(d)) for d in docs]
        carriers = [d for d in own if _carried(t["label"], d) and _written(t["label"], d.text)]
        assert 2 * len(carriers) > len(docs), (t["label"], [d.title for d in docs])


def test_iclr_rl_model_based_papers_are_not_named_model_free(iclr: Corpus) -> None:
    from kimmy_swarm.agents.review.tools import focus_sentences

    def says_model_based(doc: Document) -> bool:
        focus = " ".join([doc.title, *focus_sentences(doc)]).lower()
        return "model-based" in focus or "model based" in focus

    themes = _iclr_themes(iclr, "reinforcement learning")
    for t in themes:
        if t["label"].lower().startswith("model-free"):
            based = [d for d in t["doc_ids"] if says_model_based(iclr.get(d))]
            assert 2 * len(based) <= len(t["doc_ids"]), t
    leibfried = _id(iclr, "A Deep Learning Approach for Joint Video Frame and Reward")
    (line,) = [t for t in themes if leibfried in t["doc_ids"]]
    assert line["label"] == "model-based RL"


def test_a_compound_adjective_follows_what_the_papers_focus_says() -> None:
    rl = ("RL", frozenset(tokenize_terms("reinforcement learning RL")))
    texts = [
        "Model-free methods need much data. We present model-based RL.",
        "Unlike model-free agents, our model-based agent plans.",
        "DQN is model-free. We learn a model-based controller.",
    ]
    focus = ["We present model-based RL.", "Our model-based agent plans.", "A model based agent."]
    seed = _seed("model-free")
    assert seed_name(seed, "model-free", texts, rl, GENERIC_TERMS, focus=focus) == (
        "model-based RL"
    )
    # Without the focus sentences nothing tells what the papers do: the seed stays.
    assert seed_name(seed, "model-free", texts, rl, GENERIC_TERMS) == "model-free RL"


def test_a_hyphenated_word_names_only_papers_that_write_it() -> None:
    texts = ["We minimise an f-divergence.", "The KL divergence.", "A divergence we bound."]
    assert seed_name(_seed("divergence"), "f-divergence", texts, _NOUN, GENERIC_TERMS) == ""
    assert (
        seed_name(
            _seed("divergence"),
            "f-divergence",
            [*texts[:1], "Any f-divergence."],
            _NOUN,
            GENERIC_TERMS,
        )
        == "f-divergence"
    )


def test_iclr_members_carry_the_name_where_they_say_what_they_do(iclr: Corpus) -> None:
    # A blind read of 0005900: "Exploration" held MetaQNN (an "ε-greedy exploration
    # strategy" among its method; it designs CNN architectures) and b-GAN sat under
    # "Energy-based GANs" (it repeats density ratio estimation and f-divergence minimization).
    rl = _iclr_themes(iclr, "reinforcement learning")
    metaqnn = _id(iclr, "Designing Neural Network Architectures using Reinforcement")
    (exploration,) = [t for t in rl if t["label"] == "exploration"]
    assert metaqnn not in exploration["doc_ids"]
    assert _id(iclr, "#Exploration") in exploration["doc_ids"]
    gan = _iclr_themes(iclr, "generative adversarial networks")
    (home,) = [t for t in gan if _id(iclr, "b-GAN") in t["doc_ids"]]
    assert home["label"] == "density ratio estimation"


def test_iclr_rl_themes_are_lines_not_the_topic_s_formalism(iclr: Corpus) -> None:
    # A blind read of 0005900: "Decision process" and "Optimization" name no line of
    # research, and other work held 17 of the 52 papers.
    themes = _iclr_themes(iclr, "reinforcement learning")
    labels = {t["label"] for t in themes}
    assert not labels & {"decision process", "optimization"}, labels
    # Kinds of RL its papers name, and a letter compound read as one word.
    assert {"hierarchical RL", "deep Q-learning"} <= labels, labels
    total = sum(len(t["doc_ids"]) for t in themes)
    other = next(t for t in themes if t["label"] == OTHER_WORK)
    assert 10 * len(other["doc_ids"]) <= 3 * total, labels


def test_a_name_names_no_benchmark_nor_the_sets_own_words() -> None:
    from kimmy_swarm.agents.tools._line_names import names_line

    texts = ["We evaluate on Atari games.", "Results on the Atari domain and Doom."]
    common = GENERIC_TERMS | {"reward", "rl"}
    assert not names_line("Atari games", common, texts)  # a benchmark, capitalised always
    assert not names_line("reward value", common, texts)  # the set's own word, a generic one
    assert names_line("model-based RL", common, texts)  # a compound adjective is a term
    assert names_line("exploration", common, texts)
    assert is_generic("decision process") and is_generic("deep networks")
    assert not is_generic("deep Q-networks")  # "Q-" is no stray letter


def test_late_names_a_plural_by_its_activity_never_a_quantity() -> None:
    from kimmy_swarm.agents.tools._line_names import late_name

    titles = ["Learning Locomotion Skills", "Feature Spaces to Transfer Skills"]
    said = [titles[0], f"{titles[1]}. We study learning multiple skills by sharing."]
    assert late_name(_seed("skills"), "skills", titles, said, _NOUN, GENERIC_TERMS) == (
        "learning skills"
    )
    # A phrase headed by a noun of quantity or kind names a container, not a line.
    sets = ["Unsupervised synthesis on a diverse set.", "Thinking in a diverse set of ways."]
    assert late_name(_seed("diverse set"), "diverse set", sets, sets, _NOUN, GENERIC_TERMS) == ""
