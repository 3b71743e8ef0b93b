"""`python -m kimmy`: the same as the `kimmy` script."""

import sys

from kimmy.app import main

sys.exit(main())
