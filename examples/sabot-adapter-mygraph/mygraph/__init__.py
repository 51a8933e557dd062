"""mygraph: a small research-and-check graph built on LangGraph."""

from mygraph.graph import State, build_graph

__all__ = ["State", "build_graph"]
