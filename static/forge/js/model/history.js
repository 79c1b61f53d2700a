// Undo and redo as a stack of whole states (the editor keeps {document, layout}). Pure:
// each function returns a new history.
// Documents are immutable values (see document.js), so keeping them costs only the parts
// an edit replaced. Edits with the same `key` that follow each other within `coalesceMs`
// (typing in one field) become one step of undo.

export const LIMIT = 200;

export function createHistory(present) {
  return { past: [], present, future: [], key: null, at: 0 };
}

export function record(history, next, { key = null, now = 0, coalesceMs = 1000 } = {}) {
  if (next === history.present) return history;
  const coalesce = key !== null && key === history.key && now - history.at <= coalesceMs;
  const past = coalesce ? history.past : [...history.past, history.present].slice(-LIMIT);
  return { past, present: next, future: [], key, at: now };
}

export function canUndo(history) {
  return history.past.length > 0;
}

export function canRedo(history) {
  return history.future.length > 0;
}

export function undo(history) {
  if (!canUndo(history)) return history;
  const past = history.past.slice(0, -1);
  const present = history.past[history.past.length - 1];
  return { past, present, future: [history.present, ...history.future], key: null, at: 0 };
}

export function redo(history) {
  if (!canRedo(history)) return history;
  const [present, ...future] = history.future;
  return { past: [...history.past, history.present], present, future, key: null, at: 0 };
}

// Replaces the present without an undo step (a saved version's normalised document).
export function replacePresent(history, present) {
  return { ...history, present, key: null, at: 0 };
}
