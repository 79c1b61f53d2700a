// Keyboard shortcuts: one table, read both by the key handler and by the help overlay,
// so the overlay always lists what the keys really do. Keys act only when focus is not
// in a text field (except the Ctrl/Cmd ones, which act everywhere).

export const SHORTCUTS = [
  { keys: ["N"], action: "add-step", label: "Add a step (after the selected one)" },
  { keys: ["Delete", "Backspace"], action: "delete-selection", label: "Delete the selected steps or dependencies" },
  { keys: ["Mod+Z"], action: "undo", label: "Undo" },
  { keys: ["Mod+Shift+Z", "Mod+Y"], action: "redo", label: "Redo" },
  { keys: ["Mod+S"], action: "save", label: "Save a new version" },
  { keys: ["D"], action: "toggle-deliverable", label: "Make the selected step the deliverable" },
  { keys: ["F"], action: "fit", label: "Fit the plan in view" },
  { keys: ["+", "="], action: "zoom-in", label: "Zoom in" },
  { keys: ["-"], action: "zoom-out", label: "Zoom out" },
  { keys: ["L"], action: "layout", label: "Auto-layout: lay the plan out again (forgets places given by hand)" },
  { keys: ["M"], action: "toggle-move", label: "Move steps by dragging (again: draw dependencies)" },
  { keys: ["O"], action: "toggle-overview", label: "Show or hide the overview" },
  { keys: ["T"], action: "toggle-text", label: "Switch between the graph and the text (YAML)" },
  { keys: ["S"], action: "view-split", label: "Show the graph and the text side by side" },
  { keys: ["E"], action: "next-problem", label: "Go to the next problem" },
  { keys: ["Mod+F", "/"], action: "search", label: "Find a step by id or description (Enter: next, Shift+Enter: previous)" },
  { keys: ["Escape"], action: "escape", label: "Clear the selection, close dialogs" },
  { keys: ["?"], action: "help", label: "Show these shortcuts" },
];

const IS_MAC = /Mac|iPhone|iPad/.test(navigator.platform || "");

export function describeKey(key) {
  return key.replace("Mod", IS_MAC ? "⌘" : "Ctrl");
}

function keyName(event) {
  const parts = [];
  if (event.ctrlKey || event.metaKey) parts.push("Mod");
  if (event.shiftKey && (event.ctrlKey || event.metaKey)) parts.push("Shift");
  let key = event.key;
  if (key.length === 1 && /[a-z]/i.test(key)) key = key.toUpperCase();
  parts.push(key);
  return parts.join("+");
}

function typing(target) {
  if (!target || !(target instanceof Element)) return false;
  return Boolean(target.closest("input, textarea, select, [contenteditable=''], [contenteditable='true']"));
}

// Calls run(action) for each shortcut pressed; returns a function that stops listening.
export function bindShortcuts(target, run) {
  const table = new Map();
  for (const shortcut of SHORTCUTS) for (const key of shortcut.keys) table.set(key, shortcut.action);
  const listener = (event) => {
    if (event.defaultPrevented || event.isComposing) return;
    const name = keyName(event);
    const action = table.get(name);
    if (!action) return;
    const withModifier = name.startsWith("Mod+");
    if (!withModifier && (event.altKey || event.ctrlKey || event.metaKey)) return;
    if (typing(event.target) && !(withModifier && action !== "undo" && action !== "redo") && action !== "escape") return;
    if (document.querySelector("dialog[open]") && action !== "escape") return;
    event.preventDefault();
    run(action);
  };
  target.addEventListener("keydown", listener);
  return () => target.removeEventListener("keydown", listener);
}
