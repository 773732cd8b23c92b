"""A click group whose sub-commands are imported on first use."""
from __future__ import annotations

import importlib
from typing import Any

import click


class LazyGroup(click.Group):
    """A group whose sub-commands are imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str, str]] | None = None, package: str = "labrecord.cli", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        self.package = package

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module_name, attr, _ = self.lazy[name]
            module = importlib.import_module(f"{self.package}.{module_name}")
            return getattr(module, attr)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy[name][2]) for name in self.lazy]
        rows += [(name, cmd.get_short_help_str(limit=80)) for name, cmd in self.commands.items()]
        rows.sort()
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
