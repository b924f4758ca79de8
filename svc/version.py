"""The version string reported by `svc version` and the config API."""

VERSION = "0.1.0"
