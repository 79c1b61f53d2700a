// The audit page's small conveniences; the page works without them (filters, paging,
// payloads and the full walk are plain links, forms and <details>).
//
// - "Expand all payloads" opens or closes every payload of the page at once.
// - "Verify the whole chain" says that it is walking every row while the request runs,
//   and cannot be sent twice.
// - window.forge.audit is the browser tests' hook.

const table = document.getElementById("audit-table");
const toggle = document.getElementById("toggle-payloads");
const verifyForm = document.getElementById("verify-form");

function payloads() {
  return table ? [...table.querySelectorAll("td.payload details")] : [];
}

function setAll(open) {
  for (const details of payloads()) details.open = open;
  syncToggle();
}

function syncToggle() {
  if (!toggle) return;
  const all = payloads();
  const allOpen = all.length > 0 && all.every((details) => details.open);
  toggle.textContent = allOpen ? "Collapse all payloads" : "Expand all payloads";
  toggle.setAttribute("aria-pressed", String(allOpen));
}

if (toggle && payloads().length > 0) {
  toggle.hidden = false;
  toggle.addEventListener("click", () => {
    const all = payloads();
    setAll(!all.every((details) => details.open));
  });
  table.addEventListener("toggle", syncToggle, true);
  syncToggle();
}

if (verifyForm) {
  verifyForm.addEventListener("submit", (event) => {
    const button = verifyForm.querySelector("button[type=submit]");
    if (button.getAttribute("aria-busy") === "true") {
      event.preventDefault();
      return;
    }
    const rows = Number(verifyForm.dataset.rows || 0);
    button.setAttribute("aria-busy", "true");
    button.textContent = `Walking ${rows.toLocaleString("en")} rows…`;
  });
}

window.forge = Object.assign(window.forge || {}, {
  audit: { expandAll: () => setAll(true), collapseAll: () => setAll(false) },
});
document.body.dataset.auditReady = "true";
