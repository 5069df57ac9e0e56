"""DuckDB sources, statements and connections; Spark."""
