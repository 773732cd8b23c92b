"""Options and output helpers shared by every command."""
from __future__ import annotations

import csv
import functools
import io
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def output_options(func: F | None = None, *, csv: bool = True, json_help: str = "Print JSON for machines.") -> Any:
    """The output options of every command: ``--json`` (parameter ``as_json``) and, unless
    ``csv=False``, ``--csv`` (``as_csv``); the default is readable text or a table.

    Use bare (``@output_options``) or with arguments
    (``@output_options(csv=False, json_help="Print the summary as JSON.")``).
    """
    def decorate(f: F) -> F:
        if csv:
            f = click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")(f)
        return click.option("--json", "as_json", is_flag=True, help=json_help)(f)

    return decorate(func) if func is not None else decorate


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=False, default=_printable))


def _printable(obj: Any) -> Any:
    """Anything :func:`labrecord.fileio.json_default` cannot convert is printed as its text."""
    from labrecord.fileio import json_default

    try:
        return json_default(obj)
    except TypeError:
        return str(obj)


def format_cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def echo_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> None:
    """A plain-text table on the terminal (rich handles widths and wrapping)."""
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    table = Table(title=title, show_lines=False, header_style="bold")
    cells = [[format_cell(v) for v in row] for row in rows]
    for i, column in enumerate(columns):
        table.add_column(str(column), no_wrap=i == 0)
    for row in cells:
        table.add_row(*row)
    # a table wider than the terminal is printed whole (the terminal wraps its lines)
    # rather than squeezed: a squeezed column cuts its cells, and a cut number reads as another
    console = Console(soft_wrap=False)
    natural = Measurement.get(console, console.options.update_width(100_000), table).maximum
    if natural > console.width:
        console = Console(soft_wrap=False, width=natural)
    console.print(table)


def echo_csv(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    click.echo(buffer.getvalue(), nl=False)


def echo_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], as_json: bool, as_csv: bool, title: str | None = None) -> None:
    """Print rows as JSON records, CSV, or a table."""
    if as_json:
        echo_json([dict(zip(columns, row)) for row in rows])
    elif as_csv:
        echo_csv(columns, rows)
    else:
        echo_table(columns, rows, title=title)


@contextmanager
def progress(total: int | None, description: str) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr when it is a terminal; silent otherwise.

    Yields ``advance(n)``.
    """
    if not sys.stderr.isatty() or total is not None and total <= 1:
        yield _ignore
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.console import Console

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: int = 1) -> None:
            bar.advance(task, n)

        yield advance


def _ignore(n: int = 1) -> None:
    """``advance`` when no bar is shown."""


def follow_symlinks_option(func: F) -> F:
    """Adds ``--follow-symlinks``: read symbolic links inside run folders instead of refusing them.

    Apply directly above the function (below the other options).
    """
    from labrecord.safeio import allow_symlinks

    @functools.wraps(func)
    def wrapper(*args: Any, follow_symlinks: bool = False, **kwargs: Any) -> Any:
        with allow_symlinks(follow_symlinks):
            return func(*args, **kwargs)

    return click.option("--follow-symlinks", is_flag=True,
                        help="Read symbolic links inside run folders (refused by default: a link can reach "
                             "any file on the machine).")(wrapper)  # type: ignore[return-value]
