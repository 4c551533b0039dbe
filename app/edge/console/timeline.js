// A scope's raw events, newest first (memoryEvents), filtered by kind and by compressed,
// scrolled through the cursors; a compressed event links to the summary it went into.
import { Component, createRef } from "/console/vendor/preact.mjs";
import { gql } from "/console/app/api.js";
import { Empty, html, when } from "/console/app/ui.js";

const QUERY = `query($filter: MemoryEventFilter, $after: String) {
  memoryEvents(filter: $filter, first: 50, after: $after) {
    edges { node { id kind body source occurredAt compressedAt
      compressedInto { id title summary } } }
    pageInfo { hasNextPage endCursor } } }`;

export class Timeline extends Component {
  state = { items: [], next: null, loading: true, kind: "", compressed: "", open: null };
  sentinel = createRef();

  componentDidMount() {
    this.load(null);
    // Infinite scroll: the next page when the end of the list comes into view (the
    // "More events" button does the same from the keyboard).
    this.observer = new IntersectionObserver((seen) => {
      if (seen.some((s) => s.isIntersecting) && this.state.next && !this.state.loading) {
        this.load(this.state.next);
      }
    });
    if (this.sentinel.current) this.observer.observe(this.sentinel.current);
  }

  componentWillUnmount() { this.observer?.disconnect(); }

  filter() {
    const { scope } = this.props;
    const { kind, compressed } = this.state;
    return {
      scope: scope.scope, scopeRef: scope.scopeRef,
      kinds: kind.trim() ? [kind.trim()] : null,
      compressed: compressed === "" ? null : compressed === "yes",
    };
  }

  async load(after) {
    this.setState({ loading: true });
    const started = performance.now();
    try {
      const data = await gql(QUERY, { filter: this.filter(), after });
      const page = data.memoryEvents;
      this.setState((s) => ({
        items: [...(after ? s.items : []), ...page.edges.map((e) => e.node)],
        next: page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null,
        loading: false,
      }), () => {
        if (!after) document.body.dataset.firstPageMs = String(Math.round(performance.now() - started));
      });
    } catch (err) {
      this.setState({ loading: false });
      this.props.onError(err);
    }
  }

  apply = (e) => { e.preventDefault(); this.load(null); };

  render(_, { items, next, loading, kind, compressed, open }) {
    return html`<div>
      <h3>Timeline</h3>
      <form class="filters" onSubmit=${this.apply}>
        <label for="event-kind">Kind</label>
        <input id="event-kind" placeholder="e.g. call_summary" value=${kind}
          onInput=${(e) => this.setState({ kind: e.target.value })} />
        <label for="event-compressed">Compressed</label>
        <select id="event-compressed" value=${compressed}
          onChange=${(e) => this.setState({ compressed: e.target.value })}>
          <option value="">all events</option><option value="no">not compressed</option>
          <option value="yes">compressed</option>
        </select>
        <button type="submit">Apply</button>
      </form>
      ${!loading && items.length === 0 && html`<${Empty}>No events match in this scope.</${Empty}>`}
      <ol class="events" aria-label="Events, newest first">
        ${items.map((ev) => html`<li class="event">
          <p><strong>${ev.kind}</strong> <span class="muted">${when(ev.occurredAt)}${ev.source ? ` · ${ev.source}` : ""}</span></p>
          <p class="body">${ev.body}</p>
          ${ev.compressedInto && html`<p>
            <button type="button" aria-expanded=${open === ev.id}
              onClick=${() => this.setState({ open: open === ev.id ? null : ev.id })}>
              Compressed into “${ev.compressedInto.title}”</button></p>
            ${open === ev.id && html`<div class="summary"><p class="body">${ev.compressedInto.summary}</p></div>`}`}
        </li>`)}
      </ol>
      <div ref=${this.sentinel} aria-hidden="true"></div>
      ${loading && html`<p class="muted" role="status">Loading events…</p>`}
      ${next && !loading && html`<button type="button" onClick=${() => this.load(next)}>More events</button>`}
    </div>`;
  }
}
