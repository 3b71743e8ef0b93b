"""How a theme's papers differ in method, in their own words: the method each paper's
contribution sentence names, and one sentence that sets them side by side.

Offline and extractive like the rest of the writer. A method is read off the paper's own
contribution sentence, by the first of these rules that applies:

1. **a named method and what it does** — "We propose the Generative Multi-Adversarial
   Network (GMAN), a framework that extends GANs to multiple discriminators", "… the ALI
   model, which jointly learns …", "MetaQNN, a meta-modeling algorithm … to automatically
   generate …", "The Domain Transfer Network (DTN) we present employs …" → what it does,
   said of the authors, with the name: "extend GANs to multiple discriminators (GMAN)";
2. **a method word and what it does** — "a new technique that combines X with Y", "a method
   to stabilize X by Y", "we propose to equip X with Y" → "combine X with Y";
3. **the contribution's verb and its object** — "investigate a novel training procedure to
   learn a generative model as …", up to where the sentence turns to something else
   ("and demonstrate …", ", where …", "because …").

Only a verb's number changes (to agree with the authors: "extends" → "extend"), first-person
words become third-person ones, and words are left off the end (never inside: a cut falls
before a preposition or a relative clause, outside parentheses); nothing is added but the
method's name in parentheses, which the same sentence gives. An object that points back to
an earlier sentence ("an extension of this framework") names no method.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kimmy_swarm.agents.review._prose import agree, in_third_person, plain_tex


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The verbs a contribution sentence names its method with, in their base form.
_CUE_VERBS = _words(
    "propose introduce present develop describe design devise formulate offer investigate "
    "explore study consider use apply extend train combine build construct employ leverage "
    "tackle formalize compare"
)
_CUE = re.compile(
    r"(?:^|(?<=[\s,]))(?:[Ww]e|[Tt]his (?:paper|work|study|article|document)|[Tt]he present "
    r"(?:paper|work|study))\s+(?:also\s+|further\s+|then\s+|first\s+|now\s+)?"
    r"(?P<verb>[a-z]+)\s+(?=\S)"
)
#: "The Domain Transfer Network (DTN) we present employs …": the name, then what it does.
_NAME_WE = re.compile(
    r"^(?:(?:In|Here)[^,]{0,40},\s+)?(?P<name>(?:The|Our) [^,;:]{3,80}?) we "
    r"(?:present|propose|introduce|describe|develop) (?P<how>[a-z]+s\b.*)$"
)
#: Verbs whose object is the paper's own method, which may then be said by what it does.
_NAMING_VERBS = _words("propose introduce present develop describe design devise offer")
#: Where a contribution sentence ends, whatever its grammar.
_HARD_END = re.compile(r";|---| — | -- |:\s*\(1\)")
#: ", an option corresponding to …": an apposition (no list: no ", and" follows it).
_APPOSITION = re.compile(r",(?=\s+(?:an?|the)\s)(?![^;]*,\s*and\s)")
#: A name with what it does: "NAME, a framework that …", "NAME: a model which …", "NAME,
#: which …", "NAME, an algorithm … to VERB …".
_NAMED = re.compile(
    r"^(?P<name>[^,:;]{1,80}?)(?:[,:] (?P<np>[^,;:]{1,60}?))?,? (?P<link>that|which|to) "
    r"(?P<how>.+)$"
)
#: Words that make a method no more specific than "a method".
_METHOD_WORDS = (
    r"method|technique|framework|approach|algorithm|model|architecture|procedure|regularizer"
    r"|loss|network|agent|system|way|scheme|strategy|estimator|variant|objective|mechanism"
    r"|criterion|formulation"
)
#: "a new technique that combines …", "efficient ways to solve …".
_GENERIC = re.compile(
    r"^(?:an?|the|several|two|three|new|novel|efficient)\b(?: [\w/-]+){0,4}? "
    rf"(?:{_METHOD_WORDS})s?(?: (?:for|of|based on|called) [^,;:]{{1,40}}?)? "
    r"(?P<link>that|which|to) (?P<how>.+)$"
)
#: "propose to equip X with Y": the method is the infinitive's.
_TO_VERB = re.compile(r"^to (?P<how>[a-z]+ .+)$")
#: "an approach to sensorimotor control": a "to" that opens no infinitive.
_TO_NOUN = re.compile(r"\b(?:approach|approaches|contribution|extension|solution)s? to $")
#: Where a sentence turns from its method to something else.
_CLAUSE_END = re.compile(
    r";|---| — | -- |,?\s+(?:and|and then|then)\s+(?:we\s+|they\s+)?(?:also\s+)?"
    r"(?:show|demonstrate|evaluate|validate|find|achieve|apply|obtain|illustrate|compare"
    r"|report|test|present|propose|introduce|train|use)\b"
    r"|\s+(?:because|so that|such that|in order to|which (?:we|they))\b"
    r"|,\s+(?:where|when|while|whereas|which|such|thus|hence|i\.e\.|e\.g\.|in particular"
    r"|currently|including|[a-z]+ing)\b"
)
#: In a method said of the authors, a second verb would not agree ("…, and then leverages").
_SECOND_VERB = re.compile(r",\s+and (?:then )?[a-z]+[^s\W]s\b|\s+and then\b")
#: A cut falls before one of these: what comes before is a whole noun phrase or clause.
_CUT_BEFORE = _words(
    "to for by with in on of that which while from as where when via using through at into about "
    "over under than whose such"
)
#: Words that cannot be a verb saying what a method does (or say it in the passive, or
#: with a modal: not said of the authors).
_NOT_VERBS = _words(
    "is are was were has have had can could may might will would should must be been being "
    "we they it its the a an many this these those such also thus"
)
#: An object that points back to something said before it ("this framework").
_BACK_REFERENCE = re.compile(r"\b(?:this|these|those|such|it|them|their|its)\b", re.IGNORECASE)
#: The same, in words said of the authors ("their" may be their "our").
_POINTS_BACK = re.compile(r"\b(?:this|these|those|such|it|them)\b", re.IGNORECASE)
_ACRONYM = re.compile(r"\(([A-Za-z][\w-]*[A-Z][\w-]*)\)")
_ADVERBS = _words("first then further now")
#: Words a cut never leaves at the end of a method.
_DANGLING = _words(
    "a an the of in on to for with by as at and or such from into via than its their"
)


@dataclass(frozen=True)
class Method:
    """What a paper does, in its words: a verb (base form), what follows it, a name."""

    verb: str
    rest: str
    name: str = ""
    adverb: str = ""

    def said_of(self, subject: str) -> str:
        """The method said of the authors: "Durugkar et al. (2017) extend GANs to multiple
        discriminators (GMAN)"."""
        adverb = f"{self.adverb} " if self.adverb else ""
        name = f" ({self.name})" if self.name and self.name not in self.rest else ""
        return f"{subject} {adverb}{agree(self.verb, subject)} {self.rest}{name}"


def _cut(text: str, pattern: re.Pattern[str]) -> str:
    """`text` up to the first match of `pattern` outside parentheses and quotes."""
    for found in pattern.finditer(text):
        head = text[: found.start()]
        if head.count("(") == head.count(")") and head.count('"') % 2 == 0:
            return head
    return text


def _balanced(words: Sequence[str]) -> bool:
    head = " ".join(words)
    return head.count("(") == head.count(")") and head.count('"') % 2 == 0


def clip(text: str, limit: int = 16) -> str:
    """`text` whole if it has at most `limit` words; else cut before the last word of
    `_CUT_BEFORE` within the limit (or, failing that, the first after it), never inside
    parentheses nor inside "such as"; "" when there is no such place."""
    words = text.split()
    if len(words) > limit:
        places = [
            i
            for i in range(3, len(words))
            if words[i].lower() in _CUT_BEFORE
            and words[i - 1].lower() != "such"
            and _balanced(words[:i])
        ]
        inside = [i for i in places if i <= limit]
        after = [i for i in places if limit < i <= limit + 6]
        at = inside[-1] if inside else (after[0] if after else 0)
        words = words[:at]
    while words and (words[-1].lower().strip(",:") in _DANGLING or words[-1] in {",", ":"}):
        words.pop()
    return " ".join(words).rstrip(" ,:")


def _base(verb: str) -> str:
    """The base form of a third-person verb: "extends" → "extend", "applies" → "apply"."""
    if verb == "does":
        return "do"
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("sses", "shes", "ches", "xes", "zzes")):
        return verb[:-2]
    return verb[:-1]


def _what_it_does(how: str, *, plural: bool, infinitive: bool = False) -> Method | None:
    """What a method does (`how`: "jointly learns X …") as a `Method` of the authors, or
    None where `how` does not open with a verb of the method's that can be said of them."""
    words = _cut(_cut(how, _CLAUSE_END), _SECOND_VERB).split()
    adverb = ""
    if len(words) > 1 and (words[0] in _ADVERBS or re.fullmatch(r"[a-z]{3,}ly", words[0])):
        adverb = words.pop(0)
    if len(words) < 2 or not words[0].isalpha() or not words[0].islower():
        return None
    verb = words[0]
    if verb in _NOT_VERBS or verb.endswith("ing"):
        return None
    if not (infinitive or plural):
        if not re.fullmatch(r"[a-z]+[^su\W]s", verb):
            return None
        verb = _base(verb)
    rest = clip(in_third_person(" ".join(words[1:])), 15)
    return Method(verb, rest, adverb=adverb) if rest else None


def _name(*parts: str | None) -> str:
    """The method's name as the sentence gives it: an acronym it defines ("GMAN"), else a
    capitalised name ("LR-GAN", "Neural Photo Editor"); "" for a plain noun phrase."""
    text = " ".join(p for p in parts if p)
    acronym = _ACRONYM.search(text)
    if acronym:
        return acronym.group(1)
    first = (parts[0] or "").strip()
    first = re.sub(r"^(?:the|a|an) ", "", first, flags=re.IGNORECASE)
    if any(c.isupper() for c in first) and len(first.split()) <= 5:
        return first.strip('"“”')
    return ""


def _named(obj: str) -> Method | None:
    found = _NAMED.match(obj)
    if not found or (found.group("np") is None and found.group("link") != "which"):
        return None
    name = _name(found.group("name"), found.group("np"))
    introduced = found.group("np") is not None and obj[len(found.group("name"))] == ":"
    if not name and not introduced:  # "heuristics: strategies that …" says what they do
        return None
    subject = found.group("np") or found.group("name")
    plural = bool(re.search(r"[^s]s$", subject.split()[-1]))
    method = _what_it_does(
        found.group("how"), plural=plural, infinitive=found.group("link") == "to"
    )
    return Method(method.verb, method.rest, name, method.adverb) if method else None


def _generic(obj: str) -> Method | None:
    found = _GENERIC.match(obj) or _TO_VERB.match(obj)
    if not found or (found.re is _GENERIC and _TO_NOUN.search(obj[: found.start("how")])):
        return None
    infinitive = found.re is _TO_VERB or found.group("link") == "to"
    head = obj[: found.start("how")].split()
    plural = bool(re.search(r"[^s]s$", head[-2] if len(head) > 1 else ""))
    return _what_it_does(found.group("how"), plural=plural, infinitive=infinitive)


def _apposition_cut(text: str) -> str:
    """`text` without an apposition after a noun phrase that names nothing ("…, an option
    corresponding to …"); a named method keeps its own ("GAP, a framework in which …"), and
    a list ("a GAN loss, an f preserving component, and …") is no apposition."""
    for found in _APPOSITION.finditer(text):
        head = text[: found.start()]
        if head.count("(") == head.count(")") and len(head.split()) >= 4 and not _name(head):
            return head
    return text


def _verb_and_object(verb: str, obj: str) -> Method | None:
    """Rule 3: the cue verb with its object, up to where the sentence turns."""
    rest = clip(_apposition_cut(_cut(obj, _CLAUSE_END)))
    if len(rest.split()) < 2:
        return None
    return Method(verb, in_third_person(rest))


def _cue(text: str) -> tuple[str, str] | None:
    """(the base form of the contribution's verb, its object) of a sentence's first "we
    VERB …" or "this paper VERBs …" whose verb names a method."""
    cue = _CUE.search(text)
    while cue:  # "In this paper we introduce …": "this paper" is not the subject, "we" is
        verb = cue.group("verb")
        if not cue.group(0).lower().startswith("we") and verb.endswith("s"):
            verb = _base(verb)
        if verb in _CUE_VERBS:
            obj = text[cue.end() :]
            also = re.match(r"and ([a-z]+) (?=\S)", obj)  # "we propose and investigate X"
            if also and also.group(1) in _CUE_VERBS:
                verb, obj = also.group(1), obj[also.end() :]
            return verb, _cut(obj, _HARD_END)
        cue = _CUE.search(text, cue.start() + 1)
    return None


def method_of(sentence: str) -> Method | None:
    """The method `sentence` (a paper's contribution, in its own words) names, by the rules
    of the module docstring; None where it names none ("We consider an extension of this
    framework in two directions")."""
    text = " ".join(plain_tex(sentence).split()).rstrip(".!")
    text = re.sub(r"\{([^{}]*)\}", r"\1", text)  # "({ReasoNet})" → "(ReasoNet)"
    own = _NAME_WE.match(text)
    if own:
        method = _what_it_does(own.group("how"), plural=False)
        name = _name(own.group("name"))
        return Method(method.verb, method.rest, name, method.adverb) if method else None
    cue = _cue(text)
    if cue is None or _BACK_REFERENCE.search(" ".join(cue[1].split()[:4])):
        return None
    verb, obj = cue
    found = None
    if verb in _NAMING_VERBS:  # "use a recurrent network to …" is how, not what it does
        found = _named(obj) or _generic(obj)
    if found is None or _POINTS_BACK.search(" ".join(found.rest.split()[:4])):
        found = _verb_and_object(verb, obj)
    return None if found and _POINTS_BACK.search(" ".join(found.rest.split()[:4])) else found


__all__ = ["Method", "clip", "method_of"]
