"""Run folders and what they hold."""
