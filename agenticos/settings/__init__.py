"""Settings package. The module Django loads is `agenticos.settings.base` (every environment) or
`agenticos.settings.test` (the suite).

This file deliberately imports nothing: the launcher and the test runner import the typed
readers in `env` before they have decided which PostgreSQL and Redis to use, and evaluating
`base` at that moment would fix DATABASES and REDIS_URL from an environment that does not name
them yet.
"""
