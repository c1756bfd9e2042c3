// The dashboard in a real browser (CTest: integration.dashboard_browser). Starts `fencelock
// serve` on a free port, opens / in Debian's Chromium (headless, through playwright-core) and
// checks what an operator sees:
//
//   1. a lock acquired over HTTP appears with its token
//   2. a renewal moves its countdown back up
//   3. a lease that expires is marked, then removed
//   4. a prefix shows only its locks, and is kept in a link that can be shared
//   5. a hostile owner is shown as text
//   6. after a server restart the page reconnects and shows the state again
//   7. the console has no errors
//   8. 10,000 held locks: only the rows in view are in the DOM (frame times are printed, never
//      asserted)
//   9. with an auth file (docs/security.md) the page asks for a token and works with a read-only
//      principal's
//
// It saves a screenshot, dashboard.png, into --artifacts. Prints "SKIPPED: <why>" when Node.js
// is too old or there is no /usr/bin/chromium.
//
//   node dashboard.test.mjs --binary build/fencelock --deps <dir for node_modules> --artifacts <dir>

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  Server,
  eachParallel,
  launchChromium,
  loadPlaywright,
  missingPrerequisite,
  skip,
  tempDir,
} from './harness.mjs';

const { values: opts } = parseArgs({
  options: {
    binary: { type: 'string' },
    deps: { type: 'string' },
    artifacts: { type: 'string', default: '.' },
  },
});
if (!opts.binary || !opts.deps) {
  console.error('usage: node dashboard.test.mjs --binary <fencelock> --deps <dir> [--artifacts <dir>]');
  process.exit(2);
}

const why = missingPrerequisite();
if (why) skip(why);

const wait = { timeout: 20_000 };
const hostile = '<img src=x onerror=window.__pwned=1>';

/** Reads the seconds of a countdown text ("29.4 s", "1 m 05 s"). */
function secondsOf(text) {
  let m = /^([\d.]+) s$/.exec(text);
  if (m) return Number(m[1]);
  m = /^(\d+) m (\d+) s$/.exec(text);
  if (m) return Number(m[1]) * 60 + Number(m[2]);
  m = /^(\d+) h (\d+) m$/.exec(text);
  if (m) return Number(m[1]) * 3600 + Number(m[2]) * 60;
  return NaN;
}

const results = [];
async function check(name, fn) {
  const started = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`ok - ${name} (${Date.now() - started} ms)`);
  } catch (e) {
    results.push({ name, ok: false });
    console.log(`not ok - ${name}\n${String(e.stack ?? e).replace(/^/gm, '    ')}`);
  }
}

const playwright = loadPlaywright(opts.deps);
const dataDir = tempDir('fencelock-dashboard-');
let server = await Server.start(opts.binary, { dataDir });
const browser = await launchChromium(playwright);
let exitCode = 1;
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();

  // Everything the console says, with the time, and whether the server was down on purpose then.
  let restarting = false;
  const problems = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning')
      problems.push({ text: msg.text(), type: msg.type(), restarting, url: msg.location().url });
  });
  page.on('pageerror', (err) => problems.push({ text: `uncaught: ${err.message}`, type: 'pageerror', restarting }));

  // Rows on screen: the table keeps spare row elements, hidden, for when it scrolls.
  const row = (lock) => page.locator(`#locks-scroll .vrow[data-lock="${lock}"]:visible`);
  const cellText = async (lock, cell) => (await row(lock).locator(cell).textContent()).trim();
  const live = () => page.waitForSelector('#conn[data-state="live"]', wait);

  await page.goto(`${server.url}/`);
  await live();

  await check('1. a lock acquired over HTTP appears with its token', async () => {
    const lease = await server.acquire('jobs:report', 'worker-1', 30_000);
    await row('jobs:report').waitFor(wait);
    await page.waitForFunction(
      ([lock, token]) =>
        [...document.querySelectorAll(`#locks-scroll .vrow[data-lock="${lock}"]`)].some(
          (r) => r.checkVisibility() && r.querySelector('.c-token').textContent === String(token),
        ),
      ['jobs:report', lease.token],
      wait,
    );
    assert.equal(await cellText('jobs:report', '.c-owner'), 'worker-1');
    // The events pane has it too.
    await page.locator('#events-scroll .erow', { hasText: 'jobs:report' }).first().waitFor(wait);
  });

  await check('2. a renewal moves the countdown back up', async () => {
    const lease = await server.acquire('jobs:renewed', 'worker-2', 30_000);
    await row('jobs:renewed').waitFor(wait);
    // Let it count down a little, then renew for a minute: the countdown jumps up by far more
    // than any delay of a loaded machine could take off it.
    let before = NaN;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      before = secondsOf(await cellText('jobs:renewed', '.left-text'));
      if (before <= 27.5) break;
      await sleep(100);
    }
    assert.ok(before <= 27.5, `the countdown did not go down (shows ${before} s)`);
    await server.renew('jobs:renewed', 'worker-2', lease.token, 60_000);
    let after = NaN;
    const until = Date.now() + 20_000;
    while (Date.now() < until) {
      after = secondsOf(await cellText('jobs:renewed', '.left-text'));
      if (after >= before + 15) break;
      await sleep(50);
    }
    assert.ok(after >= before + 15, `the countdown went from ${before} s to ${after} s only`);
    // The bar is full again: the lease's TTL runs from the renewal.
    const bar = await row('jobs:renewed').locator('.fill').evaluate((el) => el.style.transform);
    assert.match(bar, /scaleX\((0\.[89]\d*|1)\)/);
    assert.equal(await cellText('jobs:renewed', '.c-rev'), '1');
  });

  await check('3. a lease that expires is marked, then removed', async () => {
    await server.acquire('jobs:short', 'worker-3', 1500);
    await row('jobs:short').waitFor(wait);
    await page.waitForSelector('#locks-scroll .vrow[data-lock="jobs:short"][data-state="expired"]', wait);
    assert.equal(await cellText('jobs:short', '.left-text'), 'expired');
    await row('jobs:short').waitFor({ state: 'detached', timeout: 20_000 });
    await page
      .locator('#events-scroll .erow', { hasText: 'jobs:short' })
      .filter({ has: page.locator('.badge[data-event="expired"]') })
      .first()
      .waitFor(wait);
  });

  await check('4. a prefix shows only its locks, kept in the URL', async () => {
    await server.acquire('billing:invoice-1', 'billing-7f3a', 60_000);
    await server.acquire('billing:invoice-2', 'billing-7f3a', 60_000);
    await row('billing:invoice-2').waitFor(wait);
    await page.fill('#prefix', 'billing:');
    await page.click('#prefix-form button');
    await page.waitForURL(/[?&]prefix=billing%3A/, wait);
    await live();
    const names = async () =>
      page.$$eval('#locks-scroll .vrow', (rows) =>
        rows.filter((r) => r.checkVisibility()).map((r) => r.dataset.lock).sort(),
      );
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll('#locks-scroll .vrow')]
          .filter((r) => r.checkVisibility())
          .every((r) => r.dataset.lock.startsWith('billing:')),
      null,
      wait,
    );
    assert.deepEqual(await names(), ['billing:invoice-1', 'billing:invoice-2']);
    // A lock acquired under another prefix does not show up; one under it does.
    await server.acquire('jobs:other', 'worker-4', 60_000);
    await server.acquire('billing:invoice-3', 'billing-7f3a', 60_000);
    await row('billing:invoice-3').waitFor(wait);
    assert.deepEqual(await names(), ['billing:invoice-1', 'billing:invoice-2', 'billing:invoice-3']);
    // The link can be shared: a fresh load of it watches the same prefix.
    await page.reload();
    await live();
    assert.equal(await page.inputValue('#prefix'), 'billing:');
    await row('billing:invoice-3').waitFor(wait);
    assert.deepEqual(await names(), ['billing:invoice-1', 'billing:invoice-2', 'billing:invoice-3']);
    // Back to every lock.
    await page.fill('#prefix', '');
    await page.click('#prefix-form button');
    await live();
    await row('jobs:other').waitFor(wait);
  });

  await check('5. a hostile owner is shown as text', async () => {
    await server.acquire('hostile:owner', hostile, 60_000);
    await row('hostile:owner').waitFor(wait);
    assert.equal(await cellText('hostile:owner', '.c-owner'), hostile);
    await page.locator('#events-scroll .e-owner', { hasText: hostile }).first().waitFor(wait);
    assert.equal(await page.locator('main img').count(), 0, 'an <img> element appeared in the page');
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
  });

  const survivor = await server.acquire('jobs:survivor', 'worker-5', 600_000);
  await row('jobs:survivor').waitFor(wait);
  await check('6. after a server restart the page reconnects and shows the state again', async () => {
    const port = server.port;
    restarting = true;
    await server.stop();
    await page.waitForSelector('#conn[data-state="down"]', wait);
    assert.ok(await page.isVisible('#banner'), 'no disconnected banner');
    assert.match(await page.textContent('#banner-text'), /Reconnecting/);
    // It stays through the next reconnect attempt while the server is gone, not only between
    // attempts: what the page shows when the badge turns to connecting is recorded there.
    await page.evaluate(() => {
      window.__bannerInAttempt = null;
      const conn = document.querySelector('#conn');
      new MutationObserver(() => {
        if (conn.dataset.state !== 'connecting' || window.__bannerInAttempt !== null) return;
        window.__bannerInAttempt =
          !document.querySelector('#banner').hidden &&
          /Reconnecting now/.test(document.querySelector('#banner-text').textContent);
      }).observe(conn, { attributes: true });
    });
    await page.waitForFunction(() => window.__bannerInAttempt !== null, null, wait);
    const shown = await page.evaluate(() => window.__bannerInAttempt);
    assert.equal(shown, true, 'the banner went away during a reconnect attempt');
    server = await Server.start(opts.binary, { dataDir, port });
    await live();
    restarting = false;
    assert.ok(!(await page.isVisible('#banner')), 'the banner stayed after reconnecting');
    await row('jobs:survivor').waitFor(wait);
    assert.equal(await cellText('jobs:survivor', '.c-token'), String(survivor.token));
    assert.equal(await cellText('jobs:survivor', '.c-owner'), 'worker-5');
    // New events flow again on the new connection.
    await server.acquire('jobs:after-restart', 'worker-6', 60_000);
    await row('jobs:after-restart').waitFor(wait);
  });

  await page.screenshot({ path: path.join(opts.artifacts, 'dashboard.png') });

  await check('8. 10,000 held locks: only the rows in view are in the DOM', async () => {
    const names = Array.from({ length: 10_000 }, (_, i) => `load:lock-${String(i).padStart(5, '0')}`);
    const started = Date.now();
    let newest = { token: 0 };
    await eachParallel(names, 48, async (name, i) => {
      const lease = await server.acquire(name, `loader-${i % 97}`, 600_000);
      if (lease.token > newest.token) newest = lease;
    });
    const acquiredIn = Date.now() - started;
    await page.waitForFunction(
      () => Number(document.getElementById('stat-held').textContent.replace(/,/g, '')) >= 10_000,
      null,
      { timeout: 60_000 },
    );
    const rows = await page.locator('#locks-scroll .vrow').count();
    assert.ok(rows < 100, `${rows} row elements for 10,000 locks`);
    // Sorting and filtering work on all of them, not only on the rows in view.
    await page.fill('#filter', 'lock-09999');
    await row('load:lock-09999').waitFor(wait);
    await page.fill('#filter', '');
    await page.click('[data-sort="token"]');
    // The table renders on the next animation frame: wait for it (bounded), then check.
    const topRow = (s) =>
      [...s.querySelectorAll('.vrow')].find((r) => r.checkVisibility() && r.vindex === 0)?.dataset.lock;
    await page
      .waitForFunction(
        (want) => {
          const s = document.getElementById('locks-scroll');
          return [...s.querySelectorAll('.vrow')].find((r) => r.checkVisibility() && r.vindex === 0)
            ?.dataset.lock === want;
        },
        newest.name,
        { timeout: 10_000 },
      )
      .catch(() => {}); // the assertion below reports what is on top instead
    const top = await page.$eval('#locks-scroll', topRow);
    assert.equal(top, newest.name, 'the largest token is not on top');
    await page.click('[data-sort="name"]');
    // How smooth: frame intervals while the countdowns run and the table scrolls (printed only).
    const frames = await page.evaluate(async () => {
      const scroller = document.getElementById('locks-scroll');
      const gaps = [];
      let last = performance.now();
      const end = last + 3000;
      await new Promise((resolve) => {
        const step = (t) => {
          gaps.push(t - last);
          last = t;
          scroller.scrollTop += 37;
          if (t < end) requestAnimationFrame(step);
          else resolve();
        };
        requestAnimationFrame(step);
      });
      gaps.sort((a, b) => a - b);
      const at = (q) => gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))].toFixed(1);
      return { frames: gaps.length, p50: at(0.5), p95: at(0.95), max: gaps[gaps.length - 1].toFixed(1) };
    });
    console.log(
      `    # 10,000 locks acquired in ${acquiredIn} ms; ${rows} row elements; frames over 3 s of ` +
        `scrolling: ${frames.frames}, interval p50 ${frames.p50} ms, p95 ${frames.p95} ms, max ${frames.max} ms`,
    );
  });

  await check('7. the console has no errors', async () => {
    // While the server is down on purpose (check 6) Chromium itself reports each refused
    // reconnection attempt; the page cannot silence that, and it is the point of the check.
    const refused = /ERR_CONNECTION_REFUSED|WebSocket connection to .* failed|Failed to load resource/;
    const unexpected = problems.filter((p) => !(p.restarting && refused.test(p.text)));
    assert.deepEqual(unexpected, []);
  });

  await context.close();

  await check("9. with an auth file the page asks for a token and works with a read-only principal's", async () => {
    const sha256 = (x) => createHash('sha256').update(x).digest('hex');
    const authDir = tempDir('fencelock-dashboard-auth-');
    const authFile = path.join(authDir, 'tokens');
    writeFileSync(authFile, `viewer ${sha256('viewer-token')} read:*\nwriter ${sha256('writer-token')} lock:jobs:\n`);
    const guarded = await Server.start(opts.binary, { dataDir: path.join(authDir, 'data'), extra: ['--auth-file', authFile] });
    const viewerContext = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    try {
      guarded.bearer = 'writer-token';
      const lease = await guarded.acquire('jobs:guarded', 'worker-9', 600_000);
      const viewer = await viewerContext.newPage();
      const prompts = [];
      viewer.on('dialog', (dialog) => {
        prompts.push(dialog.message());
        dialog.accept(prompts.length === 1 ? 'wrong-token' : 'viewer-token');
      });
      await viewer.goto(`${guarded.url}/`);
      await viewer.waitForSelector('#conn[data-state="live"]', wait);
      assert.equal(prompts.length, 2, `prompts: ${JSON.stringify(prompts)}`);
      assert.match(prompts[0], /needs a token/);
      assert.match(prompts[1], /refused this token/);
      const guardedRow = viewer.locator('#locks-scroll .vrow[data-lock="jobs:guarded"]:visible');
      await guardedRow.waitFor(wait);
      assert.equal((await guardedRow.locator('.c-token').textContent()).trim(), String(lease.token));
      assert.equal((await guardedRow.locator('.c-owner').textContent()).trim(), 'worker-9');
      // A link with the token in its fragment needs no prompt, and the token leaves the address.
      const linked = await viewerContext.newPage();
      linked.on('dialog', (dialog) => assert.fail(`unexpected prompt: ${dialog.message()}`));
      await linked.goto(`${guarded.url}/#token=viewer-token`);
      await linked.waitForSelector('#conn[data-state="live"]', wait);
      assert.ok(!linked.url().includes('viewer-token'), `the token stayed in ${linked.url()}`);
      await linked.locator('#locks-scroll .vrow[data-lock="jobs:guarded"]:visible').waitFor(wait);
    } finally {
      await viewerContext.close().catch(() => {});
      await guarded.stop().catch(() => {});
    }
  });

  exitCode = results.every((r) => r.ok) ? 0 : 1;
} finally {
  await browser.close().catch(() => {});
  await server.stop().catch(() => {});
}
const failed = results.filter((r) => !r.ok).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(exitCode);
