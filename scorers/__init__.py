"""scorers wing of labrecord (see docs/design.md, Layout)."""
