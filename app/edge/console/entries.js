// A scope's curated entries (memoryEntries): search with each hit's score and matched
// words, open one, create one.
import { Component } from "/console/vendor/preact.mjs";
import { gql, payloadError } from "/console/app/api.js";
import { Empty, ErrorNote, html, when } from "/console/app/ui.js";
import { EntryDetail } from "/console/app/entry.js";

const QUERY = `query($filter: MemoryEntryFilter, $after: String) {
  memoryEntries(filter: $filter, first: 20, after: $after) {
    edges { score matchedTerms node { id title summary tags importance source updatedAt version } }
    pageInfo { hasNextPage endCursor } } }`;
const CREATE = `mutation($input: CreateMemoryEntryInput!) {
  createMemoryEntry(input: $input) { entry { id } errors { field code message } } }`;

export const splitTags = (text) => text.split(",").map((t) => t.trim()).filter(Boolean);

export class Entries extends Component {
  state = { edges: [], next: null, loading: true, search: "", open: null, creating: false,
            draft: { title: "", summary: "", tags: "", importance: 3 }, formError: null };

  componentDidMount() { this.load(null); }

  async load(after) {
    const { scope } = this.props;
    const search = this.state.search.trim();
    this.setState({ loading: true });
    try {
      const data = await gql(QUERY, {
        filter: { scope: scope.scope, scopeRef: scope.scopeRef, search: search || null }, after,
      });
      const page = data.memoryEntries;
      this.setState((s) => ({
        edges: [...(after ? s.edges : []), ...page.edges],
        next: page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null,
        loading: false,
      }));
    } catch (err) {
      this.setState({ loading: false });
      this.props.onError(err);
    }
  }

  create = async (e) => {
    e.preventDefault();
    const { scope } = this.props;
    const d = this.state.draft;
    try {
      const data = await gql(CREATE, { input: {
        scope: scope.scope, scopeRef: scope.scopeRef, title: d.title, summary: d.summary,
        tags: splitTags(d.tags), importance: Number(d.importance),
      } });
      const err = payloadError(data.createMemoryEntry.errors);
      if (err) { this.setState({ formError: err }); return; }
      this.setState({ creating: false, formError: null, open: data.createMemoryEntry.entry.id,
                      draft: { title: "", summary: "", tags: "", importance: 3 } });
      this.load(null);
    } catch (err) {
      this.props.onError(err);
    }
  };

  draft(field) {
    return (e) => this.setState((s) => ({ draft: { ...s.draft, [field]: e.target.value } }));
  }

  renderCreate() {
    const { draft, formError } = this.state;
    return html`<form class="card entry-form" onSubmit=${this.create} aria-labelledby="new-entry">
      <h4 id="new-entry">New entry</h4>
      <${ErrorNote} error=${formError} />
      <label for="new-title">Title</label>
      <input id="new-title" required value=${draft.title} onInput=${this.draft("title")} />
      <label for="new-summary">Summary (Markdown)</label>
      <textarea id="new-summary" rows="4" required value=${draft.summary} onInput=${this.draft("summary")}></textarea>
      <label for="new-tags">Tags (comma-separated)</label>
      <input id="new-tags" value=${draft.tags} onInput=${this.draft("tags")} />
      <label for="new-importance">Importance (1–5)</label>
      <input id="new-importance" type="number" min="1" max="5" value=${draft.importance} onInput=${this.draft("importance")} />
      <div class="actions"><button type="submit">Create entry</button>
        <button type="button" onClick=${() => this.setState({ creating: false })}>Cancel</button></div>
    </form>`;
  }

  render({ onError }, { edges, next, loading, search, open, creating }) {
    if (open) {
      return html`<${EntryDetail} id=${open} onError=${onError}
        onClose=${() => { this.setState({ open: null }); this.load(null); }} />`;
    }
    return html`<div>
      <h3>Entries</h3>
      <form class="filters" role="search" onSubmit=${(e) => { e.preventDefault(); this.load(null); }}>
        <label for="entry-search">Search</label>
        <input id="entry-search" type="search" placeholder="a question or words" value=${search}
          onInput=${(e) => this.setState({ search: e.target.value })} />
        <button type="submit">Search</button>
        <button type="button" onClick=${() => this.setState({ creating: true })}>New entry</button>
      </form>
      ${creating && this.renderCreate()}
      ${!loading && edges.length === 0 && html`<${Empty}>${search.trim()
        ? "No entry matches this search." : "No curated entries in this scope yet."}</${Empty}>`}
      <ul class="entries">
        ${edges.map(({ node, score, matchedTerms }) => html`<li class="entry">
          <button type="button" class="link" onClick=${() => this.setState({ open: node.id })}>${node.title}</button>
          <span class="muted"> · ${node.source.toLowerCase()} · importance ${node.importance} · v${node.version} · ${when(node.updatedAt)}</span>
          ${score !== null && score !== undefined && html`<p class="match">score ${score.toFixed(2)}
            — matched: ${matchedTerms && matchedTerms.length ? matchedTerms.join(", ") : "none"}</p>`}
          <p class="body clamp">${node.summary}</p>
        </li>`)}
      </ul>
      ${loading && html`<p class="muted" role="status">Loading entries…</p>`}
      ${next && !loading && html`<button type="button" onClick=${() => this.load(next)}>More entries</button>`}
    </div>`;
  }
}
