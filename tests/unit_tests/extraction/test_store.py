from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage

from langchain_tag.cli.main import main
from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.extraction.store import ExtractionStore, StoredReply, call_key
from langchain_tag.rules import load_rules
from langchain_tag.testing import FakeChatModel, fake_extraction_reply, fake_extractor

REPO = Path(__file__).resolve().parents[3]


def _policy(sections: int = 6, edited: int | None = None) -> str:
    parts = []
    for i in range(sections):
        extra = " Managers must countersign and date every such form." if i == edited else ""
        parts.append(
            f"Section {i}\n{'=' * 10}\n\nStaff must file and sign form {i} every day. Visitors should never enter room {i} alone."
            f"{extra}\nRoom {i} was painted blue in 1990.\n"
        )
    return "\n".join(parts)


def _doc(text: str) -> Document:
    return Document(page_content=text, id="policy")


def _rules(result: object) -> list[dict]:
    return [r.model_dump() for r in result.rules]  # type: ignore[attr-defined]


def test_key_depends_on_model_version_phase_and_prompt() -> None:
    messages = [SystemMessage("s"), HumanMessage("h")]
    base = call_key(model="m", phase=1, messages=messages)
    assert base == call_key(model="m", phase=1, messages=[SystemMessage("s"), HumanMessage("h")])
    assert base != call_key(model="m2", phase=1, messages=messages)
    assert base != call_key(model="m", phase=2, messages=messages)
    assert base != call_key(model="m", phase=1, messages=messages, prompt_version="other")
    assert base != call_key(model="m", phase=1, messages=[SystemMessage("s"), HumanMessage("h!")])
    assert base != call_key(model="m", phase=1, messages=[HumanMessage("s"), HumanMessage("h")])


def test_store_survives_reopening(tmp_path: Path) -> None:
    store = ExtractionStore(tmp_path / "sub" / "store.sqlite")
    store.put("k", 1, StoredReply('{"spans": []}', 10, 2))
    store.close()
    again = ExtractionStore(tmp_path / "sub" / "store.sqlite")
    assert again.get("k") == StoredReply('{"spans": []}', 10, 2) and again.get("other") is None
    assert len(again) == 1


def test_second_run_makes_no_call_and_gives_the_same_rules(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    first_llm = fake_extractor()
    first = RuleDocumentTransformer(first_llm, store=path).extract([_doc(_policy())])
    second_llm = fake_extractor()
    second = RuleDocumentTransformer(second_llm, store=path).extract([_doc(_policy())])
    assert first_llm.calls > 0 and second_llm.calls == 0
    assert _rules(second) == _rules(first) and len(first.rules) == 12
    usage = second.report.usage
    assert sum(u.reused for u in usage.values()) == first_llm.calls
    assert "reused from the store" in second.report.summary()


async def test_async_run_reuses_the_sync_runs_store(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    first = RuleDocumentTransformer(fake_extractor(), store=path).extract([_doc(_policy())])
    llm = fake_extractor()
    second = await RuleDocumentTransformer(llm, store=ExtractionStore(path)).aextract([_doc(_policy())])
    assert llm.calls == 0 and _rules(second) == _rules(first)


def test_editing_one_section_re_extracts_only_that_section(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    RuleDocumentTransformer(fake_extractor(), store=path, units_per_call=2).extract([_doc(_policy())])
    llm = fake_extractor()
    edited = RuleDocumentTransformer(llm, store=path, units_per_call=2).extract([_doc(_policy(edited=2))])
    fresh_llm = fake_extractor()
    fresh = RuleDocumentTransformer(fresh_llm, units_per_call=2).extract([_doc(_policy(edited=2))])
    assert _rules(edited) == _rules(fresh)
    # Phases 1-3: exactly the edited section's calls, all of which mention it.
    redone = [p for p in llm.prompts if 'Return {"pairs"' not in p]
    assert all("form 2" in p or "room 2" in p or "Managers" in p for p in redone)
    # Phase 1 and phase 2 for the section; in phase 3 (two units per call) the batch of its two old
    # units is unchanged and reused, only the new unit's batch is sent.
    assert [next(k for k in ("labels", "units", "rules") if f'Return {{"{k}"' in p) for p in redone] == [
        "labels",
        "units",
        "rules",
    ]
    assert "Managers" in redone[2] and "form 2" not in redone[2]
    assert len([p for p in fresh_llm.prompts if 'Return {"pairs"' not in p]) == 6 + 6 + 7  # a run without the store


def test_unparseable_replies_are_not_stored(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    RuleDocumentTransformer(FakeChatModel(respond=lambda t: "no idea")).extract([_doc(_policy(2))])
    RuleDocumentTransformer(FakeChatModel(respond=lambda t: "no idea"), store=path).extract([_doc(_policy(2))])
    assert len(ExtractionStore(path)) == 0
    llm = fake_extractor()
    result = RuleDocumentTransformer(llm, store=path).extract([_doc(_policy(2))])
    assert llm.calls > 0 and len(result.rules) == 4


def test_different_model_does_not_reuse_replies(tmp_path: Path) -> None:
    class OtherModel(FakeChatModel):
        pass

    path = tmp_path / "store.sqlite"
    RuleDocumentTransformer(fake_extractor(), store=path).extract([_doc(_policy(2))])
    other = OtherModel(respond=fake_extraction_reply)
    RuleDocumentTransformer(other, store=path).extract([_doc(_policy(2))])
    assert other.calls > 0


def _prompt_hashes(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_killed_run_resumes_without_redoing_finished_calls(tmp_path: Path) -> None:
    doc = tmp_path / "policy.md"
    doc.write_text(_policy(8), encoding="utf-8")
    store, log, out = tmp_path / "store.sqlite", tmp_path / "calls.log", tmp_path / "rules.jsonl"
    command = [sys.executable, "-m", "tests.helpers.resumable_extraction", str(doc), str(store), str(log), str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(_prompt_hashes(log)) < 12 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not out.exists()
    started = _prompt_hashes(log)
    finished = len(ExtractionStore(store))
    # One call at a time, in order: all but the last one or two started calls were stored.
    assert len(started) - 2 <= finished <= len(started)

    log.unlink()
    rerun = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    redone = _prompt_hashes(log)
    assert not set(redone) & set(started[:finished])  # no finished call was made again

    text = doc.read_text(encoding="utf-8")
    uninterrupted_llm = fake_extractor()
    uninterrupted = RuleDocumentTransformer(uninterrupted_llm, max_concurrency=1, units_per_call=2).extract(
        [Document(page_content=text, id="policy")]
    )
    assert len(redone) == uninterrupted_llm.calls - finished
    assert [r.model_dump() for r in load_rules(out)] == [r.model_dump() for r in uninterrupted.rules]


def test_cli_store_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import langchain_tag.local.models as models

    made: list[FakeChatModel] = []

    def factory(**kwargs: object) -> FakeChatModel:
        made.append(fake_extractor())
        return made[-1]

    monkeypatch.setattr(models, "get_chat_model", factory)
    doc = tmp_path / "policy.md"
    doc.write_text(_policy(2), encoding="utf-8")
    args = ["extract", str(doc), "-o", str(tmp_path / "r.jsonl"), "--store", str(tmp_path / "s.sqlite")]
    assert main(args) == 0 and main(args) == 0
    assert made[0].calls > 0 and made[1].calls == 0

    monkeypatch.setenv("LANGCHAIN_TAG_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["extract", str(doc), "-o", str(tmp_path / "r2.jsonl")]) == 0
    assert (tmp_path / "cache" / "extraction-store.sqlite").is_file()
    assert main(["extract", str(doc), "-o", str(tmp_path / "r3.jsonl"), "--no-store"]) == 0
    assert made[2].calls > 0 and made[3].calls == made[2].calls
