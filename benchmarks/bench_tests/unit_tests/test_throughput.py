from __future__ import annotations

import pytest

from langchain_tag_bench.throughput import summarise


def test_summarise_takes_medians_of_the_servers_timings() -> None:
    timings = [
        {"prompt_per_second": 50.0, "predicted_ms": 320.0, "predicted_n": 8},
        {"prompt_per_second": 40.0, "predicted_ms": 500.0, "predicted_n": 10},
        {"prompt_per_second": 60.0, "predicted_ms": 0.0, "predicted_n": 0},
    ]
    found = summarise(timings)
    assert (found.prompt_tps, found.decode_ms, found.samples) == (50.0, 40.0, 3)
    with pytest.raises(ValueError, match="no timings"):
        summarise([])
