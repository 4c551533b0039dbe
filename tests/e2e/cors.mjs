// A page on another origin calling the REST API from Debian's chromium, driven by
// playwright-core (tests/e2e/test_cors_browser.py runs it). Every request that is not to
// 127.0.0.1 is aborted. In (environment): PAGE_URLS (space-separated, each page's full URL),
// CHROMIUM, E2E_TIMEOUT_MS. Out: one JSON line on stdout, each page's window.result.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const env = process.env;
const timeout = Number(env.E2E_TIMEOUT_MS || 20000);
const killer = setTimeout(() => {
  console.error(`cors.mjs: gave up after ${2 * timeout} ms`);
  process.exit(3);
}, 2 * timeout);

const result = { external: [], console: [], pages: [] };
const userDataDir = mkdtempSync(join(tmpdir(), "jet-chromium-"));
let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    timeout,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  context.setDefaultTimeout(timeout);
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === "127.0.0.1") return route.continue();
    result.external.push(route.request().url());
    return route.abort("blockedbyclient");
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (m) => { if (m.type() === "error") result.console.push(m.text()); });
  page.on("pageerror", (e) => result.console.push(String(e)));
  for (const url of env.PAGE_URLS.split(" ")) {
    await page.goto(url, { waitUntil: "load" });
    await page.waitForFunction(() => window.result !== undefined, null, { timeout });
    result.pages.push(await page.evaluate(() => window.result));
  }
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  if (context) await context.close().catch(() => {});
  rmSync(userDataDir, { recursive: true, force: true });
  clearTimeout(killer);
}
console.log(JSON.stringify(result));
process.exit(result.error ? 1 : 0);
