"""The rule model: an atomic condition -> action pair traceable to its source.

A :class:`Rule` converts losslessly to and from a LangChain
:class:`~langchain_core.documents.Document` whose metadata holds only scalars
(so it can be stored in Chroma), and a rule set converts to and from a JSONL
file, one rule per line.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from langchain_tag.errors import RuleFileError
from langchain_tag.jsonl import JsonLineError, json_lines

__all__ = [
    "DocumentContent",
    "Rule",
    "RuleFileError",
    "check_unique_rule_ids",
    "load_rules",
    "rule_documents",
    "rule_extras",
    "rules_from_documents",
    "rules_to_jsonl",
    "save_rules",
]

# Metadata keys whose values are lists: tags are stored comma-separated (as the
# spec asks); lists of free text, which may contain commas, are stored as JSON.
_TAG_KEYS = ("category_tags",)
_JSON_LIST_KEYS = ("conflicts_with", "related_rules", "merged_from")
_TAG_SEPARATOR = ", "

DocumentContent = Literal["action", "search"]
"""What a rule ``Document``'s ``page_content`` holds (see :meth:`Rule.to_document`)."""


class Rule(BaseModel):
    """One atomic, checkable rule.

    The first six fields are the method's rule schema; the provenance fields
    say where the rule came from. Any other field (a domain schema's
    ``primary_tag`` or ``does_not_apply_to``, a user's ``severity`` or
    ``url``) is kept as an extra field (``rule.model_extra``), travels with
    the rule through documents and rule files, and is ignored by the core.

    Attributes:
        rule_id: Unique id within a rule set, e.g. ``"R-001"``.
        rule_name: Three to eight distinctive words.
        condition: A state of the task input, checkable by reading the input.
        action: A concrete operation the executor can carry out.
        source_text: The verbatim span of the source document behind the rule.
        category_tags: One to three short tags, used to group rules for dedup.
        document_id: Id of the source document.
        span_id: Id of the phase-1 normative span the rule came from.
        atomic_id: Id of the phase-2 atomic unit the rule came from.
        source_start: Verified start offset of ``source_text`` in the document.
        source_end: Verified end offset (exclusive) of ``source_text``.
        faithfulness: Similarity (0..1) of ``source_text`` to the document.
        conflicts_with: Ids of rules flagged as conflicting with this one.
        related_rules: Ids of rules that overlap with this one.
        merged_from: Ids of duplicate rules merged into this one.
    """

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    rule_id: str = Field(min_length=1)
    rule_name: str = Field(min_length=1)
    condition: str = Field(min_length=1)
    action: str = Field(min_length=1)
    source_text: str = ""
    category_tags: list[str] = Field(default_factory=list)

    document_id: str | None = None
    span_id: str | None = None
    atomic_id: str | None = None
    source_start: int | None = None
    source_end: int | None = None
    faithfulness: float | None = None
    conflicts_with: list[str] = Field(default_factory=list)
    related_rules: list[str] = Field(default_factory=list)
    merged_from: list[str] = Field(default_factory=list)

    @field_validator("category_tags", mode="before")
    @classmethod
    def _split_tags(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list):
            tags: list[str] = []
            for tag in value:
                text = " ".join(str(tag).replace(",", " ").split()).lower()
                if text and text not in tags:
                    tags.append(text)
            return tags
        return value

    @field_validator("conflicts_with", "related_rules", "merged_from", mode="before")
    @classmethod
    def _decode_json_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return []
            try:
                decoded = json.loads(text)
            except json.JSONDecodeError:
                return [text]
            return decoded if isinstance(decoded, list) else [str(decoded)]
        return value

    # ------------------------------------------------------------------ Document
    def page_content(self) -> str:
        """The text of the rule's ``Document``: its action alone.

        A chain that formats retrieved documents (``format_docs``, a
        ``create_retriever_tool``) therefore hands the executor actions only,
        never conditions: the condition is read from the document's metadata
        by the judge.
        """
        return self.action

    def search_text(self) -> str:
        """The rule's name, condition and action, one per line: what a similarity index over rules embeds."""
        return f"{self.rule_name}\nWhen: {self.condition}\nDo: {self.action}"

    def to_document(self, *, content: DocumentContent = "action") -> Document:
        """Return the rule as a ``Document`` with scalar-only metadata.

        Args:
            content: The ``page_content``: ``"action"`` (default) holds the
                action alone (:meth:`page_content`), safe to show an
                executor; ``"search"`` holds name, condition and action
                (:meth:`search_text`), for a vector store that matches
                inputs to rules by similarity.
        """
        metadata: dict[str, Any] = {}
        for key, value in self.model_dump().items():
            if value is None:
                continue
            if key in _TAG_KEYS:
                metadata[key] = _TAG_SEPARATOR.join(value)
            elif key in _JSON_LIST_KEYS:
                if value:
                    metadata[key] = json.dumps(value, ensure_ascii=False)
            elif isinstance(value, (list, dict)):
                metadata[key] = json.dumps(value, ensure_ascii=False)
            else:
                metadata[key] = value
        text = self.search_text() if content == "search" else self.page_content()
        return Document(page_content=text, metadata=metadata, id=self.rule_id)

    @classmethod
    def from_document(cls, document: Document) -> Rule:
        """Read a rule from any ``Document`` whose metadata carries the rule keys.

        Keys other than the rule's fields become extra fields (see
        :func:`rule_extras`), except the ``tag_`` verdict keys a retriever adds.

        Raises:
            RuleFileError: When a required key is missing or a value is invalid.
        """
        fields = {k: v for k, v in document.metadata.items() if k in cls.model_fields}
        extras = rule_extras(document.metadata)
        missing = [k for k in ("rule_id", "rule_name", "condition", "action") if not fields.get(k)]
        if missing:
            raise RuleFileError(
                f"document {document.id or '(no id)'} is not a rule document: metadata lacks {', '.join(missing)}"
            )
        try:
            return cls.model_validate({**extras, **fields})
        except ValidationError as exc:
            raise RuleFileError(f"rule document {fields.get('rule_id')}: {_first_error(exc)}") from exc


VERDICT_PREFIX = "tag_"
"""Metadata keys a retriever adds to a returned document start with this; they are not rule fields."""


def rule_extras(metadata: dict[str, Any]) -> dict[str, Any]:
    """The extra (non-schema) rule fields held in a rule document's metadata.

    Verdict keys (``tag_...``) are left out. A string holding a JSON list or
    object, as :meth:`Rule.to_document` writes list and dict fields, is decoded.
    """
    extras: dict[str, Any] = {}
    for key, value in metadata.items():
        if key in Rule.model_fields or key.startswith(VERDICT_PREFIX):
            continue
        if isinstance(value, str) and value[:1] in "[{":
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(value)
        extras[key] = value
    return extras


def rule_documents(items: Iterable[Document | Rule]) -> list[Document]:
    """Rule documents from rule documents and :class:`Rule` objects alike (each rule as :meth:`Rule.to_document`)."""
    return [item.to_document() if isinstance(item, Rule) else item for item in items]


def rules_from_documents(documents: Iterable[Document]) -> list[Rule]:
    """Convert rule ``Document`` objects to rules, refusing duplicate ids.

    Raises:
        RuleFileError: On a document that is not a rule or a repeated ``rule_id``.
    """
    rules = [Rule.from_document(doc) for doc in documents]
    check_unique_rule_ids([rule.rule_id for rule in rules], where="documents")
    return rules


def save_rules(rules: Iterable[Rule], path: str | Path) -> Path:
    """Write rules to a JSONL file, one rule per line, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(rules_to_jsonl(rules))
    tmp.replace(path)
    return path


def rules_to_jsonl(rules: Iterable[Rule]) -> str:
    """The text of a rule file: one JSON object per rule and line, as :func:`save_rules` writes it."""
    return "".join(rule.model_dump_json(exclude_none=True) + "\n" for rule in rules)


def load_rules(path: str | Path) -> list[Rule]:
    """Read a JSONL rule file.

    Blank lines are skipped, and a UTF-8 byte order mark before the first
    line is dropped. A line that is not UTF-8, not JSON or not a valid rule,
    and a ``rule_id`` given twice, raise an error naming the file, the line
    number and the field.

    Raises:
        RuleFileError: On a bad line or a duplicate ``rule_id``.
        FileNotFoundError: When the file does not exist (the message names it).
        OSError: When the file cannot be read otherwise (the message names it).
    """
    path = Path(path)
    rules: list[Rule] = []
    lines: list[int] = []
    try:
        with path.open("rb") as fh:
            for lineno, data in json_lines(_utf8_lines(fh, path), str(path)):
                if isinstance(data, JsonLineError):
                    raise RuleFileError(str(data)) from data
                if not isinstance(data, dict):
                    raise RuleFileError(f"{path}:{lineno}: expected a JSON object, got {type(data).__name__}")
                _check_encodable(data, f"{path}:{lineno}")
                try:
                    rule = Rule.model_validate(data)
                except ValidationError as exc:
                    raise RuleFileError(f"{path}:{lineno}: {_first_error(exc)}") from exc
                rules.append(rule)
                lines.append(lineno)
    except OSError as exc:
        error = type(exc)(f"{path}: cannot read rules ({exc.strerror or exc})")
        error.errno = exc.errno
        raise error from exc
    check_unique_rule_ids([rule.rule_id for rule in rules], where=str(path), lines=lines)
    return rules


def _utf8_lines(lines: Iterable[bytes], path: Path) -> Iterator[str]:
    """Each line decoded from UTF-8 (a byte order mark before the first dropped); a bad byte names its line."""
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            byte = raw[exc.start : exc.start + 1].hex()
            raise RuleFileError(
                f"{path}:{number}: not UTF-8 text (0x{byte}, byte {exc.start + 1} of the line: {exc.reason})"
            ) from None
        yield line


def _check_encodable(data: Any, where: str) -> None:
    """Refuse a text UTF-8 cannot encode (a lone surrogate, from a JSON escape): no prompt or cache key holds it."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end].encode("unicode_escape").decode("ascii")
        raise RuleFileError(f"{where}: a text holds {bad}, which UTF-8 cannot encode (a lone surrogate)") from None


def check_unique_rule_ids(rule_ids: Sequence[str], *, where: str, lines: Sequence[int] | None = None) -> None:
    """Refuse a rule id given twice: the one check of every front (a rule file, rule documents, the review's rules).

    Args:
        rule_ids: The rules' ids, in order.
        where: What holds them: a rule file's path, or what the rules came as (``"documents"``).
        lines: Each id's line in the file ``where`` names, when the rules were read from one.

    Raises:
        RuleFileError: Naming the first id given again, and where: the file and both lines, or both places.

    Example:
        >>> check_unique_rule_ids(["R1", "R2", "R1"], where="rules.jsonl", lines=[1, 2, 4])
        Traceback (most recent call last):
        ...
        langchain_tag.errors.RuleFileError: rules.jsonl:4: duplicate rule_id 'R1' (first on line 1)
        >>> check_unique_rule_ids(["R1", "R2", "R1"], where="documents")
        Traceback (most recent call last):
        ...
        langchain_tag.errors.RuleFileError: documents: duplicate rule_id 'R1' (rules 1 and 3)
    """
    first: dict[str, int] = {}
    for index, rule_id in enumerate(rule_ids):
        if rule_id not in first:
            first[rule_id] = index
            continue
        earlier = first[rule_id]
        if lines is None:
            raise RuleFileError(f"{where}: duplicate rule_id {rule_id!r} (rules {earlier + 1} and {index + 1})")
        raise RuleFileError(f"{where}:{lines[index]}: duplicate rule_id {rule_id!r} (first on line {lines[earlier]})")


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err.get("loc", ())) or "(rule)"
    return f"field {field!r}: {err.get('msg', 'invalid')}"
