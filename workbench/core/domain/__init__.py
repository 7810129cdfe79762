"""The domain: slots, spaces, restrictions, templates, measurements, objectives and sessions.

Imports only ``workbench.core.errors`` and ``workbench.core.fs`` from the rest of core
(import-linter contract in pyproject.toml).
"""
