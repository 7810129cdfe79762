"""The performance model: GPU descriptions, access analysis, the analytical model, the NVRTC
compiler, resource tables, footprints, verification and the template checks.

May import the domain, never input/output (import-linter contract in pyproject.toml).
"""
