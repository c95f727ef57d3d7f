"""The ``langchain-tag`` command line: extract, match, run, batch, review, demo, bench.

Models come from :mod:`langchain_tag.local.models`, configured by environment
variables (``LANGCHAIN_TAG_PROVIDER``, ``LANGCHAIN_TAG_BASE_URL``, ...): the
embedded local model by default, or any OpenAI-compatible endpoint.

Errors print one line and exit non-zero; ``--debug`` shows the traceback.
SIGTERM stops a command as Ctrl-C does (exit 143, Ctrl-C 130), and a closed
standard output (``| head``) ends it quietly with 141, as SIGPIPE would.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any, NoReturn

from typing_extensions import override

from langchain_tag import __version__
from langchain_tag.cli.exits import (
    EXIT_INTERRUPTED,
    EXIT_JUDGMENTS_FAILED,
    EXIT_STATUS_HELP,
    EXIT_STDOUT_CLOSED,
    EXIT_TERMINATED,
    Terminated,
    interrupts_watched,
    one_line,
    sigterm_as_interrupt,
    stdout_to_devnull,
)

__all__ = ["EXIT_JUDGMENTS_FAILED", "build_parser", "configure_logging", "main"]


COMMANDS_GROUP = "langchain_tag.commands"
"""Entry-point group of extra subcommands: each is ``add_parser(subparsers)`` (e.g. the benchmark's ``bench``)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (exit status 2)."""

    @override
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    # The commands' modules are imported here, inside main's watch on Ctrl-C, not when this module is.
    from langchain_tag.cli._demo_command import add_demo_command
    from langchain_tag.cli._extract_command import add_extract_command
    from langchain_tag.cli._match_command import add_match_command
    from langchain_tag.cli._run_command import add_run_command
    from langchain_tag.cli.batch import add_batch_commands
    from langchain_tag.cli.review import add_review_command

    parser = _Parser(
        prog="langchain-tag",
        description="Task-Aligned Retrieval: extract rules, match them to inputs, run the executor.",
        epilog="models: set LANGCHAIN_TAG_PROVIDER=openai with LANGCHAIN_TAG_BASE_URL, LANGCHAIN_TAG_API_KEY and\n"
        "  LANGCHAIN_TAG_MODEL for any OpenAI-compatible endpoint; the default is the embedded local model.\n\n"
        + EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    # --debug after the subcommand too; SUPPRESS keeps a subcommand from resetting one given before it.
    common = _Parser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks and debug logs"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_extract_command(sub, common)
    add_match_command(sub, common)
    add_run_command(sub, common)
    add_demo_command(sub, common)
    add_batch_commands(sub, common)
    add_review_command(sub, common)
    _add_plugin_commands(sub)
    return parser


def _add_plugin_commands(sub: Any) -> None:
    """Add the subcommands other installed distributions register (``langchain-tag bench`` from the benchmark)."""
    from importlib.metadata import entry_points

    for entry in entry_points(group=COMMANDS_GROUP):
        try:
            add_parser = entry.load()
        except Exception as exc:  # a broken plugin must not take the CLI down
            logging.getLogger(__name__).warning("cannot load langchain-tag command %r: %s", entry.name, exc)
            continue
        add_parser(sub)


def configure_logging(debug: bool) -> None:
    """Log warnings (with ``--debug``, everything) to stderr, credentials in URLs masked in every record.

    ``--debug`` lets the HTTP clients' INFO logs through (``httpx``, ``openai``), which print each
    request's URL; :func:`~langchain_tag.calls._identity.install_redaction` masks a base URL's
    ``user:pass@`` and ``?api-key=...`` in them, and in every other record, at the root handlers.
    """
    from langchain_tag.calls._identity import install_redaction

    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    install_redaction()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``langchain-tag`` command.

    Returns:
        The exit status: 0, :data:`EXIT_JUDGMENTS_FAILED`, 1 on an error,
        :data:`EXIT_INTERRUPTED` (Ctrl-C), :data:`EXIT_TERMINATED` (SIGTERM) or
        :data:`EXIT_STDOUT_CLOSED` (the reader of standard output went away);
        usage errors exit with 2 (``SystemExit``).
    """
    args: argparse.Namespace | None = None
    with interrupts_watched() as interrupts:  # first: Ctrl-C at any moment ends the command as interrupted
        try:
            args = build_parser().parse_args(argv)
            configure_logging(args.debug)
            with sigterm_as_interrupt():
                code: Any = args.func(args)
        except KeyboardInterrupt as exc:
            interrupts.settle()
            return _interrupted(args, terminated=isinstance(exc, Terminated))
        except BrokenPipeError:
            interrupts.settle()
            # The reader of stdout went away (| head): stop quietly, as a Unix tool SIGPIPE ends.
            stdout_to_devnull()
            return EXIT_STDOUT_CLOSED
        except Exception as exc:
            interrupts.settle()
            if interrupts.seen:  # an interrupt a library turned into an error of its own
                return _interrupted(args, terminated=False)
            if args is not None and args.debug:
                raise
            print(f"langchain-tag: error: {one_line(exc)}", file=sys.stderr)
            return 1
        interrupts.settle()
        if interrupts.seen:  # an interrupt swallowed on the way (a finalizer's): the command did not end whole
            return _interrupted(args, terminated=False)
        return int(code or 0)


def _interrupted(args: argparse.Namespace | None, *, terminated: bool) -> int:
    """Say on one line that the command was stopped and what it kept; the exit status of Ctrl-C or SIGTERM."""
    kept = ""
    if args is not None:
        from langchain_tag.cli.bulk import what_was_kept

        kept = what_was_kept(args)
    stopped = "terminated (SIGTERM)" if terminated else "interrupted"
    print(f"langchain-tag: {stopped}{kept}", file=sys.stderr)
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
