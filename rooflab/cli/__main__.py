"""`python -m rooflab.cli`: the same as the `rooflab` command."""

from rooflab.cli import main

main()
