"""The cell matrix: a wave file and its seed registry expanded into cells (``cells``), and
the wave loaded with everything it is scored by (``standard``)."""
