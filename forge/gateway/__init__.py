"""The gateway (SPEC section 11): Forge between an agent and its MCP servers, so that
every call the agent makes itself passes the same gate as a worker's.

``catalogue`` says which tools the gateway offers (the MCP servers' tools under the
catalogue's names, with their annotations and schemas); ``binding`` holds the pure checks
of a bound call (a call naming a run and a step); ``server`` is the MCP server an agent
talks to, which asks a ``GatewayApi`` (Forge's REST API through ``forge.client`` for
``forge gateway --url URL``, which ``stdio`` serves; the ``gateway`` app's own functions
when ``/mcp/gateway`` runs in the web process). The checks that need the
database, and the forwarding, are the web's (the ``gateway`` app)."""
