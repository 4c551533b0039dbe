// The GraphiQL page's script (app/edge/graphql_http/graphiql.py puts it in strawberry's page in place of
// its own). A first run works: no request leaves with the placeholder key, the schema is
// introspected as soon as a key is in the Headers tab (again whenever it changes), and the key
// stays in this browser tab (sessionStorage) unless Settings > "Persist headers" is on.
const DEFAULT_HEADERS = __DEFAULT_HEADERS__;
const SESSION_HEADERS = "jet-memory:graphiql:headers";
// GraphiQL's own storage keys (its StorageAPI namespace "graphiql"): where "Persist headers"
// keeps its choice and the headers it persisted.
const PERSIST_FLAG = "graphiql:shouldPersistHeaders";
const PERSISTED_HEADERS = "graphiql:headers";

function authorization(headersText) {
  try {
    const headers = JSON.parse(headersText || "{}");
    for (const [name, value] of Object.entries(headers)) {
      if (name.toLowerCase() === "authorization" && typeof value === "string") {
        return value.trim();
      }
    }
  } catch (_) {
    // Headers being typed are not JSON yet: no key.
  }
  return "";
}

function hasKey(auth) {
  return /^Bearer\s+[^\s<>]+$/i.test(auth);
}

const persist = window.localStorage.getItem(PERSIST_FLAG) === "true";
const initialHeaders =
  window.sessionStorage.getItem(SESSION_HEADERS) ||
  (persist ? window.localStorage.getItem(PERSISTED_HEADERS) : null) ||
  DEFAULT_HEADERS;
const send = GraphiQL.createFetcher({ url: window.location.href.split("?")[0] });

// Without a key nothing is sent: the answer says where the key goes.
function keyedFetcher() {
  return function fetcher(params, options) {
    if (!hasKey(authorization(JSON.stringify((options && options.headers) || {})))) {
      return Promise.resolve({
        errors: [{ message: "Paste your API key in the Headers tab: " +
                           '{"Authorization": "Bearer <key>"}' }],
      });
    }
    return send(params, options);
  };
}

function MemoryGraphiQL() {
  const [headers, setHeaders] = React.useState(initialHeaders);
  const [auth, setAuth] = React.useState(authorization(initialHeaders));
  // The key as it settles (not each keystroke of one being typed).
  React.useEffect(() => {
    const timer = setTimeout(() => setAuth(authorization(headers)), 250);
    return () => clearTimeout(timer);
  }, [headers]);
  // GraphiQL introspects again whenever its fetcher changes: one per key.
  const fetcher = React.useMemo(keyedFetcher, [auth]);
  const explorer = React.useMemo(() => GraphiQLPluginExplorer.explorerPlugin(), []);

  function onEditHeaders(text) {
    window.sessionStorage.setItem(SESSION_HEADERS, text);
    setHeaders(text);
  }

  return React.createElement(GraphiQL, {
    fetcher: fetcher,
    // null: no introspection until there is a key (GraphiQL's documented "no schema").
    schema: hasKey(auth) ? undefined : null,
    defaultHeaders: DEFAULT_HEADERS,
    headers: initialHeaders,
    onEditHeaders: onEditHeaders,
    defaultEditorToolsVisibility: hasKey(authorization(initialHeaders)) ? true : "headers",
    isHeadersEditorEnabled: true,
    shouldPersistHeaders: persist,
    showPersistHeadersSettings: true,
    plugins: [explorer],
    inputValueDeprecation: true,
  });
}

ReactDOM.createRoot(document.getElementById("graphiql")).render(
  React.createElement(MemoryGraphiQL),
);
