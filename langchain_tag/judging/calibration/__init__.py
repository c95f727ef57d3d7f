"""Calibration of the judge's raw P(YES): the map, its fitting, and the scorer that applies it."""

from langchain_tag.judging.calibration.model import Calibration, CalibrationError

__all__ = ["Calibration", "CalibrationError"]
