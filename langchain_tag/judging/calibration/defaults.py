"""The shipped calibrations: per judge model family and prompt, read from ``data/calibrations.json``.

The data file holds the values and, for each, its provenance: what it was
fitted on and the command that fitted it (``langchain-tag bench fit-default``;
the results are in the benchmark's ``results/quality.md``). This module
resolves a judge's default from them (:func:`default_calibration`) and reads
and checks a sample of your own reference inputs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from langchain_tag.jsonl import JsonLineError, json_lines
from langchain_tag.judging.calibration.model import Calibration, CalibrationError

__all__ = [
    "DEFAULT_CALIBRATIONS",
    "DOMAIN_REFERENCE_CALIBRATIONS",
    "MIN_DOMAIN_REFERENCES",
    "TYPICAL_INPUTS",
    "check_reference_inputs",
    "default_calibration",
    "load_reference_inputs",
    "resolve_default",
]

logger = logging.getLogger(__name__)

_DATA = json.loads(resources.files("langchain_tag").joinpath("data/calibrations.json").read_text(encoding="utf-8"))

TYPICAL_INPUTS: tuple[str, ...] = tuple(_DATA["typical_inputs"])
"""Ordinary inputs of several kinds (code, a message, an encyclopedia sentence, a contract clause, a case).

The shipped calibrations use them as per-rule references: a rule's mean
log-odds over these inputs is the level its judge answers at for an input
that has nothing special, so a rule matches when an input stands out from
that level. They are written to be unremarkable, not to break or follow any
particular rule set, and are judged once per rule (through the verdict cache).
"""


def _shipped(fields: dict[str, Any]) -> Calibration:
    references = TYPICAL_INPUTS if fields.get("reference_inputs") == "typical_inputs" else ()
    return Calibration(**{**fields, "reference_inputs": references})


DEFAULT_CALIBRATIONS: dict[str, Calibration] = {
    key: _shipped(entry["calibration"]) for key, entry in _DATA["defaults"].items()
}
"""Shipped defaults per judge model family and prompt, keyed by a lower-case fragment of the model identity
(after a ``#``, a label that tells one family's defaults for several judge prompts apart)."""

DOMAIN_REFERENCE_CALIBRATIONS: dict[str, dict[str, Any]] = {
    key: dict(entry["calibration"]) for key, entry in _DATA["domain_reference"].items()
}
"""Shipped domain-reference defaults per judge model family: :class:`Calibration` fields without the
reference inputs, which are the user's own sample (:func:`default_calibration`); keyed as
:data:`DEFAULT_CALIBRATIONS`."""

MIN_DOMAIN_REFERENCES = 4
"""The fewest inputs a domain-reference calibration takes: a spread needs a sample."""


def _family(key: str) -> str:
    """The model-identity fragment of a defaults key (``"family"`` or ``"family#label"``)."""
    return key.partition("#")[0]


def default_calibration(
    model: str, prompt_version: str, reference_inputs: Sequence[str] | None = None
) -> Calibration | None:
    """The shipped calibration for a judge model family and prompt version, if one was fitted.

    Args:
        model: The judge's identity (:func:`~langchain_tag.calls._identity.model_identity`).
        prompt_version: The judge prompt's scoring version (:attr:`JudgePrompt.scoring_version`).
        reference_inputs: A sample of your own unlabelled inputs (at least
            :data:`MIN_DOMAIN_REFERENCES`, typically 8 to 20): when given, the family's domain-reference
            default with this sample as its references (:data:`DOMAIN_REFERENCE_CALIBRATIONS`); otherwise the
            default over :data:`TYPICAL_INPUTS` (:data:`DEFAULT_CALIBRATIONS`).

    Raises:
        CalibrationError: When ``reference_inputs`` holds fewer than :data:`MIN_DOMAIN_REFERENCES` distinct
            non-blank inputs.
    """
    name = model.lower()
    if reference_inputs is not None:
        sample = check_reference_inputs(reference_inputs)
        for key, fields in DOMAIN_REFERENCE_CALIBRATIONS.items():
            if _family(key) in name and fields.get("prompt_version") == prompt_version:
                return Calibration(**fields, reference_inputs=sample)
        return None
    for key, calibration in DEFAULT_CALIBRATIONS.items():
        if _family(key) in name and calibration.prompt_version == prompt_version:
            return calibration
    return None


def resolve_default(
    model: str,
    prompt_version: str,
    reference_inputs: tuple[str, ...] | None,
    memo: dict[tuple[str, str, tuple[str, ...] | None], Calibration | None],
) -> Calibration | None:
    """:func:`default_calibration`, remembered in ``memo``; warns once when a reference sample finds no default."""
    key = (model, prompt_version, reference_inputs)
    if key not in memo:
        found = default_calibration(model, prompt_version, reference_inputs)
        if found is None and reference_inputs:
            logger.warning(
                "no domain-reference calibration is shipped for %s with prompt %s: reference_inputs are not "
                "used and raw P(YES) is thresholded; fit a calibration with retriever.calibrate(...)",
                model,
                prompt_version,
            )
        memo[key] = found
    return memo[key]


def load_reference_inputs(path: str | Path) -> tuple[str, ...]:
    """Read a sample of reference inputs: JSON Lines, each line a JSON string or an object with ``"text"``.

    Raises:
        CalibrationError: When the file is missing, a line is not such JSON, or the sample is too small
            (:func:`check_reference_inputs`).
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read reference inputs ({exc.strerror or exc})") from exc
    found: list[str] = []
    for number, item in json_lines(lines, str(path)):
        if isinstance(item, JsonLineError):
            raise CalibrationError(f'{item}; write one JSON string or {{"text": ...}} per line') from item
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            item = item["text"]
        if not isinstance(item, str):
            raise CalibrationError(f'{path}:{number}: expected a JSON string or an object with a "text" string')
        found.append(item)
    return check_reference_inputs(found)


def check_reference_inputs(inputs: Sequence[str]) -> tuple[str, ...]:
    """A sample of reference inputs, blanks and repeats dropped, order kept.

    Raises:
        CalibrationError: When the sample is a bare string, or holds fewer than
            :data:`MIN_DOMAIN_REFERENCES` distinct non-blank inputs.
    """
    if isinstance(inputs, str):
        raise CalibrationError("reference_inputs must be a sequence of inputs, not one string")
    sample = tuple(dict.fromkeys(str(x) for x in inputs if str(x).strip()))
    if len(sample) < MIN_DOMAIN_REFERENCES:
        raise CalibrationError(
            f"reference_inputs needs at least {MIN_DOMAIN_REFERENCES} distinct non-blank inputs (8 to 20 typical "
            f"ones of your own work best); got {len(sample)}"
        )
    return sample
