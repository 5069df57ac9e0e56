"""`python -m rlsql` runs the CLI ."""

from rlsql.cli.app import main

main()
