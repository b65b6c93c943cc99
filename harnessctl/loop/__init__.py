"""loop room."""
