"""The role of each sentence of an abstract — background, contribution, method, result or
limitation — by cue phrases and position; deterministic, no model.

An abstract moves through its roles in a usual order: what the field knows or lacks
(background), what the paper does (contribution), how (method), what it found (result),
what stays open (limitation). A review quotes a paper's results from its result sentences
only: a background sentence ("Deep reinforcement learning agents have achieved
state-of-the-art results …") is no result of the paper's, whatever words it uses.

`classify` gives every sentence one role; the first rule that applies wins:

1. **limitation** — a limitation cue (`LIMITATION_CUES`: "unstable", "prone to", "remains
   an open/challenging …", "unsolved", "a key (research) challenge", "pose(s) … challenges",
   "fails to", "is limited", "difficult to", "future work", "little is known", "albeit",
   "still far from", …), unless the sentence states the authors' own contribution or result
   ("Our agent outperforms …, a challenging suite …": a result that carries its caveat
   stays a result, with the caveat); or a problem named (`OPEN_PROBLEM_CUES`: "the
   difficulty of training GANs") in a sentence that is no contribution or result and gives
   no reason ("Due to the difficulty in …").
2. **background** — before the paper's first sentence in its own voice ("we", "our
   method", "this paper", "here", "the proposed"): what the field says; later, a sentence
   not in the paper's voice with a background cue ("previous work", "have recently
   become", "are known to").
3. **contribution** — "we propose/introduce/present/develop/study …", "this paper
   presents …", "our contribution", "is proposed".
4. **result** — "we show/demonstrate/find …", "results/experiments show …", "outperforms",
   "achieves", "improves", "reaches", a measured number (84.7%, 10×, "up to 200", "twice").
5. **method** — any other sentence from the paper's voice on ("we train …", "using …").

`caveat_follows` says whether a sentence qualifies the result before it ("These results,
albeit still far from state-of-the-art, …"), so that a result is quoted with its caveat.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

#: The roles, in the order an abstract usually takes them.
SentenceRole = Literal["background", "contribution", "method", "result", "limitation"]
ROLES: tuple[SentenceRole, ...] = ("background", "contribution", "method", "result", "limitation")

#: The paper speaks of itself: the boundary between the field's background and its own work.
#: ("They allow us to harness our knowledge" is no such sentence: only "we" and "our" work.)
_OWN_VOICE = re.compile(
    r"\bwe\b|\bour (?:\w+ )?(?:method|approach|model|algorithm|framework|system|agent|network"
    r"|architecture|technique|results?|experiments?|analysis|findings|evaluation|contributions?"
    r"|work|paper|proposal|idea|solution|regularizers?|loss|objective)s?\b"
    r"|\b(?:this|the present|our) (?:paper|work|study|article|note|thesis)\b|^(?:Here|Herein)\b"
    r"|\bthe proposed\b|\bis (?:proposed|introduced|presented)\b",
    re.IGNORECASE,
)
#: What the field knows or did, said after the paper has begun to speak ("Deep generative
#: models have recently become popular", "previous work has focused on …").
_BACKGROUND_CUES = re.compile(
    r"\b(?:previous|prior|earlier|existing|recent) (?:work|works|research|studies|approaches"
    r"|methods)\b|\bare (?:well |widely )?known to\b|\bhave recently\b|\bin recent years\b"
    r"|\b(?:has|have) (?:long |recently )?(?:been|become|attracted|received|gained)\b",
    re.IGNORECASE,
)
CONTRIBUTION_CUES = re.compile(
    r"\bwe (?:also |further |then |first |now )?(?:propose|introduce|present|develop|describe"
    r"|design|devise|formulate|put forward|offer|contribute|study|investigate|explore"
    r"|consider|address|tackle)\w*"
    r"|\b(?:this|the present|our) (?:paper|work|study|article|note) (?:\w+ )?(?:propose|introduce"
    r"|present|develop|describe|stud(?:y|ies)|investigate|explore|address|consider)\w*"
    r"|\bour (?:main |key )?contributions?\b|\bis (?:proposed|introduced|presented)\b"
    r"|^(?:\S+\s){0,4}provides?\b",
    re.IGNORECASE,
)
RESULT_CUES = re.compile(
    r"\bwe (?:also |further |then |empirically |experimentally )?(?:show|demonstrate|find|found"
    r"|observe|report|achieve|obtain|establish|prove|verify|confirm|corroborate|measure|attain"
    r"|reach)\w*"
    r"|\b(?:results?|experiments?|evaluations?|analys[ie]s|evidence|findings|simulations?"
    r"|benchmarks?|ablations?) (?:\w+ )?(?:show|demonstrate|indicate|suggest|confirm|reveal"
    r"|establish|verify|support)\w*"
    r"|\boutperform\w*|\bsurpass\w*|\bachiev(?:es|ed|ing)\b|\bobtain(?:s|ed)\b|\breach(?:es|ed)\b"
    r"|\bimprov(?:es|ed|ement|ements)\b|\bspeed-?ups?\b|\bshowing that\b|\bleads? to\b"
    r"|\b(?:better|faster|higher|lower|fewer|smaller|more accurate) than\b|\bcompetitive\b"
    r"|\b(?:higher|better|superior|more (?:accurate|efficient|robust|stable)) (?:\w+ )?"
    r"(?:quality|performance|accuracy|samples|results|sample|likelihood|scores?)\b"
    r"|(?<!\bwe )\b(?:demonstrates?|shows|reveals|confirms|indicates) (?:that )?(?:the |our |a )?"
    r"[A-Z]\w*"
    r"|\bcomparable (?:to|with)\b|\bsignificant(?:ly)?\b|\bmatch(?:es|ing)? the\b"
    r"|\bstate[- ]of[- ]the[- ]art\b",
    re.IGNORECASE,
)
#: A number that measures something: a decimal, a percentage, a factor, "up to N", "twice".
MEASURE = re.compile(
    r"\d+\.\d+|\d\s?(?:\\?%|percent\b|x\b|×|\$\\times\$|-?fold\b|times\b)|\bup to \d"
    r"|\b\d+(?:,\d{3})+\b|\b(?:by|of|to|from) \d+\b|\b(?:twice|thrice|half)\b"
    r"|\b(?:one|two|three|four|five|ten) orders? of magnitude\b",
    re.IGNORECASE,
)
LIMITATION_CUES = re.compile(
    r"\b(?:highly |very |notoriously )?unstable\b|\binstabilit(?:y|ies)\b|\bprone to\b"
    r"|\bremains? (?:an? |largely |still )?(?:open|unclear|unknown|unsolved|challenging|difficult"
    r"|elusive|poorly|limited|an? (?:open|challenging|difficult))"
    r"|\bopen (?:question|problem|challenge|issue)s?\b|\bfuture (?:work|research|directions?)\b"
    r"|\blimitations?\b|\b(?:is|are|be|been|remains?) (?:\w+ )?limited\b|\bfail(?:s|ed)? to\b"
    r"|\b(?:is|are|be|been|remains?) (?:\w+ )?(?:difficult|hard|challenging|expensive|costly"
    r"|brittle|impractical|intractable)\b|\b(?:difficult|hard) to\b"
    r"|\blittle is known\b|\bis still (?:an? )?(?:open|unclear|lacking|poorly understood)"
    r"|\bnot (?:yet |well |fully )*understood\b|\bpoorly understood\b|\bsuffers? from\b"
    r"|\b(?:key|main|major|remaining|outstanding|open) (?:\w+ )?challenges?\b"
    r"|\b(?:pose|poses|posed|posing) (?:\w+ ){0,2}challenges?\b"
    r"|\balbeit\b|\bstill far from\b"
    r"|\bshortcomings?\b|\bdrawbacks?\b|\bbottlenecks?\b|\bmiss(?:es|ing)? modes?\b"
    r"|\bmode collapse\b|\bsensitive to\b|\blacks?\b|\black of\b|\bunsolved\b",
    re.IGNORECASE,
)
#: A problem named, not a limitation of a result: "the difficulty of training GANs",
#: "the main difficulties in applying …". Weaker than `LIMITATION_CUES`: it makes no result
#: or contribution sentence a limitation, nor a reason given for what the paper does ("Due
#: to the difficulty in obtaining labels, … is desirable" motivates; it names no problem).
OPEN_PROBLEM_CUES = re.compile(r"(?<!due to the )\bdifficult(?:y|ies) (?:of|in) \w+ing\b", re.I)
#: A sentence that leans on the one before it to qualify it ("These results, albeit …",
#: "However, …"): its caveat belongs with the result it follows.
_QUALIFIES = re.compile(
    r"^(?:These|This|Such|Those|However|But|Still|Yet|Nevertheless|Nonetheless|Unfortunately"
    r"|That said|Although|Though|While)\b"
)
#: Words that open a caveat inside a sentence; `shorten` of a table never cuts one off.
CAVEAT_WORDS = re.compile(
    r"\b(?:albeit|although|though|but|however|except|only|while|whereas|still far|not)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class RoledSentence:
    """One sentence with its role and the rule that gave it."""

    text: str
    role: SentenceRole
    rule: str


def own_voice(text: str) -> bool:
    """Whether the sentence speaks of the paper's own work ("we", "our", "this paper")."""
    return bool(_OWN_VOICE.search(text))


def has_measure(text: str) -> bool:
    """Whether the sentence states a measured number (84.7%, 10×, "up to 200", "twice")."""
    return bool(MEASURE.search(text))


def _role(text: str, before_voice: bool) -> tuple[SentenceRole, str]:
    contribution = bool(CONTRIBUTION_CUES.search(text))
    result = bool(RESULT_CUES.search(text)) or (own_voice(text) and has_measure(text))
    if LIMITATION_CUES.search(text) and not (own_voice(text) and (contribution or result)):
        return "limitation", "limitation cue"
    if OPEN_PROBLEM_CUES.search(text) and not (contribution or result):
        return "limitation", "open problem cue"
    if before_voice:
        return "background", "before the paper's own voice"
    if _BACKGROUND_CUES.search(text) and not own_voice(text):
        return "background", "background cue"
    if contribution:
        return "contribution", "contribution cue"
    if result or has_measure(text):
        return "result", "result cue" if result else "measured number"
    return "method", "the paper's voice, no other cue"


def classify(sentences: Sequence[str]) -> list[RoledSentence]:
    """Each sentence of an abstract (in order) with its role (see the module docstring).

    An abstract that never speaks in its own voice has no background by position: its
    sentences are read from the first on.
    """
    voice = next((i for i, s in enumerate(sentences) if own_voice(s)), 0)
    return [RoledSentence(s, *_role(s, i < voice)) for i, s in enumerate(sentences)]


def caveat_follows(text: str) -> bool:
    """Whether `text`, coming right after a result, qualifies it: it opens by leaning on
    what came before ("These results", "However") and carries a caveat or limitation."""
    return bool(_QUALIFIES.match(text)) and bool(
        LIMITATION_CUES.search(text) or CAVEAT_WORDS.search(text)
    )


def shorten_keeping_caveat(text: str, words: int = 25) -> str:
    """The first `words` words of `text`, or all of it when the cut would drop a caveat
    ("…, albeit still far from state-of-the-art, …" is never cut off)."""
    parts = text.split()
    if len(parts) <= words:
        return " ".join(parts)
    if CAVEAT_WORDS.search(" ".join(parts[words - 1 :])) or LIMITATION_CUES.search(
        " ".join(parts[words - 1 :])
    ):
        return " ".join(parts)
    return " ".join(parts[:words]) + " …"


__all__ = [
    "CAVEAT_WORDS",
    "CONTRIBUTION_CUES",
    "LIMITATION_CUES",
    "MEASURE",
    "OPEN_PROBLEM_CUES",
    "RESULT_CUES",
    "ROLES",
    "RoledSentence",
    "SentenceRole",
    "caveat_follows",
    "classify",
    "has_measure",
    "own_voice",
    "shorten_keeping_caveat",
]
