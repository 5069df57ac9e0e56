"""rlsql's version, in a module of its own at the bottom of the layers (README, "Architecture").

Everything that records the version (exports, database files, the report, the shell-init script, `--version`)
imports it from here rather than from the package root, which would tie those modules to the top layer;
pyproject.toml reads it from here too (`[tool.setuptools.dynamic]`), so it is written once.
"""

__version__ = "0.1.0"
