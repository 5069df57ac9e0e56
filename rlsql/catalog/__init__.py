"""The SQL files of sql/."""
