"""Parquet copies of large CSVs and raw-log entries."""
