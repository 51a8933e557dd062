"""Development conveniences for this repository's own test suite (not needed to use the
plugin: an installed pytest-sabot registers itself through its pytest11 entry point)."""

pytest_plugins = ["pytester"]
