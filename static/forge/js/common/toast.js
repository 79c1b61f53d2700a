// A short message at the bottom of the page, gone after a few seconds.
export function toast(message, { kind = "info", duration = 4000 } = {}) {
  let region = document.getElementById("toasts");
  if (!region) {
    region = document.createElement("div");
    region.id = "toasts";
    region.className = "toasts";
    region.setAttribute("role", "status");
    region.setAttribute("aria-live", "polite");
    document.body.appendChild(region);
  }
  const item = document.createElement("div");
  item.className = `toast ${kind}`;
  item.textContent = message;
  region.appendChild(item);
  setTimeout(() => item.remove(), duration);
}
