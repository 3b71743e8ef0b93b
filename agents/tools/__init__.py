"""Tools sub-agents call: corpus loading, search, passages, claim checking, themes, the Python
sandbox, datasets, statistics, plots and the HTML report builder.

Each lives in its own module (`agents.tools.corpus`, `agents.tools.sandbox`, ...), imported
on use: they bring pandas, scikit-learn, matplotlib and bm25s, which
`import kimmy_swarm.agents` does not.
"""

__all__: list[str] = []
