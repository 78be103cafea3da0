"""`python -m localjudge.cli ...`: the command line."""

from . import main

main()
