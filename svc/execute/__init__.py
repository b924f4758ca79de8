"""Query execution: running compiled SQL against Postgres."""
