"""Judging many inputs: the bulk job, the provider batch API files and the Ray Data pipeline."""
