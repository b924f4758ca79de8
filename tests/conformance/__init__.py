"""Conformance run of svc over the shared upstream-style YAML corpus."""
