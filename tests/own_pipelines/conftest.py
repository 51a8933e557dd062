"""Two public-style pipelines (pipelines/), wrapped with the adapter protocol as a user would,
run in whole pytest sessions the way a user runs them."""
