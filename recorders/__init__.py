"""recorders wing of labrecord (see DESIGN.md, Layout)."""
