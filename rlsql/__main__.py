"""`python -m rlsql` runs the CLI."""

from rlsql.cli import main

main()
