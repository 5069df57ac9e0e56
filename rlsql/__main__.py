"""`python -m rlsql` runs the CLI (its fast path for a plain `query` first, as the console script does)."""

from rlsql.quickcli import main

main()
