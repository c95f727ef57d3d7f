"""Judging (input, rule) pairs: the judge protocol, its prompts, reading replies, scoring and calibration."""
