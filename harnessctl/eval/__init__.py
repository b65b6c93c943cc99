"""eval room."""
