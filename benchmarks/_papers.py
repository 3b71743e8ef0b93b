"""The ICLR 2017 paper corpus the wide-search benchmarks read (from `../shared`), whole or
its first N usable records written to a temporary file."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAPERS = ROOT.parent / "shared" / "data" / "papers" / "iclr2017_citations_in_2018.json"


def papers_file(tmp: Path, documents: int) -> Path:
    """The shared file when `documents` is 0 or covers it, else its first `documents`
    usable records (the placeholder "No Title" record left out) written into `tmp`."""
    records = [r for r in json.loads(PAPERS.read_text(encoding="utf-8"))
               if r.get("title") != "No Title"]  # fmt: skip
    if not documents or documents >= len(records):
        return PAPERS
    path = tmp / f"papers_{documents}.json"
    path.write_text(json.dumps(records[:documents]), encoding="utf-8")
    return path


__all__ = ["PAPERS", "papers_file"]
