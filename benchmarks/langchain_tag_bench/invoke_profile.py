"""How much of the package one plain ``invoke`` runs: distinct functions, modules and calls.

One :class:`~langchain_tag.ApplicabilityRetriever` over six rules judges one
input with the package's fake judge (logprobs on, default settings), once
to warm up and once on an input the cache has not seen, under ``sys.setprofile`` and
``threading.setprofile`` (every thread); every Python function whose file lies in the ``langchain_tag``
package is counted, but for the test fake that answers (``testing.py``), comprehensions and lambdas.

Run: ``python -m langchain_tag_bench.invoke_profile``.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import langchain_tag
from langchain_tag import ApplicabilityRetriever, Rule
from langchain_tag.testing import fake_judge

PACKAGE = Path(langchain_tag.__file__).resolve().parent
_INLINE = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>")
"""Code objects that are parts of a function's body (comprehensions, lambdas), not functions of their own."""
_FAKE = Path("testing.py")
"""The fake judge's module: what answers, not what the package runs."""


def six_rules() -> list[Rule]:
    """Six small rules, two of which the fake judge says YES to."""
    return [
        Rule(rule_id=f"R{i}", rule_name=f"rule {i}", condition=f"the input contains thing {i}", action=f"fix {i}")
        for i in range(1, 7)
    ]


def profile_invoke(query: str = "def f(x=[]): pass") -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]:
    """Calls per (module, function) of the package during one ``invoke``: in the calling thread, and in all."""
    retriever = ApplicabilityRetriever(llm=fake_judge({"R1", "R4"}, with_logprobs=True), rules=six_rules())
    retriever.invoke(query + " warm-up")
    counts: Counter[tuple[str, str]] = Counter()
    everywhere: Counter[tuple[str, str]] = Counter()
    caller = threading.get_ident()

    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        try:
            relative = path.resolve().relative_to(PACKAGE)
        except ValueError:
            return
        if relative == _FAKE:
            return
        name = frame.f_code.co_qualname
        if not name.endswith(_INLINE):
            everywhere[(str(relative), name)] += 1
            if threading.get_ident() == caller:
                counts[(str(relative), name)] += 1

    threading.setprofile(tracer)  # the judge's calls run in worker threads: count them too
    sys.setprofile(tracer)
    try:
        retriever.invoke(query)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return counts, everywhere


def main(argv: list[str] | None = None) -> int:
    """Print the distinct functions, modules and calls of one plain ``invoke``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list every function with its call count")
    args = parser.parse_args(argv)
    counts, everywhere = profile_invoke()
    if args.list:
        for (module, name), n in sorted(everywhere.items()):
            print(f"{n:5d}  {module}:{name}{'' if (module, name) in counts else '  (worker thread)'}")
    for label, found in (("calling thread", counts), ("all threads", everywhere)):
        modules = {module for module, _ in found}
        print(f"{label}: distinct functions {len(found)}, modules {len(modules)}, calls {sum(found.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
