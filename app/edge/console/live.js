// Live updates: the change feed (memoryChanged) over graphql-transport-ws on this origin,
// for the selected scope; the key goes in connection_init's payload, never in the URL.
import { Component } from "/console/vendor/preact.mjs";
import { getKey } from "/console/app/api.js";
import { html } from "/console/app/ui.js";

const SUBSCRIBE = `subscription($scope: MemoryScope, $scopeRef: String) {
  memoryChanged(scope: $scope, scopeRef: $scopeRef) { id type } }`;

export class LiveFeed extends Component {
  state = { live: false };

  componentDidMount() { this.connect(); }
  componentDidUpdate(prev) { if (prev.scope !== this.props.scope) this.connect(); }
  componentWillUnmount() { this.close(); }

  close() {
    if (this.socket) { this.socket.onclose = null; this.socket.close(); this.socket = null; }
  }

  connect() {
    this.close();
    const { scope } = this.props;
    if (!scope) { this.setState({ live: false }); return; }
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/graphql`;
    const socket = new WebSocket(url, "graphql-transport-ws");
    this.socket = socket;
    socket.onopen = () => socket.send(JSON.stringify({
      type: "connection_init", payload: { authorization: `Bearer ${getKey() || ""}` } }));
    socket.onmessage = (m) => {
      const msg = JSON.parse(m.data);
      if (msg.type === "connection_ack") {
        socket.send(JSON.stringify({ id: "1", type: "subscribe", payload: {
          query: SUBSCRIBE, variables: { scope: scope.scope, scopeRef: scope.scopeRef } } }));
        this.setState({ live: true });
      } else if (msg.type === "ping") {
        socket.send(JSON.stringify({ type: "pong" }));
      } else if (msg.type === "next") {
        this.props.onChange();
      }
    };
    socket.onclose = () => { this.setState({ live: false }); };
  }

  render(_, { live }) {
    return html`<p class="live" aria-live="polite">${live ? "Live: new changes in this scope are announced." : ""}</p>`;
  }
}
