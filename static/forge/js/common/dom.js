// Building DOM without HTML strings: every text goes in through textContent, so a plan's
// words are shown as words, never parsed as markup.

// h("li", {class: "problem", dataset: {code: "cycle"}}, "text", child, ...)
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") element.className = value;
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (key === "text") element.textContent = value;
    else if (key.startsWith("on")) throw new Error("attach listeners with addEventListener");
    else if (value === true) element.setAttribute(key, "");
    else element.setAttribute(key, String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else if (child instanceof Node) element.appendChild(child);
    else element.appendChild(document.createTextNode(String(child)));
  }
}

export function clear(element) {
  while (element.firstChild) element.removeChild(element.firstChild);
  return element;
}

export function replaceChildren(element, ...children) {
  clear(element);
  append(element, children);
  return element;
}
