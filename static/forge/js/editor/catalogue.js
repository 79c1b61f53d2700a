// The tool catalogue (GET /api/v1/tools): what the step panel offers and describes; and
// the MCP servers behind it (GET /api/v1/tools/servers), so that a tool of a server that
// is down reads as such rather than as an unknown tool.
export function emptyCatalogue() {
  return { tools: [], byName: new Map(), down: new Map(), loaded: false };
}

export async function loadCatalogue(api, catalogue) {
  const [tools, servers] = await Promise.all([api.all("tools"), api.get("tools/servers")]);
  tools.sort((a, b) => a.name.localeCompare(b.name));
  catalogue.tools = tools;
  catalogue.byName = new Map(tools.map((tool) => [tool.name, tool]));
  catalogue.down = new Map(servers.filter((server) => !server.available).map((server) => [server.name, server.error]));
  catalogue.loaded = true;
  return catalogue;
}

// The MCP server a tool name not in the catalogue belongs to, when that server is down:
// {server, error}; else null (the tool is simply unknown).
export function downServer(catalogue, name) {
  const [server, ...rest] = String(name).split(".");
  if (!rest.length || !catalogue.down.has(server)) return null;
  return { server, error: catalogue.down.get(server) };
}
