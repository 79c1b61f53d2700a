// The one way pages talk to Forge's API: JSON in and out, the session cookie for auth and
// the CSRF token in X-CSRFToken for writes. Errors become ApiError with the API's
// {"detail", "code"} (and "diagnostics" when a plan's problems are the cause), and the
// answer's Retry-After when it has one.
import { readCookie } from "./cookies.js";

export class ApiError extends Error {
  constructor(status, body, retryAfter = null) {
    const detail = body && typeof body.detail === "string" ? body.detail : `HTTP ${status}`;
    super(detail);
    this.status = status;
    this.code = (body && body.code) || "error";
    this.body = body || {};
    // Seconds to wait before asking again (429 throttled, some 409s), or null.
    this.retryAfter = retryAfter;
  }
}

export class Api {
  constructor(root) {
    this.root = root.endsWith("/") ? root : `${root}/`;
  }

  url(path, query) {
    const url = new URL(this.root + path.replace(/^\//, ""), window.location.origin);
    for (const [key, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
    }
    return url.toString();
  }

  async request(method, path, { body, query, signal, raw = false } = {}) {
    const headers = { Accept: raw ? "*/*" : "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method !== "GET" && method !== "HEAD") headers["X-CSRFToken"] = readCookie("csrftoken");
    const response = await fetch(this.url(path, query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      signal,
    });
    if (!response.ok) {
      let data = null;
      try {
        data = await response.json();
      } catch {
        data = null;
      }
      const retryAfter = Number.parseInt(response.headers.get("Retry-After") || "", 10);
      throw new ApiError(response.status, data, Number.isFinite(retryAfter) ? retryAfter : null);
    }
    if (raw) return response;
    return response.status === 204 ? null : response.json();
  }

  get(path, options) {
    return this.request("GET", path, options);
  }

  post(path, body, options = {}) {
    return this.request("POST", path, { ...options, body });
  }

  // Every item of a paginated list ({"items", "count"}), page after page.
  async all(path, query = {}) {
    const items = [];
    for (let page = 1; ; page += 1) {
      const data = await this.get(path, { query: { ...query, page } });
      items.push(...data.items);
      if (items.length >= data.count || data.items.length === 0) return items;
    }
  }
}
