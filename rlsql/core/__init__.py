"""Text, errors, settings and the one write path."""
