"""The interpreter's own documentation as training text: offline on any machine, used to
train a language model (`model.train`) and the `--tiny` tokenizer (`model.presets`)."""

from __future__ import annotations

import importlib

__all__ = ["DOCSTRING_MODULES", "python_docs_texts"]

#: Modules whose docstrings `python_docs_texts(docstrings=True)` adds: pure-Python, cheap to
#: import, with no side effects.
DOCSTRING_MODULES = (
    "argparse", "collections", "dataclasses", "functools", "itertools", "json", "pathlib",
    "re", "string", "textwrap", "typing",
)  # fmt: skip


def python_docs_texts(*, docstrings: bool = False) -> list[str]:
    """The Python reference topics shipped with the interpreter (~465 KB of English and
    code), so training works offline on any machine; one document per topic.

    Args:
        docstrings: also add the docstrings of a few standard-library modules and of their
            public members (one document per module).
    """
    from pydoc_data.topics import topics

    texts = [topics[name] for name in sorted(topics) if topics[name].strip()]
    if docstrings:
        texts += [doc for name in DOCSTRING_MODULES if (doc := _module_docs(name))]
    return texts


def _module_docs(name: str) -> str:
    module = importlib.import_module(name)
    parts = [module.__doc__ or ""]
    for attr in sorted(getattr(module, "__all__", None) or dir(module)):
        if attr.startswith("_"):
            continue
        doc = getattr(getattr(module, attr, None), "__doc__", None)
        if isinstance(doc, str) and doc.strip():
            parts.append(f"{name}.{attr}: {doc.strip()}")
    return "\n\n".join(p for p in parts if p.strip())
