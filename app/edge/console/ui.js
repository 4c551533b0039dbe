// Shared pieces of every screen: the html tag bound to Preact, error and empty notes, times.
import { h } from "/console/vendor/preact.mjs";
import htm from "/console/vendor/htm.mjs";

export const html = htm.bind(h);

export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<div class="error" role="alert">
    <p>${error.message}</p>
    ${error.requestId && html`<p class="muted">Request id: <code>${error.requestId}</code>
      (quote it to your operator)</p>`}
  </div>`;
}

export function Empty({ children }) {
  return html`<p class="empty">${children}</p>`;
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC");
}

export const scopeLabel = (s) => (s.scopeRef ? `${s.scope.toLowerCase()} ${s.scopeRef}` : "institutional");
