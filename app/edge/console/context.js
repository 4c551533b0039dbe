// What an agent would receive: the context loader's Markdown for a question and a token
// budget (memoryContext), and the entries matching the question that it left out.
import { Component } from "/console/vendor/preact.mjs";
import { gql } from "/console/app/api.js";
import { html } from "/console/app/ui.js";

const QUERY = `query($scope: MemoryScope!, $scopeRef: String, $query: String, $maxTokens: Int,
                     $filter: MemoryEntryFilter) {
  memoryContext(scope: $scope, scopeRef: $scopeRef, query: $query, maxTokens: $maxTokens) {
    markdown tokens truncated entries { id } events { id } }
  candidates: memoryEntries(filter: $filter, first: 20) { edges { score node { id title } } } }`;

export class ContextPreview extends Component {
  state = { question: "", budget: 2000, result: null, loading: false };

  preview = async (e) => {
    e.preventDefault();
    const { scope, onError } = this.props;
    const question = this.state.question.trim() || null;
    this.setState({ loading: true });
    try {
      const data = await gql(QUERY, {
        scope: scope.scope, scopeRef: scope.scopeRef, query: question,
        maxTokens: Number(this.state.budget),
        filter: { scope: scope.scope, scopeRef: scope.scopeRef, search: question },
      });
      const included = new Set(data.memoryContext.entries.map((x) => x.id));
      const leftOut = data.candidates.edges.filter((x) => !included.has(x.node.id));
      this.setState({ result: { ...data.memoryContext, leftOut }, loading: false });
    } catch (err) {
      this.setState({ loading: false });
      onError(err);
    }
  };

  render(_, { question, budget, result, loading }) {
    return html`<div>
      <h3>Context preview</h3>
      <form class="filters" onSubmit=${this.preview}>
        <label for="ctx-question">Question</label>
        <input id="ctx-question" value=${question} placeholder="what will the agent be asked?"
          onInput=${(e) => this.setState({ question: e.target.value })} />
        <label for="ctx-budget">Token budget</label>
        <input id="ctx-budget" type="number" min="64" max="32000" value=${budget}
          onInput=${(e) => this.setState({ budget: e.target.value })} />
        <button type="submit" disabled=${loading}>Preview</button>
      </form>
      ${result && html`<section aria-labelledby="ctx-result">
        <h4 id="ctx-result">What the agent receives: ${result.tokens} tokens,
          ${result.entries.length} entries, ${result.events.length} events</h4>
        ${result.markdown ? html`<pre class="markdown">${result.markdown}</pre>`
          : html`<p class="empty">Nothing: this scope has no memory for the agent yet.</p>`}
        <h4>Left out</h4>
        ${result.truncated ? html`<p>Some relevant memory did not fit the budget.</p>`
          : html`<p>Nothing relevant was left out for lack of room.</p>`}
        ${result.leftOut.length > 0 && html`<ul>${result.leftOut.map((x) => html`<li>${x.node.title}
          ${x.score !== null && x.score !== undefined ? html`<span class="muted"> (score ${x.score.toFixed(2)})</span>` : ""}</li>`)}</ul>`}
      </section>`}
    </div>`;
  }
}
