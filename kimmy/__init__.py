"""`kimmy_swarm.cli`, the `kimmy` command line: argument parsing, option types, exit codes
and printing.

Each command group is a module under `kimmy_swarm.cli.commands`, loaded when one of its
commands runs (`kimmy_swarm.cli.app.COMMANDS`); the work itself is done by the libraries
(`kimmy_swarm.swarm`, `.agents`, `.rewards`, `.model`). Entry points: the `kimmy` script and
`python -m kimmy_swarm.cli`.
"""

from kimmy_swarm.cli.app import main

__all__ = ["main"]
