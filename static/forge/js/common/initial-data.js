// Reads the data a page was rendered with: Django's json_script blocks, never inline code.
export function readInitialData(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`no initial data #${id} on this page`);
  return JSON.parse(element.textContent);
}
