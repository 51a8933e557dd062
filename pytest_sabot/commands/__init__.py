"""The ``sabot`` command line (``cli``) and its commands, one module each: rescore, report,
validate, plan, schema, compare, demo, history, replay, inspect, export, merge, mcp, the
fault lab's (``lab``, ``lab_demo``, ``lab_mcp``) and the anchor fire-rate table. Every
command returns an exit code of :mod:`pytest_sabot.core.exit_codes`; the ``python -m``
entry points of the packages below are shims over these modules."""
