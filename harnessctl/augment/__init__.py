"""augment room."""
