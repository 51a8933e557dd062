"""Pydantic models for every file format pytest-sabot reads or writes."""
