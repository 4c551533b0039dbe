// The compactor's runs (compactionRuns) with their status, counts and problems, and a dry
// run started from here (runCompaction with dryRun: nothing is written).
import { Component } from "/console/vendor/preact.mjs";
import { gql, payloadError } from "/console/app/api.js";
import { Empty, ErrorNote, html, when } from "/console/app/ui.js";

const RUN = `id status trigger dryRun startedAt finishedAt bucketsConsidered bucketsCompacted
  bucketsSkipped periods eventsCompressed budgetExceeded summariser problems`;
const LIST = `{ compactionRuns(first: 20) { edges { node { ${RUN} } } } }`;
const DRY = `mutation { runCompaction(input: { dryRun: true }) { run { ${RUN} } errors { field code message } } }`;

export class CompactionRuns extends Component {
  state = { runs: [], loading: true, busy: false, error: null, last: null };

  componentDidMount() { this.load(); }

  async load() {
    try {
      const data = await gql(LIST);
      this.setState({ runs: data.compactionRuns.edges.map((e) => e.node), loading: false });
    } catch (err) {
      this.setState({ loading: false });
      this.props.onError(err);
    }
  }

  dryRun = async () => {
    this.setState({ busy: true, error: null });
    try {
      const data = await gql(DRY);
      const err = payloadError(data.runCompaction.errors);
      this.setState({ busy: false, error: err, last: err ? null : data.runCompaction.run });
      this.load();
    } catch (err) {
      this.setState({ busy: false });
      this.props.onError(err);
    }
  };

  render(_, { runs, loading, busy, error, last }) {
    return html`<div>
      <h2>Compaction runs</h2>
      <p>The compactor folds old events into summary entries. A dry run reports what a run
        would do and writes nothing.</p>
      <button type="button" onClick=${this.dryRun} disabled=${busy}>${busy ? "Running…" : "Start a dry run"}</button>
      <${ErrorNote} error=${error} />
      ${last && html`<p class="dry-run" role="status">Dry run ${last.status.toLowerCase()}: a run now would
        compact ${last.bucketsCompacted} of ${last.bucketsConsidered} buckets into ${last.periods}
        entries and compress ${last.eventsCompressed} events.${last.problems.length ? ` Problems: ${last.problems.join("; ")}` : ""}</p>`}
      ${!loading && runs.length === 0 && html`<${Empty}>No compaction has run yet.</${Empty}>`}
      <div class="table-wrap"><table class=${runs.length ? "" : "hidden"}>
        <caption>Newest first</caption>
        <thead><tr><th scope="col">Started</th><th scope="col">Status</th><th scope="col">Kind</th>
          <th scope="col">Buckets compacted / considered</th><th scope="col">Events compressed</th>
          <th scope="col">Problems</th></tr></thead>
        <tbody>${runs.map((r) => html`<tr>
          <td>${when(r.startedAt)}</td><td>${r.status.toLowerCase()}</td>
          <td>${r.dryRun ? "dry run" : "run"} (${r.trigger.toLowerCase()})</td>
          <td>${r.bucketsCompacted} / ${r.bucketsConsidered}${r.bucketsSkipped ? `, ${r.bucketsSkipped} skipped` : ""}</td>
          <td>${r.eventsCompressed}</td>
          <td>${r.problems.length ? html`<ul>${r.problems.map((p) => html`<li>${p}</li>`)}</ul>` : "none"}</td>
        </tr>`)}</tbody>
      </table></div>
    </div>`;
  }
}
