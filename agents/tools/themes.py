"""Themes of a set of documents: TF-IDF, LSA and k-means, labelled by their key phrases.

Terms are stemmed with the shared tokenizer (so "network" and "networks" are one feature)
and shown in their most frequent written form; a theme's `terms` rank them by how much more
weight they have in that theme than in the others. Its `label` names it the way a person
would: by the phrases of two or three words ("policy gradient", "generative adversarial
networks") that its documents' titles share and the other themes' titles do not
(`agents.tools._phrases`); a theme whose titles share none is named by the openings of its
texts, and by its top terms only when those share none either.
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kimmy_swarm.agents.tools._phrases import Phrase, common_words, distinctive_phrases, phrases_of
from kimmy_swarm.agents.tools.corpus import Document
from kimmy_swarm.agents.tools.search import STOPWORDS, stem

__all__ = ["Theme", "default_k", "find_themes"]

LABEL_TERMS = 3
LABEL_PHRASES = 2
TOP_TERMS = 8
#: How much of each text's first paragraph is read for phrases when the titles share none.
_OPENING_CHARS = 200
#: A word more than this share of every theme's documents use is common (see `_names`).
_COMMON = 0.25
_HEADING = re.compile(r"\A\s*#[^\n]*\n")  # a Markdown file's title line opens its text
_MAX_COMPONENTS = 100
_N_INIT = 10


@dataclass(frozen=True, slots=True)
class Theme:
    """A group of documents; `doc_ids` are ordered by closeness to the theme's centre."""

    id: str
    label: str
    terms: tuple[str, ...]
    doc_ids: tuple[str, ...]


def default_k(n: int) -> int:
    """The number of themes for `n` documents: round(sqrt(n / 2)) within [2, 8], at most n;
    one theme below 4 documents."""
    if n < 4:
        return min(n, 1)
    return min(n, max(2, min(8, round(math.sqrt(n / 2)))))


def _analyzer(surfaces: dict[str, Counter[str]]) -> Callable[[str], list[str]]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    stop = STOPWORDS | ENGLISH_STOP_WORDS
    word = re.compile(r"\b[^\W\d_][^\W_]{2,}\b")

    def analyze(text: str) -> list[str]:
        out = []
        for w in word.findall(text.lower()):
            if w not in stop:
                s = stem(w)
                surfaces[s][w] += 1
                out.append(s)
        return out

    return analyze


def _vectorize(texts: list[str]) -> tuple[Any, list[str], list[str]] | None:
    """TF-IDF rows (L2-normalized), the stems, and each stem's most frequent written form."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    n = len(texts)
    for min_df, max_df in ((2, 0.9), (1, 1.0)) if n >= 20 else ((1, 1.0),):
        surfaces: dict[str, Counter[str]] = defaultdict(Counter)
        vectorizer = TfidfVectorizer(
            analyzer=_analyzer(surfaces), sublinear_tf=True, min_df=min_df, max_df=max_df
        )
        try:
            matrix = vectorizer.fit_transform(texts)
        except ValueError:  # no term left at this min_df/max_df
            continue
        stems = list(vectorizer.get_feature_names_out())
        shown = [min(surfaces[s].items(), key=lambda kv: (-kv[1], kv[0]))[0] for s in stems]
        return matrix, stems, shown
    return None


def _cluster(matrix: Any, k: int, seed: int) -> np.ndarray:
    """Cluster labels: k-means on the LSA projection (dense, normalized) of the TF-IDF rows."""
    from sklearn.cluster import KMeans
    from sklearn.decomposition import TruncatedSVD
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.preprocessing import normalize
    from threadpoolctl import threadpool_limits

    n, n_terms = matrix.shape
    components = min(_MAX_COMPONENTS, n_terms - 1, n - 1)
    # One BLAS/OpenMP thread: at corpus sizes (hundreds of documents) threads only add
    # overhead, and under a busy swarm they oversubscribe the cores (10x slower, measured).
    with threadpool_limits(limits=1), warnings.catch_warnings():
        # Fewer distinct documents than k: some clusters stay empty and are dropped below.
        warnings.simplefilter("ignore", ConvergenceWarning)
        if components >= 2:
            svd = TruncatedSVD(n_components=components, random_state=seed)
            points = normalize(svd.fit_transform(matrix))
        else:
            points = matrix.toarray()
        model = KMeans(n_clusters=k, n_init=_N_INIT, random_state=seed).fit(points)
    return model.labels_


def _is_excluded(term: str, shown: str, excluded: set[str]) -> bool:
    return bool({term, shown, stem(shown)} & excluded)


def _ranked_terms(
    centroids: np.ndarray, stems: list[str], shown: list[str], excluded: set[str]
) -> list[list[str]]:
    """Per cluster, terms by weight in the cluster minus mean weight in the other clusters."""
    out = []
    total = centroids.sum(axis=0)
    others = len(centroids) - 1
    for centroid in centroids:
        contrast = centroid - ((total - centroid) / others if others else 0.0)
        order = sorted(range(len(stems)), key=lambda j: (-contrast[j], stems[j]))
        out.append(
            [
                shown[j]
                for j in order
                if centroid[j] > 0 and not _is_excluded(stems[j], shown[j], excluded)
            ]
        )
    return out


def _unique_label(terms: list[str], size: int, used: set[str]) -> str:
    label = " / ".join(terms[:size]) or "(no distinctive terms)"
    extra = size
    while label in used and extra < len(terms):  # swap the last label term for the next one
        label = " / ".join([*terms[: size - 1], terms[extra]])
        extra += 1
    n = 2
    base = label
    while label in used:
        label, n = f"{base} ({n})", n + 1
    return label


def check_grouping(documents: Sequence[Document], k: int | None) -> list[str]:
    """The documents' ids, after the checks every grouping into themes makes.

    Raises:
        ValueError: `k` < 1, or two documents share an id.
    """
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    ids = [d.id for d in documents]
    if len(set(ids)) != len(ids):
        dup = next(i for i, c in Counter(ids).items() if c > 1)
        raise ValueError(f"document id {dup!r} occurs more than once; ids must be unique")
    return ids


def find_themes(
    documents: Sequence[Document],
    *,
    k: int | None = None,
    seed: int = 0,
    exclude_terms: Collection[str] = (),
    background: Sequence[Document] = (),
) -> list[Theme]:
    """Group documents into themes by their titles and texts.

    Args:
        documents: the documents (ids must be unique).
        k: how many themes; default `default_k(len(documents))`; at most one per document.
        seed: the random state of the SVD and of k-means (the result is deterministic).
        exclude_terms: words never used in labels or terms, e.g. the review topic's own
            words (written or stemmed forms both work); a label phrase may contain them,
            but not only them and common words.
        background: a wider set the documents come from (e.g. the whole corpus); a word
            over a quarter of it uses is common, so a phrase of common words only ("neural
            networks" in ICLR papers) names no theme. Without it, a word is common when
            over a quarter of most themes' documents use it.

    Returns:
        Themes sorted by size (largest first) then label, ids "theme-1", "theme-2", ...;
        every document is in exactly one theme. [] for no documents.

    Raises:
        ValueError: `k` < 1, or two documents share an id.
    """
    ids = check_grouping(documents, k)
    n = len(ids)
    if n == 0:
        return []
    n_clusters = 1 if n < 4 else min(k or default_k(n), n)
    vectors = _vectorize([f"{d.title}\n{d.title}\n{d.text}" for d in documents])
    if vectors is None:
        return [Theme("theme-1", "(no distinctive terms)", (), tuple(sorted(ids)))]
    matrix, stems, shown = vectors
    labels = _cluster(matrix, n_clusters, seed) if n_clusters > 1 else np.zeros(n, dtype=int)
    members = [np.flatnonzero(labels == c) for c in sorted(set(labels.tolist()))]
    dense = matrix.toarray()
    centroids = np.vstack([dense[rows].mean(axis=0) for rows in members])
    excluded = {w.lower() for t in exclude_terms for w in str(t).split()}
    excluded |= {stem(w) for w in excluded}
    ranked = _ranked_terms(centroids, stems, shown, excluded)

    names = _names([[documents[i] for i in rows] for rows in members], excluded, background)
    groups: list[tuple[tuple[str, ...], list[str], list[str]]] = []
    for rows, centroid, terms, phrases in zip(members, centroids, ranked, names, strict=True):
        norm = float(np.linalg.norm(centroid)) or 1.0
        closeness = dense[rows] @ centroid / norm
        order = sorted(range(len(rows)), key=lambda i: (-closeness[i], ids[rows[i]]))
        groups.append((tuple(ids[rows[i]] for i in order), terms, phrases))
    return _label(groups)


def _names(
    groups: list[list[Document]], excluded: set[str], background: Sequence[Document]
) -> list[list[str]]:
    """Per group, its distinctive title phrases; for a group whose titles share none, the
    phrases of its texts' openings ([] when those share none either). Phrases made only of
    excluded words and words that most documents use are left out ("deep reinforcement
    learning" in a review of reinforcement learning; "audio files" stays in one of files)."""
    common = common_words([[f"{d.title} {d.text}" for d in docs] for docs in groups], _COMMON)
    if background:
        common |= common_words([[f"{d.title} {d.text}" for d in background]], _COMMON)
    common |= excluded

    def phrases(text: str) -> dict[Phrase, str]:
        return {p: form for p, form in phrases_of(text).items() if not set(p) <= common}

    names = distinctive_phrases([[phrases(d.title) for d in docs] for docs in groups])
    if all(names):
        return names
    openings = [[phrases(_opening(d.text)) for d in docs] for docs in groups]
    return [n or o for n, o in zip(names, distinctive_phrases(openings), strict=True)]


def _opening(text: str) -> str:
    """The first paragraph of a text (its summary line, for a docstring), without a leading
    Markdown title line, at most `_OPENING_CHARS` long."""
    body = _HEADING.sub("", text, count=1).strip()
    return body.split("\n\n", 1)[0][:_OPENING_CHARS]


def _label(groups: list[tuple[tuple[str, ...], list[str], list[str]]]) -> list[Theme]:
    """Themes from (doc_ids, ranked terms, key phrases) groups: distinct labels (the key
    phrases, or the top terms of a group without any), largest theme first."""

    def words(group: tuple[tuple[str, ...], list[str], list[str]]) -> tuple[list[str], int]:
        return (group[2], LABEL_PHRASES) if group[2] else (group[1], LABEL_TERMS)

    groups = sorted(groups, key=lambda g: (-len(g[0]), " / ".join(g[2] or g[1]), g[0][0]))
    labelled: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []
    used: set[str] = set()
    for group in groups:
        label = _unique_label(*words(group), used)
        used.add(label)
        labelled.append((label, tuple(group[1][:TOP_TERMS]), group[0]))
    labelled.sort(key=lambda t: (-len(t[2]), t[0]))
    return [
        Theme(f"theme-{number}", label, terms, doc_ids)
        for number, (label, terms, doc_ids) in enumerate(labelled, 1)
    ]
