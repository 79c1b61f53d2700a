// The tool catalogue (GET /api/v1/tools): what the step panel offers and describes.
export function emptyCatalogue() {
  return { tools: [], byName: new Map(), loaded: false };
}

export async function loadCatalogue(api, catalogue) {
  const tools = await api.all("tools");
  tools.sort((a, b) => a.name.localeCompare(b.name));
  catalogue.tools = tools;
  catalogue.byName = new Map(tools.map((tool) => [tool.name, tool]));
  catalogue.loaded = true;
  return catalogue;
}
