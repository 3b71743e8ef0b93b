"""`python -m kimmy_swarm.cli`: the same as the `kimmy` script."""

import sys

from kimmy_swarm.cli.app import main

sys.exit(main())
