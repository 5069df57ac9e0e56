"""DuckDB: every connection rlsql opens, and what a statement records as it runs (rejected lines, bad
cells, damaged files)."""
