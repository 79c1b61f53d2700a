"""Forge's pure-Python core: workflow primitives, plan documents, compiler, tools and runs.

Nothing in this package imports Django; the web apps and the CLI both build on it.
"""
