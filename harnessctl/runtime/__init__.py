"""runtime room."""
