// The console in Debian's chromium, driven by playwright-core (test_console_browser.py runs
// it): a person's path through every screen against the server under test, every request
// elsewhere aborted, axe-core's check, screenshots. In (environment): JET_URL, JET_API_KEY,
// JET_BIG_REF, JET_ACME_REF, JET_GONE_REF, JET_SHOTS (a directory), AXE (axe.min.js),
// CHROMIUM, E2E_TIMEOUT_MS. Out: one JSON line on stdout.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const env = process.env;
const base = new URL(env.JET_URL);
const timeout = Number(env.E2E_TIMEOUT_MS || 20000);
const killer = setTimeout(() => {
  console.error(`console.mjs: gave up after ${8 * timeout} ms`);
  process.exit(3);
}, 8 * timeout);

const result = { external: [], failed: [], console: [], urls: [], steps: {}, axe: {} };
const api = async (query, variables) => {
  const r = await fetch(new URL("/graphql", base), {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${env.JET_API_KEY}` },
    body: JSON.stringify({ query, variables }),
  });
  return (await r.json()).data;
};
const axeSource = readFileSync(env.AXE, "utf8");
async function axe(page, name) {
  // Evaluated through the debugging protocol, so the page's CSP (no inline script) holds.
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length,
                                     help: v.help, target: v.nodes[0]?.target }));
  });
  result.axe[name] = found;
}

const userDataDir = mkdtempSync(join(tmpdir(), "jet-chromium-"));
let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    timeout,
    viewport: { width: 1280, height: 860 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  context.setDefaultTimeout(timeout);
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === "data:" || url.protocol === "blob:" || url.host === base.host) {
      return route.continue();
    }
    result.external.push(route.request().url());
    return route.abort("blockedbyclient");
  });
  context.on("request", (r) => result.urls.push(r.url()));
  context.on("requestfailed", (r) => result.failed.push(`${r.url()} ${r.failure()?.errorText}`));
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (m) => { if (m.type() === "error") result.console.push(m.text()); });
  page.on("pageerror", (e) => result.console.push(String(e)));
  const sockets = [];
  page.on("websocket", (ws) => sockets.push(ws.url()));

  // 1. The key: a wrong one is refused with a clear message, the right one opens the console.
  await page.goto(new URL("/console", base).href, { waitUntil: "load" });
  const keyInput = page.getByLabel("API key");
  await keyInput.fill("jm_revoked_or_mistyped_key");
  await keyInput.press("Enter");
  const alert = page.getByRole("alert");
  await alert.waitFor();
  result.steps.badKey = await alert.innerText();
  result.console = result.console.filter((t) => !t.includes("401")); // the refused key's own 401
  await axe(page, "key form");
  await page.screenshot({ path: join(env.JET_SHOTS, "key.png") });
  await keyInput.fill(env.JET_API_KEY);
  await page.keyboard.press("Tab"); // to the button, by keyboard
  await page.keyboard.press("Enter");
  const scopes = page.getByRole("navigation", { name: "Scopes" });
  await scopes.getByRole("button", { name: new RegExp(env.JET_BIG_REF) }).waitFor();
  result.steps.scopes = await scopes.innerText();
  result.steps.keyInStorage = await page.evaluate(() => Object.keys(sessionStorage));

  // 2. The big scope's first page: from the click to its first event on screen.
  const t0 = Date.now();
  await scopes.getByRole("button", { name: new RegExp(env.JET_BIG_REF) }).click();
  await page.locator(".event").first().waitFor();
  result.steps.firstPageClickMs = Date.now() - t0;
  result.steps.firstPageFetchRenderMs = Number(await page.evaluate(() => document.body.dataset.firstPageMs));
  // Infinite scroll: the end of the list comes into view, the next page follows.
  await page.locator(".event").nth(49).scrollIntoViewIfNeeded();
  await page.locator(".event").nth(60).waitFor();
  result.steps.afterScroll = await page.locator(".event").count();

  // 3. Acme's timeline: filter by compressed, open the summary an event went into.
  await scopes.getByRole("button", { name: new RegExp(env.JET_ACME_REF) }).click();
  await page.locator(".event").first().waitFor();
  await axe(page, "timeline");
  await page.screenshot({ path: join(env.JET_SHOTS, "timeline.png") });
  await page.getByLabel("Compressed").selectOption("yes");
  await page.getByRole("button", { name: "Apply" }).click();
  // The filtered page has replaced the whole list: every event on it has its summary.
  await page.waitForFunction(() => {
    const shown = document.querySelectorAll(".event").length;
    return shown > 0 && shown === document.querySelectorAll(".event button[aria-expanded]").length;
  });
  const into = page.getByRole("button", { name: /^Compressed into/ }).first();
  result.steps.compressedShown = await page.locator(".event").count();
  await into.click();
  result.steps.summary = await page.locator(".summary").first().innerText();
  await page.getByLabel("Kind", { exact: true }).last().fill("decision");
  await page.getByLabel("Compressed").selectOption("");
  await page.getByRole("button", { name: "Apply" }).click();
  await page.waitForFunction(() => [...document.querySelectorAll(".event strong")].every((s) => s.textContent === "decision"));
  result.steps.kindFiltered = await page.locator(".event").count();

  // 4. Entries: search with scores, open, edit (and meet a concurrent edit), create, delete.
  const tabs = page.getByRole("tablist", { name: "Scope views" });
  await tabs.getByRole("tab", { name: "Timeline" }).focus();
  await page.keyboard.press("ArrowRight"); // tabs move with the arrow keys
  await page.getByLabel("Search").waitFor();
  result.steps.arrowKeyTab = await page.evaluate(() => document.activeElement?.textContent);
  await page.getByLabel("Search").fill("ROAS target");
  await page.getByRole("button", { name: "Search" }).click();
  await page.locator(".match").first().waitFor();
  result.steps.search = await page.locator(".entries").innerText();
  await axe(page, "entries");
  await page.screenshot({ path: join(env.JET_SHOTS, "entries.png") });
  await page.locator(".entries .link", { hasText: "ROAS" }).first().click();
  await page.getByLabel("Summary (Markdown)").waitFor();
  const entryId = (await api(`query($f: MemoryEntryFilter) { memoryEntries(filter: $f) {
    edges { node { id title } } } }`, { f: { search: "ROAS target", scopeRef: env.JET_ACME_REF } }))
    .memoryEntries.edges.find((e) => e.node.title.includes("ROAS")).node.id;
  await page.getByLabel("Summary (Markdown)").fill("Acme's ROAS target is 4.0 from Q3 (checked by the team lead).");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Saved.").waitFor();
  // Someone else saves now; our next save must show theirs, not overwrite it.
  await api(`mutation($id: ID!) { updateMemoryEntry(id: $id, input: { summary: "Changed by an agent." }) { entry { version } } }`, { id: entryId });
  await page.getByLabel("Title").fill("ROAS target (edited in the console)");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Someone else saved this entry first").waitFor();
  result.steps.conflict = await page.locator(".conflict").innerText();
  result.steps.afterConflict = (await api(`query($id: ID!) { memoryEntry(id: $id) { title summary version } }`, { id: entryId })).memoryEntry;
  await page.getByRole("button", { name: "Load their version" }).click();
  // History: restore the first version.
  await page.getByRole("button", { name: "Restore v1" }).click();
  await page.waitForFunction(() => /version 4/.test(document.querySelector(".entry-detail .muted")?.textContent || ""));
  result.steps.restored = (await api(`query($id: ID!) { memoryEntry(id: $id) { summary version } }`, { id: entryId })).memoryEntry;
  await page.getByRole("button", { name: "Back to entries" }).click();
  // A compactor entry's source events.
  await page.getByLabel("Search").fill("");
  await page.getByRole("button", { name: "Search" }).click();
  await page.locator(".entries li", { hasText: "compactor" }).first().locator(".link").click();
  await page.getByRole("heading", { name: /^Source events/ }).waitFor();
  result.steps.sources = await page.getByRole("heading", { name: /^Source events/ }).innerText();
  await page.getByRole("button", { name: "Back to entries" }).click();
  // Create one, then delete it (with a confirmation).
  await page.getByRole("button", { name: "New entry" }).click();
  await page.getByLabel("Title").fill("Renewal call booked");
  await page.getByLabel("Summary (Markdown)").fill("Renewal call with Acme on 2026-07-02.");
  await page.getByLabel("Tags (comma-separated)").fill("renewal, acme");
  await page.getByRole("button", { name: "Create entry" }).click();
  await page.getByRole("heading", { name: "Renewal call booked" }).waitFor();
  await page.getByRole("button", { name: "Delete…" }).click();
  await page.getByRole("button", { name: "Yes, delete this entry" }).click();
  await page.getByLabel("Search").waitFor();
  result.steps.afterDelete = (await api(`query($f: MemoryEntryFilter) { memoryEntries(filter: $f) {
    edges { node { title } } } }`, { f: { scopeRef: env.JET_ACME_REF } })).memoryEntries.edges.map((e) => e.node.title);

  // 5. Context preview for a question and a budget, with what was left out.
  await tabs.getByRole("tab", { name: "Context preview" }).click();
  await page.getByLabel("Question").fill("What did Acme decide about ROAS?");
  await page.getByLabel("Token budget").fill("120");
  await page.getByRole("button", { name: "Preview" }).click();
  await page.locator("pre.markdown").waitFor();
  result.steps.context = await page.getByRole("tabpanel").innerText();
  await axe(page, "context");
  await page.screenshot({ path: join(env.JET_SHOTS, "context.png") });

  // 6. Live updates: an agent appends to this scope; the console says so.
  await page.locator(".live").getByText("Live:").waitFor();
  // The subscription starts "from now on" once the server has taken it: an agent that
  // wrote just before is not announced, so the agent writes until one is (a bounded loop).
  const notice = page.getByText(/new changes? in this scope/);
  for (let i = 0; i < 15 && !(await notice.isVisible()); i += 1) {
    await api(`mutation { appendMemoryEvent(input: { scope: ENTITY, scopeRef: "${env.JET_ACME_REF}",
      kind: "note", body: "A note from an agent." }) { event { id } } }`);
    await notice.waitFor({ timeout: 2000 }).catch(() => {});
  }
  await notice.waitFor();
  result.steps.live = await page.locator(".notice").innerText();

  // 7. Compaction runs, and a dry run started from here.
  await page.getByRole("button", { name: "Compaction", exact: true }).click();
  await page.locator("tbody tr").first().waitFor();
  await page.getByRole("button", { name: "Start a dry run" }).click();
  await page.locator("tbody tr", { hasText: "dry run (api)" }).waitFor();
  result.steps.runs = await page.locator("table").innerText();
  result.steps.dryRun = await page.locator(".dry-run").innerText();
  await axe(page, "compaction");
  await page.screenshot({ path: join(env.JET_SHOTS, "compaction.png") });

  // 8. A server error shows its request id (the answer a masked error gets, here forced).
  await page.route("**/graphql", (route) => route.fulfill({
    status: 200, contentType: "application/json", headers: { "X-Request-Id": "req_forced" },
    body: JSON.stringify({ data: null, errors: [{ message: "Internal Server Error",
      extensions: { code: "INTERNAL_SERVER_ERROR", requestId: "req_forced" } }] }),
  }));
  await page.getByRole("button", { name: "Scopes", exact: true }).click();
  await page.getByText("req_forced").waitFor();
  result.steps.serverError = await page.getByRole("alert").first().innerText();
  await page.unroute("**/graphql");

  // 9. Erasure with a typed confirmation.
  await page.reload({ waitUntil: "load" });
  await scopes.getByRole("button", { name: new RegExp(env.JET_GONE_REF) }).click();
  await page.getByRole("tab", { name: "Erase" }).click();
  const erase = page.getByRole("button", { name: `Erase ${env.JET_GONE_REF}` });
  result.steps.eraseDisabledFirst = await erase.isDisabled();
  await page.getByLabel(/to confirm/).fill(env.JET_GONE_REF);
  await erase.click();
  await page.getByRole("heading", { name: "Erased" }).waitFor();
  result.steps.erased = await page.getByRole("status").first().innerText();
  await page.getByRole("button", { name: "Back to the scopes" }).click();
  await page.waitForFunction((ref) => !document.querySelector(".scopes")?.textContent.includes(ref), env.JET_GONE_REF);

  // 10. Narrow: 320 px wide, nothing wider than the screen.
  await scopes.getByRole("button", { name: new RegExp(env.JET_ACME_REF) }).click();
  await page.locator(".event").first().waitFor();
  await page.screenshot({ path: join(env.JET_SHOTS, "desktop.png") });
  await page.setViewportSize({ width: 320, height: 720 });
  await page.waitForTimeout(200);
  result.steps.overflow320 = await page.evaluate(() => document.documentElement.scrollWidth);
  await axe(page, "320px");
  await page.screenshot({ path: join(env.JET_SHOTS, "narrow.png") });
  result.sockets = sockets;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  if (context) await context.close().catch(() => {});
  rmSync(userDataDir, { recursive: true, force: true });
  clearTimeout(killer);
}
console.log(JSON.stringify(result));
process.exit(result.error ? 1 : 0);
