// Shared by the browser test and the screenshot script: the fencelock server as a child process,
// Debian's Chromium driven by playwright-core, and a few HTTP calls. Every process started here
// is killed when this process exits, however it exits.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

export const chromiumPath = '/usr/bin/chromium';

/** Chromium's flags: no sandbox (root in CI), no GPU, and no traffic of its own. */
export const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

const here = path.dirname(fileURLToPath(import.meta.url));
const children = new Set();

function killAll() {
  for (const child of children) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}
process.on('exit', killAll);
for (const [sig, number] of [['SIGINT', 2], ['SIGTERM', 15], ['SIGHUP', 1]]) {
  process.on(sig, () => {
    killAll();
    process.exit(128 + number);
  });
}

/** Prints `SKIPPED: why` (CTest reports a skip) and exits 0. */
export function skip(why) {
  console.log(`SKIPPED: ${why}`);
  process.exit(0);
}

/** Returns the reason the browser tests cannot run here, or ''. */
export function missingPrerequisite() {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 20) return `Node.js ${process.versions.node} is older than 20, which playwright-core needs`;
  if (!existsSync(chromiumPath)) return `no ${chromiumPath} (scripts/install-deps.sh installs Debian's chromium)`;
  return '';
}

/**
 * Loads playwright-core from `depsDir`, installing it there first with `npm ci` from the lock
 * file beside this script when it is missing or stale. Nothing else is downloaded: the browser
 * is Debian's (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD is set all the same).
 */
export function loadPlaywright(deps) {
  const depsDir = path.resolve(deps);
  const lock = readFileSync(path.join(here, 'package-lock.json'), 'utf8');
  const manifest = readFileSync(path.join(here, 'package.json'), 'utf8');
  const installed = path.join(depsDir, 'node_modules', '.fencelock-lock.json');
  const current = existsSync(installed) && readFileSync(installed, 'utf8') === lock;
  if (!current) {
    mkdirSync(depsDir, { recursive: true });
    writeFileSync(path.join(depsDir, 'package.json'), manifest);
    writeFileSync(path.join(depsDir, 'package-lock.json'), lock);
    const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: depsDir,
      stdio: 'inherit',
      env: { ...process.env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' },
    });
    if (npm.error?.code === 'ENOENT') skip('npm is not installed (scripts/install-deps.sh installs it)');
    if (npm.status !== 0) throw new Error(`npm ci in ${depsDir} failed with status ${npm.status}`);
    writeFileSync(installed, lock);
  }
  return createRequire(path.join(depsDir, 'package.json'))('playwright-core');
}

/** Launches Debian's Chromium, headless, with a fresh profile. */
export async function launchChromium(playwright) {
  return playwright.chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
    timeout: 60_000,
  });
}

/** Returns a fresh directory under the temp dir, removed when this process exits. */
export function tempDir(prefix) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `fencelock serve` as a child process. */
export class Server {
  /**
   * Starts `binary serve` on `port` (0 = a free one) with its store in `dataDir` and waits for
   * the "listening" line and /readyz. `extra`: more flags.
   */
  static async start(binary, { dataDir, port = 0, extra = [] }) {
    const server = new Server();
    await server.launch(binary, dataDir, port, extra);
    return server;
  }

  async launch(binary, dataDir, port, extra) {
    this.output = [];
    const child = spawn(binary, ['serve', '--port', String(port), '--data-dir', dataDir, ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    children.add(child);
    this.exited = new Promise((resolve) =>
      child.on('exit', (code, signal) => {
        children.delete(child);
        resolve({ code, signal });
      }),
    );
    const listening = new Promise((resolve, reject) => {
      let buffered = '';
      child.stdout.on('data', (chunk) => {
        buffered += chunk;
        let nl;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          this.remember(line);
          if (line.includes('"listening"')) {
            try {
              resolve(JSON.parse(line.slice(line.indexOf('{'))).port);
            } catch {
              // not the line we look for
            }
          }
        }
      });
      child.stderr.on('data', (chunk) => this.remember(String(chunk)));
      child.on('error', reject);
      child.on('exit', (code, signal) =>
        reject(new Error(`the server exited (${code ?? signal}) before listening:\n${this.tail()}`)),
      );
    });
    this.port = await withTimeout(listening, 30_000, () => `no "listening" line:\n${this.tail()}`);
    await this.waitReady();
  }

  remember(line) {
    this.output.push(line);
    if (this.output.length > 200) this.output.shift();
  }

  /** Returns the server's last lines of output, for failure messages. */
  tail(n = 30) {
    return this.output.slice(-n).join('\n');
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  async waitReady() {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      try {
        const res = await fetch(`${this.url}/readyz`);
        if (res.status === 200) return;
      } catch {
        // not yet
      }
      await sleep(50);
    }
    throw new Error(`the server on port ${this.port} did not get ready:\n${this.tail()}`);
  }

  /** Sends SIGTERM and waits for the exit (SIGKILL after `timeoutMs`). */
  async stop(timeoutMs = 20_000) {
    if (!children.has(this.child)) return this.exited;
    this.child.kill('SIGTERM');
    try {
      return await withTimeout(this.exited, timeoutMs, () => 'the server did not stop on SIGTERM');
    } catch (e) {
      this.child.kill('SIGKILL');
      throw e;
    }
  }

  /** POSTs `body` to `path` and returns {status, json}. */
  async post(pathname, body) {
    const headers = { 'content-type': 'application/json' };
    if (this.bearer) headers.authorization = `Bearer ${this.bearer}`;
    const res = await fetch(`${this.url}${pathname}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  }

  /** Acquires `lock` for `owner`; returns the lease or throws. */
  async acquire(lock, owner, ttlMs, waitMs = 0) {
    const { status, json } = await this.post(`/v1/locks/${encodeURIComponent(lock)}/acquire`, { owner, ttlMs, waitMs });
    if (status !== 200) throw new Error(`acquire ${lock}: ${status} ${JSON.stringify(json)}`);
    return json;
  }

  /** Renews a lease; returns the lease or throws. */
  async renew(lock, owner, token, ttlMs) {
    const { status, json } = await this.post(`/v1/locks/${encodeURIComponent(lock)}/renew`, { owner, token, ttlMs });
    if (status !== 200) throw new Error(`renew ${lock}: ${status} ${JSON.stringify(json)}`);
    return json;
  }

  /** Releases a lease; returns the answer or throws. */
  async release(lock, owner, token) {
    const { status, json } = await this.post(`/v1/locks/${encodeURIComponent(lock)}/release`, { owner, token });
    if (status !== 200) throw new Error(`release ${lock}: ${status} ${JSON.stringify(json)}`);
    return json;
  }
}

/** Resolves as `promise` does, or rejects with `what()` after `ms`. */
export async function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what()}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `fn` over `items` with at most `parallel` calls in flight. */
export async function eachParallel(items, parallel, fn) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}
