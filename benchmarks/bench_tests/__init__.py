"""Tests of the benchmark distribution (``langchain-tag-bench``)."""
