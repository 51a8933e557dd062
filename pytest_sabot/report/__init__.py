"""What people read, rendered from results.json and the records: RESULTS.md and the
terminal summary (``render``) and the self-contained HTML report (``html``)."""
