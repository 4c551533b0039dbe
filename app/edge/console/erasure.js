// Erasing a whole subject (eraseMemorySubject), only after the person types its name.
import { Component } from "/console/vendor/preact.mjs";
import { gql, payloadError } from "/console/app/api.js";
import { ErrorNote, html } from "/console/app/ui.js";

const ERASE = `mutation($scope: MemoryScope!, $scopeRef: String) {
  eraseMemorySubject(scope: $scope, scopeRef: $scopeRef) {
    receipt { id events entries versions released } errors { field code message } } }`;

export class Erasure extends Component {
  state = { typed: "", busy: false, error: null, receipt: null };

  erase = async (e) => {
    e.preventDefault();
    const { scope } = this.props;
    this.setState({ busy: true });
    try {
      const data = await gql(ERASE, { scope: scope.scope, scopeRef: scope.scopeRef });
      const err = payloadError(data.eraseMemorySubject.errors);
      this.setState({ busy: false, error: err, receipt: err ? null : data.eraseMemorySubject.receipt });
    } catch (err) {
      this.setState({ busy: false });
      this.props.onError(err);
    }
  };

  render({ scope, onErased }, { typed, busy, error, receipt }) {
    const name = scope.scopeRef || "institutional";
    if (receipt) {
      return html`<div role="status"><h3>Erased</h3>
        <p>${receipt.events} events, ${receipt.entries} entries and ${receipt.versions} earlier
          versions are gone; ${receipt.released} events of other subjects were released.
          Receipt <code>${receipt.id}</code>.</p>
        <button type="button" onClick=${onErased}>Back to the scopes</button></div>`;
    }
    return html`<form onSubmit=${this.erase}>
      <h3>Erase this subject</h3>
      <p>Every event and entry of <strong>${name}</strong>, the summaries built from its events
        and every earlier version are deleted for good, in one transaction. This cannot be undone.</p>
      <${ErrorNote} error=${error} />
      <label for="erase-confirm">Type <strong>${name}</strong> to confirm</label>
      <input id="erase-confirm" autocomplete="off" value=${typed}
        onInput=${(e) => this.setState({ typed: e.target.value })} />
      <button type="submit" class="danger" disabled=${busy || typed !== name}>Erase ${name}</button>
    </form>`;
  }
}
