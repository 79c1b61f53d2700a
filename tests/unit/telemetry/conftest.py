from ..agents.conftest import harness  # noqa: F401 (the agents' real executor and compiler)
