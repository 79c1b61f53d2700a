// Reads one cookie by name: the CSRF token the API wants back in X-CSRFToken.
export function readCookie(name) {
  for (const part of document.cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return "";
}
