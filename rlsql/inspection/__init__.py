"""What runs and the catalogue hold."""
