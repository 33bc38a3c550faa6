// Browser end-to-end test of the operations console: starts `a2a-gateway
// demo` on free ports, drives Debian's chromium through playwright-core,
// and saves screenshots of the overview and of a task page. run.sh builds
// the binary and sets GATEWAY_BIN and OUTPUT_DIR.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, mkdir, copyFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const bin = process.env.GATEWAY_BIN;
const out = process.env.OUTPUT_DIR;
const docsImages = process.env.DOCS_IMAGES; // set by run.sh --update: where the docs keep the screenshots
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const step = 250; // ms between polls of a page
const patience = 60_000; // ms a wait may take before the test fails

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

let demo, demoOut = "", demoErr = "", ports, browser, userDir;
let opsToken, callerToken;

async function waitFor(what, fn) {
  const until = Date.now() + patience;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, step));
  }
}

before(async () => {
  assert.ok(bin && out, "GATEWAY_BIN and OUTPUT_DIR must be set (run ./run.sh)");
  await mkdir(out, { recursive: true });
  ports = { pub: await freePort(), admin: await freePort(), hook: await freePort() };
  demo = spawn(bin, ["demo", "-listen", `127.0.0.1:${ports.pub}`, "-admin", `127.0.0.1:${ports.admin}`,
    "-webhook", `127.0.0.1:${ports.hook}`], { stdio: ["ignore", "pipe", "pipe"] });
  demo.stdout.on("data", (b) => { demoOut += b; });
  demo.stderr.on("data", (b) => { demoErr += b; });
  await waitFor("the demo to print its console URL and tokens", () => {
    const ops = demoOut.match(/sign in with the ops token (\S+)/);
    const tok = demoOut.match(/export TOKEN=(\S+)/);
    if (ops && tok) { opsToken = ops[1]; callerToken = tok[1]; return true; }
    return false;
  });
  assert.match(demoOut, new RegExp(`http://127\\.0\\.0\\.1:${ports.admin}/console/`));
  await waitFor("the gateway to be ready", async () => {
    try { return (await fetch(`http://127.0.0.1:${ports.admin}/readyz`)).ok; } catch { return false; }
  });
  userDir = await mkdtemp(path.join(tmpdir(), "console-e2e-chromium-"));
  browser = await chromium.launchPersistentContext(userDir, {
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 900 },
  });
});

after(async () => {
  if (browser) await browser.close();
  if (userDir) await rm(userDir, { recursive: true, force: true });
  if (demo) demo.kill("SIGTERM");
  if (process.exitCode) console.error(demoErr.slice(-4000));
});

// send makes a task through the gateway as tenant "demo".
async function send(text, id, pushURL) {
  const body = { message: { messageId: id, role: "ROLE_USER", parts: [{ text }] } };
  if (pushURL) body.configuration = { taskPushNotificationConfig: { url: pushURL } };
  const res = await fetch(`http://127.0.0.1:${ports.pub}/agents/demo/message:send`, {
    method: "POST",
    headers: { Authorization: `Bearer ${callerToken}`, "A2A-Version": "1.0", "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()).task;
}

async function screenshot(page, name) {
  const file = path.join(out, name);
  await page.screenshot({ path: file, fullPage: true });
  if (docsImages) await copyFile(file, path.join(docsImages, name));
}

// noSecrets checks that no token the test knows is in the page.
async function noSecrets(page) {
  const html = await page.content();
  assert.ok(!html.includes(opsToken), "the ops token is in the page");
  assert.ok(!html.includes(callerToken), "a caller's token is in the page");
}

test("an operator follows a task and redelivers its dead-lettered notification", async () => {
  const admin = `http://127.0.0.1:${ports.admin}`;
  const flaky = `http://127.0.0.1:${ports.hook}/webhook/flaky`;
  await send("complete", "e2e-done", null);
  const task = await send("input", "e2e-input", flaky);
  assert.equal(task.status.state, "TASK_STATE_INPUT_REQUIRED");

  const page = await browser.newPage();
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });

  // Sign in: the token goes in the form, never in a URL.
  await page.goto(`${admin}/console/`);
  assert.match(page.url(), /\/console\/login$/);
  await page.fill("#token", opsToken);
  await Promise.all([page.waitForURL(`${admin}/console/`), page.click("button[type=submit]")]);
  assert.equal(await page.textContent("h1"), "Overview");
  assert.ok(!page.url().includes(opsToken));
  const cookies = await browser.cookies(admin);
  const session = cookies.find((c) => c.name === "a2agw-console");
  assert.ok(session && session.httpOnly && session.sameSite === "Strict", JSON.stringify(cookies));
  await noSecrets(page);

  // Find the input task and read its timeline.
  await page.goto(`${admin}/console/tasks?agent=demo&state=input-required`);
  const link = page.locator("a.task-link", { hasText: task.id });
  await link.click();
  await page.waitForSelector("#timeline rect.st-input-required");
  assert.equal(await page.textContent("#task-state"), "input-required");
  assert.match(await page.textContent("#states"), /interrupted/);
  assert.match(await page.textContent("#configs"), /webhook\/flaky/);
  await noSecrets(page);

  // The webhook fails until its notification is dead-lettered.
  await waitFor("the notification to be dead-lettered", async () => {
    await page.goto(`${admin}/console/dead-letters`);
    return (await page.locator("#dead-letters tr", { hasText: task.id }).count()) > 0;
  });
  await noSecrets(page);
  const overview = await browser.newPage();
  await overview.goto(`${admin}/console/`);
  await screenshot(overview, "console-overview.png");
  await overview.close();

  // The webhook recovers; once the receiver's breaker lets a request
  // through, redeliver from the console.
  assert.equal((await fetch(`${flaky}/recover`, { method: "POST" })).status, 204);
  await waitFor("the receiver's breaker to let requests through", async () => {
    await page.goto(`${admin}/console/endpoints`);
    return (await page.locator("#receivers td.breaker-open").count()) === 0;
  });
  await page.goto(`${admin}/console/dead-letters`);
  const rows = page.locator("#dead-letters tr", { hasText: task.id });
  for (let i = 0; i < await rows.count(); i++) await rows.nth(i).locator("input.sel").check();
  await Promise.all([page.waitForURL(/done=redelivered/), page.click("#redeliver")]);
  assert.match(await page.textContent(".flash"), /Queued again/);

  // See it delivered: the task's delivery log ends with a 2xx answer.
  await waitFor("the redelivered notification to be delivered", async () => {
    await page.goto(`${admin}/console/tasks/demo/${task.id}`);
    const answers = await page.locator("#attempts td.answer").allTextContents();
    return answers.length > 0 && /^2\d\d$/.test(answers[answers.length - 1].trim());
  });
  assert.equal(await page.locator("#dead-letters tr", { hasText: task.id }).count(), 0);
  await noSecrets(page);
  await screenshot(page, "console-task.png");
  assert.deepEqual(errors, [], "the pages logged errors (a CSP violation?)");
});
