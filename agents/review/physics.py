"""The physics_researcher's offline procedure: a researcher that reads for measurements.

It finds the quantities a paper states (a number with a physical unit: "13 TeV",
"2.7 K", "4.2×10^-3 eV", "300 nm") and reports the sentences that state them, quoted
exactly, ahead of qualitative results; its notes have the researcher's schema, so the
review's writers and fact-checkers treat them alike (`--researcher physics_researcher`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kimmy_swarm.agents.review._sentence_roles import SentenceRole
from kimmy_swarm.agents.review.procedures import counts_as_result, research_paper, sentence_score
from kimmy_swarm.agents.review.schemas import PaperNotes

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt

_UNITS = (
    "eV|keV|MeV|GeV|TeV|meV|J|kJ|MJ|W|kW|MW|GW|mW|V|kV|mV|A|mA|Ω|ohm|T|mT|G|Hz|kHz|MHz|GHz|"
    "THz|K|mK|°C|Pa|kPa|MPa|GPa|bar|mbar|atm|m|km|cm|mm|μm|um|nm|pm|fm|Å|s|ms|μs|us|ns|ps|fs|"
    "kg|g|mg|mol|N|kN|C|F|pF|nF|μF|Wb|lm|lx|Gy|Sv|Bq|rad|sr|AU|ly|pc|kpc|Mpc|M☉|M_sun|fb-1|"
    "fb⁻¹|pb|barn|b|m/s|km/s|m s-1|cm-3|cm⁻³|m-3|g/cm3|W/m2"
)
#: A number (decimals, signs, ×10^n or e-notation, ± uncertainty) followed by a unit.
QUANTITY = re.compile(
    r"(?<![\w.])[-+−]?\d+(?:[.,]\d+)?(?:\s*(?:±|\+/-)\s*\d+(?:\.\d+)?)?"
    r"(?:\s*(?:[×x*]\s*10\^?[-−]?\d+|[eE][-+]?\d+))?"
    rf"\s?(?:{_UNITS})(?![\w])"
)


def quantities(text: str) -> list[str]:
    """The physical quantities stated in `text`, as written."""
    return [m.group(0).strip() for m in QUANTITY.finditer(text)]


def _physics_score(text: str, relevance: float) -> tuple[float, float]:
    result, contribution = sentence_score(text, relevance)
    return result + 3.0 * len(quantities(text)), contribution


def _physics_result(text: str, role: SentenceRole) -> bool:
    """A result sentence, or any sentence of the paper's own (no background) that states a
    measured quantity ("The array operates at 0.3 K …")."""
    return counts_as_result(text, role) or (role != "background" and bool(quantities(text)))


def research_physics(run: Attempt) -> PaperNotes:
    """Physics researcher: contribution, then the sentences that state measured quantities."""
    notes = research_paper(run, _physics_score, _physics_result)
    found = [q for f in notes.findings for q in quantities(f.passage)]
    return notes.model_copy(update={"terms": list(dict.fromkeys(found))[:6] or notes.terms})


__all__ = ["QUANTITY", "quantities", "research_physics"]
