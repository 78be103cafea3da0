"""`python -m localjudge ...`: the command line."""

from .cli import main

main()
