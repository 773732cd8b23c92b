"""Scene descriptions (MJCF) shipped as package data."""
