"""A compatibility path for lab adapters that import their two names from
``agent_fault_lab.adapters``: put this folder on PYTHONPATH and such an adapter runs
against the fault lab unchanged (see ../README.md)."""
