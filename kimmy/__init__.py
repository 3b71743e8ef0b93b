"""The `kimmy` command line: argument parsing, option types, exit codes and printing.

Each command group is a module under `kimmy.commands`, loaded when one of its commands runs
(`kimmy.app.COMMANDS`); the work itself is done by the libraries (`swarm`, `agents`,
`rewards`, `model`). Entry points: the `kimmy` script and `python -m kimmy`.
"""

from kimmy.app import main

__all__ = ["main"]
