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

  await page.goto(new URL("/graphql", base).href, { waitUntil: "load" });
  const query = page.locator(".graphiql-query-editor .CodeMirror");
  await query.waitFor({ state: "visible" });

  // The Headers tab, pre-filled with {"Authorization": "Bearer <paste your API key>"}:
  // put the key in, as a user pasting it would.
  await page.locator('.graphiql-editor-tools button[data-name="headers"]').click();
  const headers = page.locator(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror");
  await headers.waitFor({ state: "visible" });
  result.prefilled = await headers.evaluate((el) => el.CodeMirror.getValue());
  const headerText = JSON.stringify({ Authorization: `Bearer ${env.JET_API_KEY}` }, null, 2);
  await headers.evaluate((el, text) => el.CodeMirror.setValue(text), headerText);
  await query.evaluate((el, text) => el.CodeMirror.setValue(text), env.JET_QUERY);

  const answered = page.waitForResponse(
    (r) => r.url().startsWith(new URL("/graphql", base).href) && r.request().method() === "POST"
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
