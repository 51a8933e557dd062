"""One pytest session of a wave: its settings, its selection, its output directory, its
gateway, how it ends and what it tells pytest. ``pytest_sabot.plugin`` holds only hooks;
each calls into the ``SabotSession`` object kept in the config's stash.

Modules, one job each:

- ``settings``: the options, typed and resolved (command line > environment > ini);
- ``preflight``: every check that must pass before the first cell runs;
- ``selection``: which cells the session runs, fixed once pytest has selected its items;
- ``manifest``: the session's record, ``sessions/<run id>.json``, and its run id;
- ``gateway``: the model gateway's start and stop;
- ``gates``: the exit status (fail-under, run-error share, missing baselines);
- ``junit``: classnames, verdicts and row results in the JUnit XML;
- ``xdist``: hooks that exist only with pytest-xdist (worker setup, crashed workers);
- ``signals``: SIGTERM handled like Ctrl-C;
- ``crashes``: a worker that died while running a cell;
- ``finishing``: the results and manifest written at the start and the end, the status;
- ``core``: the session object that ties them together.

Importing the package loads none of them: ``pytest_sabot.plugin`` imports the session
object from ``core`` itself, and each module imports only the modules it uses.
"""
