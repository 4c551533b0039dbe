// The console's shell: the key form, the scope list beside the selected scope's screens
// (timeline, entries, context preview, erasure) and the compaction runs.
import { Component, render } from "/console/vendor/preact.mjs";
import { forgetKey, getKey, gql, setKey } from "/console/app/api.js";
import { ErrorNote, html, scopeLabel } from "/console/app/ui.js";
import { ScopeList } from "/console/app/scopes.js";
import { Timeline } from "/console/app/timeline.js";
import { Entries } from "/console/app/entries.js";
import { ContextPreview } from "/console/app/context.js";
import { CompactionRuns } from "/console/app/compaction.js";
import { Erasure } from "/console/app/erasure.js";
import { LiveFeed } from "/console/app/live.js";

const TABS = [
  ["timeline", "Timeline"], ["entries", "Entries"], ["context", "Context preview"],
  ["erase", "Erase"],
];

class KeyForm extends Component {
  state = { value: "", busy: false };

  submit = async (e) => {
    e.preventDefault();
    this.setState({ busy: true });
    setKey(this.state.value.trim());
    try {
      await gql("{ memoryScopes(first: 1) { edges { cursor } } }");
      this.props.onReady();
    } catch (err) {
      forgetKey();
      this.props.onError(err);
      this.setState({ busy: false });
    }
  };

  render(_, { value, busy }) {
    return html`<form class="key card" onSubmit=${this.submit}>
      <h2>Sign in with an API key</h2>
      <p class="muted">The key stays in this tab only and is sent to this server alone.</p>
      <label for="api-key">API key</label>
      <input id="api-key" type="password" autocomplete="off" required value=${value}
        onInput=${(e) => this.setState({ value: e.target.value })} />
      <button type="submit" disabled=${busy || !value.trim()}>Open the console</button>
    </form>`;
  }
}

class App extends Component {
  state = { ready: Boolean(getKey()), error: null, scope: null, tab: "timeline", view: "scope",
            changes: 0, revision: 0 };

  signOut = (error = null) => {
    forgetKey();
    this.setState({ ready: false, scope: null, error });
  };

  onError = (error) => {
    if (error && error.kind === "auth") this.signOut(error);
    else this.setState({ error });
  };

  pick = (scope) => this.setState({ scope, view: "scope", tab: "timeline", error: null, changes: 0 });

  tabKeys = (e) => {
    const i = TABS.findIndex(([id]) => id === this.state.tab);
    const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
    if (step === undefined) return;
    const next = TABS[(i + step + TABS.length) % TABS.length][0];
    this.setState({ tab: next });
    document.getElementById(`tab-${next}`)?.focus();
  };

  renderScope() {
    const { scope, tab, changes, revision } = this.state;
    if (!scope) {
      return html`<section class="card"><h2>Pick a scope</h2>
        <p class="empty">Choose a scope from the list to read its timeline and entries.</p></section>`;
    }
    const props = { scope, onError: this.onError, key: `${scopeLabel(scope)}:${revision}` };
    return html`<section aria-labelledby="scope-title">
      <h2 id="scope-title">${scopeLabel(scope)}</h2>
      ${changes > 0 && html`<p class="notice" role="status">${changes} new change${changes > 1 ? "s" : ""}
        in this scope. <button type="button" onClick=${() => this.setState({ revision: revision + 1, changes: 0 })}>
        Show them</button></p>`}
      <div role="tablist" aria-label="Scope views" onKeyDown=${this.tabKeys}>
        ${TABS.map(([id, label]) => html`<button role="tab" id=${`tab-${id}`} type="button"
          aria-selected=${tab === id} aria-controls=${`panel-${id}`} tabIndex=${tab === id ? 0 : -1}
          onClick=${() => this.setState({ tab: id })}>${label}</button>`)}
      </div>
      <div role="tabpanel" id=${`panel-${tab}`} aria-labelledby=${`tab-${tab}`} class="card">
        ${tab === "timeline" && html`<${Timeline} ...${props} />`}
        ${tab === "entries" && html`<${Entries} ...${props} />`}
        ${tab === "context" && html`<${ContextPreview} ...${props} />`}
        ${tab === "erase" && html`<${Erasure} ...${props}
          onErased=${() => this.setState({ scope: null, revision: revision + 1 })} />`}
      </div>
    </section>`;
  }

  render(_, { ready, error, scope, view, revision }) {
    const header = html`<header class="top">
      <h1>Jet Memory console</h1>
      ${ready && html`<nav aria-label="Console">
        <button type="button" aria-pressed=${view === "scope"} onClick=${() => this.setState({ view: "scope" })}>Scopes</button>
        <button type="button" aria-pressed=${view === "compaction"} onClick=${() => this.setState({ view: "compaction" })}>Compaction</button>
        <button type="button" onClick=${() => this.signOut()}>Forget key</button>
      </nav>`}
    </header>`;
    if (!ready) {
      return html`${header}<main id="main"><${ErrorNote} error=${error} />
        <${KeyForm} onReady=${() => this.setState({ ready: true, error: null })} onError=${this.onError} /></main>`;
    }
    return html`${header}
      <main id="main">
        <${LiveFeed} scope=${scope} onChange=${() => this.setState((s) => ({ changes: s.changes + 1 }))} />
        <${ErrorNote} error=${error} />
        ${view === "compaction"
          ? html`<section class="card"><${CompactionRuns} onError=${this.onError} /></section>`
          : html`<div class="layout">
              <${ScopeList} selected=${scope} onPick=${this.pick} onError=${this.onError} key=${revision} />
              <div class="detail">${this.renderScope()}</div>
            </div>`}
      </main>`;
  }
}

const root = document.getElementById("app");
root.replaceChildren(); // the "Loading" note: Preact renders beside what it did not make
render(html`<${App} />`, root);
