// GraphiQL in Debian's chromium, driven by playwright-core (tests/e2e/test_graphiql_browser.py
// runs it). Every request that is not to the server under test is aborted and reported.
// In (environment): JET_URL, JET_API_KEY, JET_QUERY, JET_EXPECT, JET_SCREENSHOT,
// CHROMIUM (default /usr/bin/chromium), E2E_TIMEOUT_MS. Out: one JSON line on stdout.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const env = process.env;
const base = new URL(env.JET_URL);
const timeout = Number(env.E2E_TIMEOUT_MS || 20000);
// Whatever happens, never outlive the test's own bound.
const killer = setTimeout(() => {
  console.error(`graphiql.mjs: gave up after ${2 * timeout} ms`);
  process.exit(3);
}, 2 * timeout);

const result = { external: [], failed: [], console: [], response: null, requests: 0 };
const userDataDir = mkdtempSync(join(tmpdir(), "jet-chromium-"));
let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    timeout,
    viewport: { width: 1400, height: 800 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  context.setDefaultTimeout(timeout);
  // The network to the internet is blocked: only the server under test is reachable.
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === "data:" || url.protocol === "blob:" || url.host === base.host) {
      return route.continue();
    }
    result.external.push(route.request().url());
    return route.abort("blockedbyclient");
  });
  context.on("request", () => { result.requests += 1; });
  context.on("requestfailed", (r) => result.failed.push(`${r.url()} ${r.failure()?.errorText}`));
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (m) => { if (m.type() === "error") result.console.push(m.text()); });
  page.on("pageerror", (e) => result.console.push(String(e)));

  // Every POST to /graphql, with the Authorization it carried (none may be the placeholder).
  const graphqlUrl = new URL("/graphql", base).href;
  result.posts = [];
  page.on("request", (r) => {
    if (r.url().startsWith(graphqlUrl) && r.method() === "POST") {
      result.posts.push({ authorization: r.headers()["authorization"] || null,
                          introspection: (r.postData() || "").includes("IntrospectionQuery") });
    }
  });

  // 1. Open: the Headers tab shows the placeholder; nothing is sent with it.
  await page.goto(graphqlUrl, { waitUntil: "load" });
  const query = page.locator(".graphiql-query-editor .CodeMirror");
  await query.waitFor({ state: "visible" });
  const headers = page.locator(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror");
  if (!(await headers.isVisible())) {
    await page.locator('.graphiql-editor-tools button[data-name="headers"]').click();
  }
  await headers.waitFor({ state: "visible" });
  result.prefilled = await headers.evaluate((el) => el.CodeMirror.getValue());
  await page.waitForTimeout(1000); // what a first run would have sent by now, it has
  result.postsBeforeKey = result.posts.length;

  // 2. Paste the key, as a person would: the schema is introspected with it at once.
  const introspected = page.waitForResponse(
    (r) => r.url().startsWith(graphqlUrl) && (r.request().postData() || "").includes("IntrospectionQuery"),
  );
  const headerText = JSON.stringify({ Authorization: `Bearer ${env.JET_API_KEY}` }, null, 2);
  await headers.evaluate((el, text) => el.CodeMirror.setValue(text), headerText);
  result.introspectionStatus = (await introspected).status();

  // 3. Autocomplete: typing the start of a field offers the schema's completions.
  await query.evaluate((el) => { el.CodeMirror.setValue(""); el.CodeMirror.focus(); });
  await query.click();
  await page.keyboard.type("{ memoryEv");
  const hints = page.locator(".CodeMirror-hints li");
  await hints.first().waitFor({ state: "visible" });
  result.completions = await hints.allInnerTexts();

  // 4. Docs: the documentation explorer shows the schema's root types and fields.
  await page.locator('.graphiql-sidebar button[aria-label="Show Documentation Explorer"]').click();
  const docs = page.locator(".graphiql-doc-explorer");
  await docs.getByText("Query", { exact: true }).first().click();
  await docs.getByText("memoryEvents", { exact: true }).first().waitFor({ state: "visible" });
  result.docs = await docs.innerText();

  // 5. Run a query.
  await page.keyboard.press("Escape");
  await query.evaluate((el, text) => el.CodeMirror.setValue(text), env.JET_QUERY);
  const answered = page.waitForResponse(
    (r) => r.url().startsWith(graphqlUrl) && r.request().method() === "POST"
      && !(r.request().postData() || "").includes("IntrospectionQuery")
      && (r.request().postData() || "").includes("memoryEvents"),
  );
  await page.locator(".graphiql-execute-button").click();
  result.status = (await answered).status();
  const panel = page.locator(".graphiql-response .CodeMirror");
  await page.waitForFunction(
    (expect) => {
      const el = document.querySelector(".graphiql-response .CodeMirror");
      return Boolean(el && el.CodeMirror && el.CodeMirror.getValue().includes(expect));
    },
    env.JET_EXPECT,
    { timeout },
  );
  result.response = await panel.evaluate((el) => el.CodeMirror.getValue());
  // What the user sees, not only the editor's model.
  result.visible = await page.locator(".graphiql-response").innerText();
  await page.screenshot({ path: env.JET_SCREENSHOT, timeout });
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  if (context) await context.close().catch(() => {});
  rmSync(userDataDir, { recursive: true, force: true });
  clearTimeout(killer);
}
console.log(JSON.stringify(result));
process.exit(result.error ? 1 : 0);
