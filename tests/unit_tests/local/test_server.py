from __future__ import annotations

from pathlib import Path

import pytest

from langchain_tag.local import server as local_server
from langchain_tag.local.server import LocalLlamaServer, LocalServerError, missing_cpu_flags

HASWELL = "processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2 fma f16c bmi2\n\nprocessor\t: 1\nflags\t\t: fpu avx\n"
OLD = "processor\t: 0\nflags\t\t: fpu sse sse2 sse4_2 avx\n"


def test_missing_cpu_flags_reads_the_first_cpus_flags() -> None:
    assert missing_cpu_flags(HASWELL, "x86_64") == []
    assert missing_cpu_flags(OLD, "x86_64") == ["avx2", "fma", "f16c"]
    assert missing_cpu_flags(OLD, "aarch64") == []  # the wheel for other machines has its own build
    assert missing_cpu_flags("no flags line here", "x86_64") == []  # unknown: let the runtime try


def test_a_cpu_without_avx2_gets_a_clear_error_before_the_server_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(local_server, "missing_cpu_flags", lambda: ["avx2", "fma"])
    launched: list[bool] = []
    monkeypatch.setattr(LocalLlamaServer, "_launch", lambda self: launched.append(True))
    with pytest.raises(LocalServerError, match=r"lacks AVX2, FMA.*LANGCHAIN_TAG_BASE_URL"):
        LocalLlamaServer(model).start()
    assert launched == []
