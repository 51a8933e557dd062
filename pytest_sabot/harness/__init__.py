"""Harness-owned seams shared by every framework adapter: the run context, the task's
tools and world, the inter-agent channel, prompts, and the run contract."""
