// The scopes that hold memory (memoryScopes), a page at a time, to pick one from.
import { Component } from "/console/vendor/preact.mjs";
import { gql } from "/console/app/api.js";
import { Empty, html, scopeLabel, when } from "/console/app/ui.js";

const QUERY = `query($after: String, $scope: MemoryScope) {
  memoryScopes(first: 50, after: $after, scope: $scope) {
    edges { node { scope scopeRef eventCount entryCount lastActivityAt } }
    pageInfo { hasNextPage endCursor } } }`;
const KINDS = ["", "INSTITUTIONAL", "ENTITY", "PROJECT", "TEAM"];

export class ScopeList extends Component {
  state = { items: [], next: null, loading: true, kind: "" };

  componentDidMount() { this.load(null); }

  async load(after, kind = this.state.kind) {
    this.setState({ loading: true });
    try {
      const data = await gql(QUERY, { after, scope: kind || null });
      const page = data.memoryScopes;
      this.setState((s) => ({
        items: [...(after ? s.items : []), ...page.edges.map((e) => e.node)],
        next: page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null,
        loading: false,
      }));
    } catch (err) {
      this.setState({ loading: false });
      this.props.onError(err);
    }
  }

  render({ selected, onPick }, { items, next, loading, kind }) {
    return html`<nav class="scopes card" aria-label="Scopes">
      <h2>Scopes</h2>
      <label for="scope-kind">Kind</label>
      <select id="scope-kind" value=${kind}
        onChange=${(e) => { this.setState({ kind: e.target.value }); this.load(null, e.target.value); }}>
        ${KINDS.map((k) => html`<option value=${k}>${k ? k.toLowerCase() : "all kinds"}</option>`)}
      </select>
      ${!loading && items.length === 0 && html`<${Empty}>No memory yet: nothing has been appended
        or curated${kind ? " in this kind of scope" : ""}.</${Empty}>`}
      <ul class="scope-list">
        ${items.map((s) => html`<li>
          <button type="button" class="scope" aria-current=${selected && scopeLabel(selected) === scopeLabel(s) ? "true" : undefined}
            onClick=${() => onPick(s)}>
            <span class="name">${scopeLabel(s)}</span>
            <span class="counts">${s.eventCount} events · ${s.entryCount} entries</span>
            <span class="muted">last activity ${when(s.lastActivityAt)}</span>
          </button></li>`)}
      </ul>
      ${loading && html`<p class="muted" role="status">Loading scopes…</p>`}
      ${next && !loading && html`<button type="button" onClick=${() => this.load(next)}>More scopes</button>`}
    </nav>`;
  }
}
