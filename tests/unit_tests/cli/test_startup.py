"""The command line starts without the modules only some commands need: ``--help`` and ``review`` start fast.

Building the parser needs names (judge predicates, graph modes, executor domains), not the graph, the executors'
chains or LangChain's language-model machinery; the review page needs the extraction's text helpers, not its
pipeline. Each check imports in a fresh interpreter and lists what got loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "langgraph",
    "langchain_core.language_models",
    "langchain_tag.graph",
    "langchain_tag.executors",
    "langchain_tag.extraction._calls",
)


def _loaded_after(code: str) -> list[str]:
    script = f"""
import json, sys
{code}
print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in {HEAVY!r}))))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return sorted({next(h for h in HEAVY if m == h or m.startswith(h + ".")) for m in loaded})


@pytest.mark.parametrize(
    "code",
    [
        "import langchain_tag.cli.main as m; m.build_parser()",
        "import langchain_tag.review",
        "from langchain_tag.extraction._normativity import looks_declarative",
    ],
)
def test_starting_loads_no_heavy_module(code: str) -> None:
    assert _loaded_after(code) == []


def test_the_parser_still_offers_every_mode_domain_and_predicate() -> None:
    from langchain_tag.cli.main import build_parser
    from langchain_tag.executors import EXECUTOR_PROMPTS
    from langchain_tag.graph import MODES
    from langchain_tag.judging.prompts import JUDGE_PROMPTS

    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    run_help, match_help = commands["run"].format_help(), commands["match"].format_help()
    assert all(name in run_help for name in (*MODES, *EXECUTOR_PROMPTS))
    assert all(name in match_help for name in JUDGE_PROMPTS)
    with pytest.raises(SystemExit) as raised:
        build_parser().parse_args(["run", "x", "--rules", "r.jsonl", "--mode", "nearest"])
    assert raised.value.code == 2
    args = build_parser().parse_args(
        ["run", "x", "--rules", "r.jsonl", "--mode", "similarity", "--domain", "code_review"]
    )
    assert (args.mode, args.domain) == ("similarity", "code_review")
