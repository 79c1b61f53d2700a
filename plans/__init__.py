"""Plans and their immutable, approved versions."""
