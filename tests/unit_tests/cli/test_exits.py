"""A SIGTERM that lands while a task group starts a task still stops the command as SIGTERM."""

from __future__ import annotations

import sys

import pytest

from langchain_tag.cli.exits import Terminated, sigterm_as_interrupt


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception groups are Python 3.11's")
def test_an_interrupt_inside_an_exception_group_comes_out_as_itself() -> None:
    group = BaseExceptionGroup("unhandled errors in a TaskGroup", [Terminated()])  # noqa: F821
    with pytest.raises(Terminated), sigterm_as_interrupt():
        raise group
    with pytest.raises(ValueError), sigterm_as_interrupt():
        raise ValueError("not an interrupt")
