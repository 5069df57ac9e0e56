"""Kept for the modules that still import it (report, cache): everything here is rlsql.writes'."""

from rlsql.writes import atomic_path, refuse_run_folders, write_text

__all__ = ["atomic_path", "refuse_run_folders", "write_text"]
