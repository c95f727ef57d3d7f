"""The core sits at the bottom: it imports nothing of the local runtime, the CLI or the benchmark.

Core modules are everything in ``langchain_tag`` except the parts beside it
(``local``, ``cli``, ``app``: the served graph, whose default models are the local runtime's, ``demo``) and the modules that wrap an extra
(``similarity``: chroma; ``loaders``: langchain-community), which the core
may import only lazily, inside the function that needs them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import langchain_tag

PACKAGE = Path(langchain_tag.__file__).parent
BESIDE = ("langchain_tag.local", "langchain_tag.cli", "langchain_tag.app")
EXTRA_WRAPPERS = (
    "langchain_tag.integrations",
    "langchain_tag.scale.ray_data",
    "langchain_tag.calls._direct",
    "langchain_tag.judging._openai_decisions",
    "langchain_tag.agents",
)
FORBIDDEN_FOR_CORE = (*BESIDE, "langchain_tag_bench")
HEAVY = (
    "chromadb",
    "langchain_chroma",
    "langchain_openai",
    "langchain_community",
    "langchain_text_splitters",
    "langchain_huggingface",
    "sentence_transformers",
    "torch",
    "xllamacpp",
    "platformdirs",
    "ray",
    "jinja2",
    "matplotlib",
    "langchain",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _core_modules() -> dict[str, Path]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {n: p for n, p in modules.items() if not _is_under(n, BESIDE + EXTRA_WRAPPERS)}


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    if top_level_only:  # what a module imports when loaded, and what it imports for type checking alone
        nodes = [n for top in nodes for n in (ast.walk(top) if isinstance(top, ast.If) else [top])]
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_core_modules_exist() -> None:
    core = _core_modules()
    for name in (
        "langchain_tag.rules",
        "langchain_tag.judging.judge",
        "langchain_tag.judging.chat",
        "langchain_tag.judging.decision_judge",
        "langchain_tag.graph",
        "langchain_tag.extraction",
    ):
        assert name in core


def test_core_never_imports_runtime_cli_or_benchmark_even_lazily() -> None:
    offenders = {
        name: sorted(i for i in _imports(path, top_level_only=False) if _is_under(i, FORBIDDEN_FOR_CORE))
        for name, path in _core_modules().items()
    }
    assert {n: i for n, i in offenders.items() if i} == {}


def test_core_imports_extra_wrappers_only_lazily() -> None:
    offenders = {
        name: sorted(i for i in _imports(path, top_level_only=True) if _is_under(i, EXTRA_WRAPPERS + HEAVY))
        for name, path in _core_modules().items()
    }
    assert {n: i for n, i in offenders.items() if i} == {}


def test_no_import_cycle_among_package_modules() -> None:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path, top_level_only=True):
            # "from langchain_tag.x import y" names module x (or x.y when y is a module).
            candidates = [imported, imported.rsplit(".", 1)[0]]
            targets.update(c for c in candidates if c in modules and c != name)
        # A package's __init__ importing its own submodules is not a cycle.
        graph[name] = {t for t in targets if not t.startswith(name + ".")}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, stack: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle.extend(stack[stack.index(nxt) :] + [node, nxt] if nxt in stack else [node, nxt])
                return True
            if nxt not in state and visit(nxt, [*stack, node]):
                return True
        state[node] = 2
        return False

    for node in sorted(graph):
        if node not in state and visit(node, []):
            break
    assert cycle == []


def test_core_runs_the_readme_example_with_runtime_and_extras_blocked() -> None:
    blocked = (*FORBIDDEN_FOR_CORE, *HEAVY)
    script = textwrap.dedent(
        f"""
        import importlib, pkgutil, sys

        BLOCKED = {blocked!r}

        class Blocker:
            def find_spec(self, name, path=None, target=None):
                if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                    raise ImportError("blocked for this test: " + name)
                return None

        sys.meta_path.insert(0, Blocker())
        import langchain_tag
        skip = {(*BESIDE, *EXTRA_WRAPPERS)!r}
        for info in pkgutil.walk_packages(langchain_tag.__path__, "langchain_tag."):
            if not any(info.name == s or info.name.startswith(s + ".") for s in skip):
                importlib.import_module(info.name)

        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate
        from langchain_core.runnables import RunnablePassthrough
        from langchain_tag import ApplicabilityRetriever, Rule, build_tag_graph
        from langchain_tag.testing import FakeChatModel, fake_judge

        rules = [
            Rule(rule_id="R1", rule_name="mutable default argument",
                 condition="a function has a list or dict as a default value",
                 action="use None as the default and create the object inside the function"),
            Rule(rule_id="R2", rule_name="bare except clause", condition="an except clause names no exception class",
                 action="catch the specific exception class"),
        ]
        retriever = ApplicabilityRetriever(llm=fake_judge({{"R1"}}), rules=rules)
        llm = FakeChatModel(respond=lambda prompt: prompt.split("Rules:\\n")[1].split("\\n")[0])
        prompt = ChatPromptTemplate.from_template("Rules:\\n{{context}}\\n\\nCode:\\n{{question}}")
        actions = lambda docs: "\\n".join(d.metadata["action"] for d in docs)
        chain = {{"context": retriever | actions, "question": RunnablePassthrough()}} | prompt | llm | StrOutputParser()
        assert chain.invoke("def add(x, xs=[]): ...") == rules[0].action
        graph = build_tag_graph(FakeChatModel(respond=lambda p: "done"), judge_llm=fake_judge({{"R2"}}),
                                rules=[r.to_document() for r in rules])
        assert [d.metadata["rule_id"] for d in graph.invoke({{"input": "x"}})["retrieved"]] == ["R2"]
        try:
            graph.invoke({{"input": "x", "mode": "similarity"}})
        except ValueError as exc:
            assert "embeddings" in str(exc)
        else:
            raise AssertionError("similarity without embeddings must name what is missing")
        loaded = sorted(m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED))
        assert loaded == [], loaded
        print("core ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "core ok" in done.stdout


LAYERS = (
    (
        "langchain_tag.errors",
        "langchain_tag.rules",
        "langchain_tag.jsonl",
        "langchain_tag.registry",
        "langchain_tag.lazy",
        "langchain_tag.ranges",
    ),
    ("langchain_tag.calls",),
    ("langchain_tag.judging", "langchain_tag.extraction", "langchain_tag.executors"),
    (
        "langchain_tag.retrievers",
        "langchain_tag._retriever_options",
        "langchain_tag._calibrates",
        "langchain_tag._judge_fields",
        "langchain_tag.cascade_retriever",
        "langchain_tag._mode_retrievers",
        "langchain_tag._pipeline_steps",
        "langchain_tag.graph",
        "langchain_tag.integrations",
        "langchain_tag.agents",
    ),
    ("langchain_tag.scale", "langchain_tag.testing", "langchain_tag.review"),
    ("langchain_tag.local", "langchain_tag.cli", "langchain_tag.app"),
)
"""The package's folders and top modules from the bottom up: a module imports nothing of a layer above its own."""


def _layer(name: str) -> int | None:
    found = [i for i, layer in enumerate(LAYERS) if _is_under(name, layer)]
    return found[0] if found else None


def test_every_module_has_a_layer() -> None:
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")} - {"langchain_tag"}
    assert sorted(m for m in modules if _layer(m) is None) == []


def test_no_module_imports_a_layer_above_its_own_at_load_or_for_type_checking() -> None:
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        own = _layer(name)
        if own is None:
            continue
        above = sorted(
            i for i in _imports(path, top_level_only=True) if (layer := _layer(i)) is not None and layer > own
        )
        if above:
            offenders[name] = above
    assert offenders == {}
