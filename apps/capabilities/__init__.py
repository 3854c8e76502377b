"""The capability registry: every capability of seed 000, its tools, config schema, scopes,
key requirement and voice mode. Capabilities are code — see ``registry.py`` and ``catalog/``."""
