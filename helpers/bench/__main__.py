"""`python -m helpers.bench`: see helpers/bench/__init__.py for what it measures."""

from helpers.bench.report import main

main()
