// Takes the dashboard screenshot of the README (docs/dashboard.png): a server holding a handful
// of realistic locks, with renewals, waiters, a hand-off and an expiry in flight, and a minute
// or so of traffic in the chart. Not a test; run it by hand after changing the page:
//
//   node tests/browser/screenshot.mjs --binary build/fencelock --out docs/dashboard.png
//        [--deps build/tests/browser] [--seconds 75] [--dark]

import path from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

import { Server, launchChromium, loadPlaywright, missingPrerequisite, skip, tempDir } from './harness.mjs';

const { values: opts } = parseArgs({
  options: {
    binary: { type: 'string' },
    out: { type: 'string' },
    deps: { type: 'string', default: path.resolve('build/tests/browser') },
    seconds: { type: 'string', default: '75' },
    dark: { type: 'boolean', default: false },
  },
});
if (!opts.binary || !opts.out) {
  console.error('usage: node screenshot.mjs --binary <fencelock> --out <file.png> [--deps <dir>] [--seconds N] [--dark]');
  process.exit(2);
}
const why = missingPrerequisite();
if (why) skip(why);

const playwright = loadPlaywright(opts.deps);
const server = await Server.start(opts.binary, { dataDir: tempDir('fencelock-shot-') });
const browser = await launchChromium(playwright);
const timers = [];
const every = (ms, fn) => timers.push(setInterval(() => fn().catch(() => {}), ms));

try {
  // Long-lived holders, renewing as real clients do (at a third of the TTL).
  const holders = [
    ['leader:scheduler', 'scheduler-7c9f4d-xk2lp', 15_000],
    ['orders:shard-03', 'orders-svc@ip-10-0-1-44:9310', 20_000],
    ['orders:shard-07', 'orders-svc@ip-10-0-2-81:9310', 20_000],
    ['search:reindex', 'indexer-2:5521', 60_000],
    ['jobs:nightly-report', 'cron@batch-02:18233', 300_000],
    ['migrations:schema', 'deploy@ci-runner-12', 600_000],
    ['billing:invoice-run', 'billing-worker@ip-10-0-3-17:4412', 30_000],
  ];
  const leases = new Map();
  for (const [lock, owner, ttl] of holders) {
    leases.set(lock, await server.acquire(lock, owner, ttl));
    if (ttl <= 60_000)
      every(ttl / 3, async () => {
        const l = leases.get(lock);
        leases.set(lock, await server.renew(lock, l.owner, l.token, ttl));
      });
  }

  const context = await browser.newContext({
    viewport: { width: 1440, height: 860 },
    colorScheme: opts.dark ? 'dark' : 'light',
  });
  const page = await context.newPage();
  await page.goto(`${server.url}/`);
  await page.waitForSelector('#conn[data-state="live"]');

  // Short jobs come and go, so that the chart has something to show.
  let n = 0;
  every(700, async () => {
    const lock = `jobs:thumbnail-${(n++ % 40).toString().padStart(3, '0')}`;
    const lease = await server.acquire(lock, `thumbnailer-${n % 3}`, 5_000);
    await sleep(300 + Math.random() * 1500);
    await server.release(lock, lease.owner, lease.token);
  });
  every(4_000, async () => {
    await server.acquire(`cache:warmup-${n % 5}`, 'warmer@edge-eu-1', 1_200);
  });

  await sleep(Number(opts.seconds) * 1000);

  // Two services queue for the invoice run, and one is handed the lock as the holder lets go.
  const run = leases.get('billing:invoice-run');
  for (const owner of ['billing-worker@ip-10-0-3-22:4412', 'billing-worker@ip-10-0-3-40:4412']) {
    // Answered when granted, or 503 when the server stops below.
    server.post('/v1/locks/billing:invoice-run/acquire', { owner, ttlMs: 30_000, waitMs: 60_000 }).catch(() => {});
    await sleep(100);
  }
  await sleep(5_500); // one status poll: the waiters column fills in
  await server.acquire('cache:warmup-eu-west-1', 'warmer@edge-eu-1', 1_000);
  await sleep(600);
  await server.release('billing:invoice-run', run.owner, run.token);
  await sleep(700);
  await page.mouse.move(0, 0);
  await page.screenshot({ path: opts.out });
  console.log(`wrote ${opts.out}`);
} finally {
  for (const t of timers) clearInterval(t);
  await browser.close().catch(() => {});
  await server.stop().catch(() => {});
}
process.exit(0);
