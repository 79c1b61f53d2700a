"""Forge's version, as installed (``pyproject.toml``): what its MCP servers say in
``serverInfo.version``."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["forge_version"]


def forge_version() -> str:
    try:
        return version("forge")
    except PackageNotFoundError:  # a checkout run without being installed
        return "0+unknown"
