"""Read source documents through langchain-community's document loaders (the ``loaders`` extra).

Text, Markdown and reStructuredText go through ``TextLoader``, HTML through
``BSHTMLLoader`` and PDF through ``PyPDFLoader``. A multi-page result is joined
into one document so that rule offsets refer to one text.
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.documents import Document

from langchain_tag.errors import DocumentLoadError, MissingExtraError

__all__ = ["DocumentLoadError", "load_document"]

_HTML = {".html", ".htm", ".xhtml"}
_PDF = {".pdf"}


def load_document(path: str | Path) -> Document:
    """Load one file as a single ``Document`` with ``id`` set to the file name.

    Raises:
        FileNotFoundError: When the file does not exist.
        DocumentLoadError: When the file is binary, undecodable, or yields no text.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix in _PDF:
            from langchain_community.document_loaders import PyPDFLoader

            pages = PyPDFLoader(str(path)).load()
        elif suffix in _HTML:
            from langchain_community.document_loaders import BSHTMLLoader

            pages = BSHTMLLoader(
                str(path), open_encoding="utf-8", bs_kwargs={"features": "html.parser"}, get_text_separator="\n"
            ).load()
        else:
            if b"\x00" in path.read_bytes()[:8192]:
                raise DocumentLoadError(f"{path} looks binary (NUL bytes); give a text, Markdown, HTML or PDF file")
            from langchain_community.document_loaders import TextLoader

            pages = TextLoader(str(path), encoding="utf-8").load()
    except DocumentLoadError:
        raise
    except ImportError as exc:
        raise MissingExtraError(
            f'reading {path} needs the loaders extra: pip install "langchain-tag[loaders]" ({exc})'
        ) from exc
    except Exception as exc:
        cause = exc.__cause__ or exc
        raise DocumentLoadError(f"cannot read {path}: {type(cause).__name__}: {cause}") from exc
    text = "\n\n".join(p.page_content for p in pages).strip()
    if not text:
        raise DocumentLoadError(f"{path} contains no text")
    return Document(page_content=text, metadata={"source": str(path)}, id=path.name)
