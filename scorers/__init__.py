"""scorers wing of labrecord (see DESIGN.md, Layout)."""
