"""Helpers every stage may use: canonical JSON, the one path notation, escaping, atomic files.

Nothing here imports a stage.
"""
