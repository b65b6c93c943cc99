"""models room."""
