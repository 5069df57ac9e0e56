"""DuckDB's mechanics (with engine/, the only package that imports it): every connection rlsql opens and its
settings, COPY and Parquet footers, SQL as DuckDB parses it, and what a statement records as it runs (rejected
lines, bad cells, damaged files)."""
