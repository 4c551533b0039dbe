// One entry: edit it with the version check (a concurrent edit is shown, never overwritten),
// delete it, see a compactor entry's source events, its history, and restore a version.
import { Component } from "/console/vendor/preact.mjs";
import { gql, payloadError } from "/console/app/api.js";
import { ErrorNote, html, when } from "/console/app/ui.js";

const FIELDS = "id title summary tags importance source version updatedAt";
const READ = `query($id: ID!) { memoryEntry(id: $id) { ${FIELDS}
  sourceEvents(first: 50) { edges { node { id kind body occurredAt } } }
  history(first: 20) { edges { node { version title change changedAt changedBy } } } } }`;
const UPDATE = `mutation($id: ID!, $input: UpdateMemoryEntryInput!) {
  updateMemoryEntry(id: $id, input: $input) { entry { ${FIELDS} } errors { field code message } } }`;
const DELETE = `mutation($id: ID!) { deleteMemoryEntry(id: $id) { deletedId errors { field code message } } }`;
const RESTORE = `mutation($id: ID!, $input: RestoreMemoryEntryInput!) {
  restoreMemoryEntry(id: $id, input: $input) { entry { id version } errors { field code message } } }`;

const splitTags = (text) => text.split(",").map((t) => t.trim()).filter(Boolean);
const formOf = (e) => ({ title: e.title, summary: e.summary, tags: e.tags.join(", "), importance: e.importance });

export class EntryDetail extends Component {
  state = { entry: null, form: null, error: null, conflict: null, saved: false, confirmDelete: false };

  componentDidMount() { this.read(); }

  async read() {
    try {
      const data = await gql(READ, { id: this.props.id });
      const entry = data.memoryEntry;
      this.setState({ entry, form: entry && formOf(entry), conflict: null });
    } catch (err) {
      this.props.onError(err);
    }
  }

  save = async (e) => {
    e.preventDefault();
    const { entry, form } = this.state;
    try {
      const data = await gql(UPDATE, { id: entry.id, input: {
        title: form.title, summary: form.summary, tags: splitTags(form.tags),
        importance: Number(form.importance), expectedVersion: entry.version,
      } });
      const payload = data.updateMemoryEntry;
      if (payload.errors.length && payload.errors[0].code === "CONFLICT") {
        // Someone saved first: show theirs beside ours; nothing of theirs is overwritten.
        const now = await gql(READ, { id: entry.id });
        this.setState({ conflict: now.memoryEntry, saved: false });
        return;
      }
      const err = payloadError(payload.errors);
      if (err) { this.setState({ error: err, saved: false }); return; }
      this.setState({ error: null, saved: true });
      this.read();
    } catch (err) {
      this.props.onError(err);
    }
  };

  remove = async () => {
    try {
      const data = await gql(DELETE, { id: this.state.entry.id });
      const err = payloadError(data.deleteMemoryEntry.errors);
      if (err) { this.setState({ error: err }); return; }
      this.props.onClose();
    } catch (err) {
      this.props.onError(err);
    }
  };

  restore = async (version) => {
    try {
      const data = await gql(RESTORE, { id: this.state.entry.id, input: { version } });
      const err = payloadError(data.restoreMemoryEntry.errors);
      if (err) { this.setState({ error: err }); return; }
      this.setState({ saved: false, error: null });
      this.read();
    } catch (err) {
      this.props.onError(err);
    }
  };

  field(name) {
    return (e) => this.setState((s) => ({ form: { ...s.form, [name]: e.target.value }, saved: false }));
  }

  render({ onClose }, { entry, form, error, conflict, saved, confirmDelete }) {
    const back = html`<button type="button" onClick=${onClose}>Back to entries</button>`;
    if (!entry) return html`<div>${back}<p class="muted" role="status">Loading the entry…</p></div>`;
    const sources = entry.sourceEvents.edges.map((e) => e.node);
    const history = entry.history.edges.map((e) => e.node);
    return html`<div class="entry-detail">
      ${back}
      <h3>${entry.title}</h3>
      <p class="muted">${entry.source.toLowerCase()} · version ${entry.version} · updated ${when(entry.updatedAt)}</p>
      <${ErrorNote} error=${error} />
      ${conflict && html`<div class="conflict" role="alert">
        <p><strong>Someone else saved this entry first</strong> (now version ${conflict.version}).
          Your changes were not saved and theirs were not overwritten.</p>
        <p>Their title: “${conflict.title}”</p><p class="body">${conflict.summary}</p>
        <button type="button" onClick=${() => this.setState({ entry: { ...entry, ...conflict }, form: formOf(conflict), conflict: null })}>
          Load their version</button>
      </div>`}
      ${saved && html`<p class="ok" role="status">Saved.</p>`}
      <form class="entry-form" onSubmit=${this.save}>
        <label for="edit-title">Title</label>
        <input id="edit-title" required value=${form.title} onInput=${this.field("title")} />
        <label for="edit-summary">Summary (Markdown)</label>
        <textarea id="edit-summary" rows="6" required value=${form.summary} onInput=${this.field("summary")}></textarea>
        <label for="edit-tags">Tags (comma-separated)</label>
        <input id="edit-tags" value=${form.tags} onInput=${this.field("tags")} />
        <label for="edit-importance">Importance (1–5)</label>
        <input id="edit-importance" type="number" min="1" max="5" value=${form.importance} onInput=${this.field("importance")} />
        <div class="actions"><button type="submit">Save</button>
          ${confirmDelete
            ? html`<button type="button" class="danger" onClick=${this.remove}>Yes, delete this entry</button>
                   <button type="button" onClick=${() => this.setState({ confirmDelete: false })}>Keep it</button>`
            : html`<button type="button" class="danger" onClick=${() => this.setState({ confirmDelete: true })}>Delete…</button>`}
        </div>
      </form>
      ${entry.source === "COMPACTOR" && html`<section aria-labelledby="sources-title">
        <h4 id="sources-title">Source events (${sources.length})</h4>
        <ol class="events">${sources.map((ev) => html`<li class="event">
          <p><strong>${ev.kind}</strong> <span class="muted">${when(ev.occurredAt)}</span></p>
          <p class="body">${ev.body}</p></li>`)}</ol>
      </section>`}
      <section aria-labelledby="history-title">
        <h4 id="history-title">History</h4>
        ${history.length === 0 ? html`<p class="empty">No earlier versions.</p>` : html`<ul class="history">
          ${history.map((v) => html`<li>v${v.version} “${v.title}” — ${v.change} by ${v.changedBy}, ${when(v.changedAt)}
            <button type="button" onClick=${() => this.restore(v.version)}>Restore v${v.version}</button></li>`)}
        </ul>`}
      </section>
    </div>`;
  }
}
