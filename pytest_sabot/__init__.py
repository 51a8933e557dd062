"""pytest-sabot: plant one fault per run in a real multi-agent pipeline and score
whether the pipeline's own checks noticed it (the Sabot standard, see SPEC.md)."""

__version__ = "0.1.0"
