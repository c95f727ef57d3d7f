from __future__ import annotations

from pathlib import Path

import pytest

from langchain_tag.integrations.loaders import DocumentLoadError, load_document


def _pdf(text: str) -> bytes:
    """A minimal one-page PDF showing ``text`` in Helvetica."""
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, obj in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def test_markdown_and_text(tmp_path: Path) -> None:
    path = tmp_path / "policy.md"
    path.write_text("# Policy\n\nStaff must wear badges.\n", encoding="utf-8")
    doc = load_document(path)
    assert doc.id == "policy.md" and "must wear badges" in doc.page_content


def test_html_keeps_block_breaks(tmp_path: Path) -> None:
    path = tmp_path / "p.html"
    path.write_text("<html><body><h1>Policy</h1><p>You must do X.</p></body></html>", encoding="utf-8")
    assert load_document(path).page_content == "Policy\nYou must do X."


def test_pdf(tmp_path: Path) -> None:
    path = tmp_path / "p.pdf"
    path.write_bytes(_pdf("Staff must wear badges."))
    assert load_document(path).page_content == "Staff must wear badges."


def test_binary_undecodable_empty_and_missing(tmp_path: Path) -> None:
    binary = tmp_path / "b.txt"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(DocumentLoadError, match="looks binary"):
        load_document(binary)
    latin = tmp_path / "l.txt"
    latin.write_bytes("caf\xe9 rules".encode("latin-1"))
    with pytest.raises(DocumentLoadError, match="UnicodeDecodeError"):
        load_document(latin)
    empty = tmp_path / "e.md"
    empty.write_text("  \n\n ")
    with pytest.raises(DocumentLoadError, match="no text"):
        load_document(empty)
    with pytest.raises(FileNotFoundError):
        load_document(tmp_path / "missing.md")
