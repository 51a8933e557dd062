"""The contracts every layer of pytest-sabot may import, and that import nothing above them.

- ``errors``: errors that name the file, the field and what was expected;
- ``loading``: the one way a YAML or JSON file becomes a validated pydantic model;
- ``paths``: where the standard's data (cells/, tasks/, mappings/) lives;
- ``models``: the pydantic models of every file format (schemas/ is generated from them);
- ``trace_io``: reading and writing traces and JSON records atomically;
- ``records``: where a cell's record lives in an output directory, its outcome, and how an
  earlier record is set aside;
- ``verdict_token``: the verdict-token protocol (and the FLAGS head line) both the
  pipelines and the scorer read;
- ``context``: what a framework adapter is handed (the run-context protocol);
- ``prompt_format``: the sectioned prompt format the harness writes and the embedded model
  reads;
- ``model_spec``: a model spec (``sim:realistic``, ``openai:<model>``, ``replay:<dir>``),
  parsed once;
- ``registry``: the one registry style (named, lazily imported factories);
- ``frameworks``: the registry of framework adapters and what each one declares.

Nothing here imports pytest, a framework, the gateway or httpx.
"""
