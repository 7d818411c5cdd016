"""`python -m helpers.bench`: see helpers/bench/__init__.py for what it measures."""

import sys

from helpers.bench.cli import main

sys.exit(main())
