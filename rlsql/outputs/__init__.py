"""What rlsql writes and prints."""
