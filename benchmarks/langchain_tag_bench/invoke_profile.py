"""How much of the package one plain ``invoke`` runs: distinct functions, modules and calls, for each judge.

One :class:`~langchain_tag.ApplicabilityRetriever` over six rules judges one
input, once to warm up and once on an input the cache has not seen, under ``sys.setprofile`` and
``threading.setprofile`` (every thread); every Python function whose file lies in the ``langchain_tag``
package is counted, but for the test fake that answers (``testing.py``), comprehensions and lambdas.
Each of these judges (``--judge``; all by default):

- ``chat``: the chat judge, over the package's fake judge (logprobs on, default settings);
- ``decision``: the decision-model judge, over a fake ``BaseDecisionModel`` (defined here, so not counted);
- ``chat-decision``: a :class:`~langchain_tag.judging.chat_decision_model.ChatDecisionModel` wrapping the fake
  judge (which the retriever judges with as the chat judge, each rule asked as a question);
- ``chat-decision-invoke``: that ``ChatDecisionModel`` invoked itself, as a decision model (an in-memory verdict
  cache, one ``Noul`` question per rule), with no retriever.

Run: ``python -m langchain_tag_bench.invoke_profile [--judge JUDGE] [--list]``.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from langchain_core.decisions import BaseDecisionModel, ClassifierResponse, Noul, NoulAnswer, Question, State

import langchain_tag
from langchain_tag import ApplicabilityRetriever, Rule
from langchain_tag.judging.chat_decision_model import ChatDecisionModel
from langchain_tag.judging.prompts import JUDGE_PROMPTS, rule_question
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.testing import fake_judge

PACKAGE = Path(langchain_tag.__file__).resolve().parent
_INLINE = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>")
"""Code objects that are parts of a function's body (comprehensions, lambdas), not functions of their own."""
_FAKE = Path("testing.py")
"""The fake judge's module: what answers, not what the package runs."""
YES = frozenset({"R1", "R4"})
"""The rules every judge here says YES to."""
JUDGES = ("chat", "decision", "chat-decision", "chat-decision-invoke")
"""The judges profiled: the chat judge, a decision-model judge, ``ChatDecisionModel`` in a retriever and alone."""
_RULE = re.compile(r"^\(rule (\S+)\)$", re.MULTILINE)


class FakeDecisions(BaseDecisionModel):
    """A decision model saying yes (P=0.9) to the questions about :data:`YES` rules, no (P=0.1) to the others."""

    model: str = "fake-decisions"

    @property
    def _provider(self) -> str:
        return "fake"

    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        answers: dict[str, Any] = {}
        for name, question in questions.items():
            assert isinstance(question, Noul) and isinstance(question.instructions, str)
            found = _RULE.search(question.instructions)
            answers[name] = NoulAnswer(type="noul", noul=0.9 if found and found.group(1) in YES else 0.1)
        return ClassifierResponse(model=self.model, answers=answers, usage={"input_tokens": 1, "output_tokens": 1})


def six_rules() -> list[Rule]:
    """Six small rules, two of which the fake judges say YES to."""
    return [
        Rule(rule_id=f"R{i}", rule_name=f"rule {i}", condition=f"the input contains thing {i}", action=f"fix {i}")
        for i in range(1, 7)
    ]


def judge_model(judge: str = "chat") -> Any:
    """The model behind the retriever for one of :data:`JUDGES`."""
    if judge == "chat":
        return fake_judge(YES, with_logprobs=True)
    if judge == "decision":
        return FakeDecisions()
    if judge in ("chat-decision", "chat-decision-invoke"):
        return ChatDecisionModel(llm=fake_judge(YES, with_logprobs=True), cache=InMemoryVerdictCache())
    raise ValueError(f"judge must be one of {', '.join(JUDGES)}, got {judge!r}")


def invoker(judge: str = "chat") -> Callable[[str], Any]:
    """One plain ``invoke`` of an input with one of :data:`JUDGES`: a retriever's, or the decision model's own."""
    model = judge_model(judge)
    if judge != "chat-decision-invoke":
        return ApplicabilityRetriever(llm=model, rules=six_rules()).invoke
    prompt = JUDGE_PROMPTS["applicability"]
    questions = {rule.rule_id: Noul(instructions=rule_question(prompt, rule)) for rule in six_rules()}
    return lambda query: model.invoke({"state": query, "questions": questions})


def profile_invoke(
    query: str = "def f(x=[]): pass", judge: str = "chat"
) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]:
    """Calls per (module, function) of the package during one ``invoke``: in the calling thread, and in all."""
    invoke = invoker(judge)
    invoke(query + " warm-up")
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
        invoke(query)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return counts, everywhere


def main(argv: list[str] | None = None) -> int:
    """Print the distinct functions, modules and calls of one plain ``invoke``, per judge."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", choices=JUDGES, help="profile this judge only (default: all)")
    parser.add_argument("--list", action="store_true", help="list every function with its call count")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*decision.*", category=Warning)  # the beta decision interfaces
    for judge in [args.judge] if args.judge else JUDGES:
        counts, everywhere = profile_invoke(judge=judge)
        print(f"judge {judge}:")
        if args.list:
            for (module, name), n in sorted(everywhere.items()):
                print(f"{n:5d}  {module}:{name}{'' if (module, name) in counts else '  (worker thread)'}")
        for label, found in (("calling thread", counts), ("all threads", everywhere)):
            modules = {module for module, _ in found}
            print(f"  {label}: distinct functions {len(found)}, modules {len(modules)}, calls {sum(found.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
