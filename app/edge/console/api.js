// The console's one way to the server: GraphQL at /graphql on this origin, with the API key
// the person entered, kept in sessionStorage (this tab only) and sent only as a header.
const KEY = "jet-memory-console:key";

export const getKey = () => sessionStorage.getItem(KEY);
export const setKey = (key) => sessionStorage.setItem(KEY, key);
export const forgetKey = () => sessionStorage.removeItem(KEY);

export class ApiError extends Error {
  constructor(message, { kind = "client", requestId = null, code = null } = {}) {
    super(message);
    this.kind = kind; // "auth" | "server" | "client" | "network"
    this.requestId = requestId;
    this.code = code;
  }
}

export async function gql(query, variables = {}) {
  let res;
  try {
    res = await fetch("/graphql", {
      method: "POST",
      credentials: "omit",
      cache: "no-store",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        Authorization: `Bearer ${getKey() || ""}`,
      },
      body: JSON.stringify({ query, variables }),
    });
  } catch {
    throw new ApiError("The server cannot be reached. Check that it is running.", { kind: "network" });
  }
  const requestId = res.headers.get("X-Request-Id");
  if (res.status === 401) {
    throw new ApiError("This API key is not accepted: it was revoked or mistyped. Enter a valid key.",
      { kind: "auth", requestId });
  }
  let body = null;
  try { body = await res.json(); } catch { /* reported below */ }
  const first = body && body.errors && body.errors[0];
  if (first) {
    const ext = first.extensions || {};
    const server = ext.code === "INTERNAL_SERVER_ERROR" || res.status >= 500;
    throw new ApiError(server ? "The server failed to answer." : first.message,
      { kind: server ? "server" : "client", requestId: ext.requestId || requestId, code: ext.code });
  }
  if (!res.ok || !body || !body.data) {
    throw new ApiError(`The server answered ${res.status}.`,
      { kind: res.status >= 500 ? "server" : "client", requestId });
  }
  return body.data;
}

// A mutation's payload errors (UserError) as one ApiError, or nothing.
export function payloadError(errors) {
  if (!errors || errors.length === 0) return null;
  const e = errors[0];
  return new ApiError(`${e.field.join(".")}: ${e.message}`, { kind: "client", code: e.code });
}
