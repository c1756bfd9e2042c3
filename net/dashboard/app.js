// The fencelock dashboard (docs/dashboard.md): held locks, lock events and rates, live, from the
// public WebSocket API. Read-only: nothing here acquires, renews or releases.
//
//   Connection ──snapshot, lock_event──► LockModel ──view()──► LockTable (virtual rows)
//        │                                   │
//        └──status (rows in view)────────────┘  events ──► EventLog, RateChart (grants, expiries)
//   GET /metrics every 5 s ──► RateChart (shed)
//
// Frames are queued as they arrive and applied once per animation frame, so a burst of events
// costs one sort and one render, not one per event.

import { Connection } from './connection.js';
import { EventLog } from './event_log.js';
import { formatInteger, formatRate, setText } from './format.js';
import { LockModel } from './lock_model.js';
import { LockTable } from './lock_table.js';
import { RateChart } from './rate_chart.js';

const prefixPattern = /^[A-Za-z0-9._:-]{0,200}$/;
const sortKeys = ['name', 'owner', 'token', 'left', 'waiters', 'revision'];
/** Keys whose first click sorts largest first. */
const descendingFirst = new Set(['token', 'waiters', 'revision']);
const statusEvery = 5000;
const metricsEvery = 5000;

const $ = (id) => document.getElementById(id);

// --- the server's clock ---------------------------------------------------------------------

/**
 * Estimates the server's wall clock from the `at` of lock events: each event left the server
 * after its `at`, so `at - arrival` is at most the offset between the clocks; the largest of
 * the recent ones is the closest. Until an event arrives the page trusts its own clock.
 */
class ServerClock {
  constructor() {
    this.samples = [];
    this.offset = 0;
  }
  sample(at, local) {
    if (!Number.isFinite(at)) return;
    this.samples.push(at - local);
    if (this.samples.length > 64) this.samples.shift();
    this.offset = Math.max(...this.samples);
  }
  now(local) {
    return local + this.offset;
  }
}

// --- the bearer token (docs/security.md) ----------------------------------------------------

const tokenKey = 'fencelock.token';

/**
 * Returns the token of a link such as /#token=... (then kept for this tab only and removed from
 * the address, so that it is neither shared nor bookmarked) or the one this tab kept.
 */
function takeToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get('token');
  if (given) {
    sessionStorage.setItem(tokenKey, given);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem(tokenKey) ?? '';
}

function onAuthNeeded(message) {
  const token = window.prompt(`${message} Enter the bearer token of a principal that may read the locks:`);
  if (!token) {
    setProblem(`${message} Reload the page to enter a token.`);
    return;
  }
  sessionStorage.setItem(tokenKey, token);
  conn.authenticate(token);
}

// --- state in the URL -----------------------------------------------------------------------

function readUrl() {
  const q = new URLSearchParams(location.search);
  let prefix = q.get('prefix') ?? '';
  let problem = '';
  if (!prefixPattern.test(prefix)) {
    problem = 'The prefix in the address is not a lock name prefix; showing every lock.';
    prefix = '';
  }
  const sort = sortKeys.includes(q.get('sort')) ? q.get('sort') : 'name';
  const dir = q.get('dir') === 'desc' ? -1 : 1;
  return { prefix, filter: q.get('q') ?? '', sort, dir, problem };
}

function writeUrl(s) {
  const q = new URLSearchParams();
  if (s.prefix) q.set('prefix', s.prefix);
  if (s.filter) q.set('q', s.filter);
  if (s.sort !== 'name') q.set('sort', s.sort);
  if (s.dir === -1) q.set('dir', 'desc');
  const search = q.toString();
  history.replaceState(null, '', search ? `?${search}` : location.pathname);
}

// --- the page -------------------------------------------------------------------------------

const state = readUrl();
const clock = new ServerClock();
const model = new LockModel();
const table = new LockTable($('locks-scroll'));
const log = new EventLog($('events-scroll'));
const chart = new RateChart($('chart'), ['grants', 'expiries', 'shed']);
let frames = []; // lock_event frames not applied yet: [frame, local arrival time]
let viewDirty = true;
let lastBuild = 0;
let buildCost = 0;
let conn = null;
let connState = { state: 'connecting', detail: {} };
/** The detail of the last disconnect, until the page is live again (null: connected). */
let lastDown = null;
let shown = { held: -1, total: 0 };

function note(text) {
  log.add({ at: clock.now(Date.now()), note: text });
}

function watching(prefix) {
  return prefix ? `locks under “${prefix}”` : 'every lock';
}

// --- connection -----------------------------------------------------------------------------

function onState(s, detail) {
  connState = { state: s, detail };
  const pill = $('conn');
  pill.dataset.state = s;
  setText($('conn-text'), s === 'live' ? 'Live' : s === 'down' ? 'Disconnected' : 'Connecting…');
  document.body.classList.toggle('stale', s === 'down');
  updateBanner();
}

// The banner stays from a disconnect until the page is live again, through each reconnect
// attempt ('connecting'), so that it does not flicker away while the server is still gone.
function updateBanner() {
  const banner = $('banner');
  const { state: s, detail } = connState;
  if (s === 'down') lastDown = detail;
  if (s === 'live') lastDown = null;
  if (lastDown === null) {
    banner.hidden = true;
    return;
  }
  banner.hidden = false;
  const reason = lastDown.reason ?? 'the connection closed';
  const wait = Math.max(0, (lastDown.retryAt ?? 0) - Date.now());
  const when = s === 'down' ? `in ${(wait / 1000).toFixed(1)} s` : 'now';
  setText(
    $('banner-text'),
    `Disconnected: ${reason}. Reconnecting ${when} (attempt ${lastDown.attempt}). ` +
      'The table shows the last state seen.',
  );
}

function onSnapshot(locks, prefix) {
  // Events that came before the socket closed still go to the log; the snapshot replaces them.
  applyEvents(Date.now());
  model.reset(locks, clock.now(Date.now()));
  viewDirty = true;
  pollUnknownSoon();
  note(`Subscribed to ${watching(prefix)}: ${formatInteger(model.locks.size)} held`);
  setProblem('');
}

function onEvent(frame) {
  const now = Date.now();
  clock.sample(frame.at, now);
  frames.push(frame);
}

function setProblem(text) {
  const p = $('problem');
  setText(p, text);
  p.hidden = text === '';
}

// --- one frame ------------------------------------------------------------------------------

/** Applies the queued events at local time `now`. */
function applyEvents(now) {
  if (frames.length === 0) return;
  const batch = frames;
  frames = [];
  let grants = 0;
  let expiries = 0;
  for (const ev of batch) {
    const how = model.apply(ev, now);
    if (ev.event === 'acquired') ++grants;
    if (ev.event === 'expired') ++expiries;
    log.add({
      at: ev.at,
      lock: ev.lock,
      event: ev.event,
      owner: ev.owner,
      token: ev.token,
      cause: how === 'handoff' ? 'hand-off' : ev.cause,
    });
  }
  if (grants) chart.count('grants', grants, now);
  if (expiries) chart.count('expiries', expiries, now);
}

function rebuildView(now) {
  const held = model.held;
  if (held !== shown.held) {
    shown.held = held;
    setText($('stat-held'), formatInteger(held));
    if (!state.filter) setText($('locks-count'), formatInteger(held));
  }
  // A rebuild (filter and sort) of many rows costs milliseconds: space them out so that they
  // take at most about a tenth of the time, and reorder for changed values (renewals under a
  // sort by time left) at most four times a second. The rows in view show new values every
  // frame anyway; only their order waits.
  const rowsMoved = viewDirty || model.rowsChanged;
  if (!rowsMoved && !model.viewChanged(state.sort, state.filter !== '')) return;
  if (now - lastBuild < Math.max(buildCost * 10, rowsMoved ? 0 : 250)) return;
  const started = performance.now();
  const rows = model.view(state.filter, state.sort, state.dir);
  table.setRows(rows);
  buildCost = performance.now() - started;
  lastBuild = now;
  viewDirty = false;
  shown.total = rows.length;
  setText(
    $('locks-count'),
    state.filter ? `${formatInteger(rows.length)} of ${formatInteger(model.locks.size)}` : formatInteger(held),
  );
  updateEmpty();
}

function updateEmpty() {
  let text = '';
  if (shown.total === 0) {
    if (connState.state !== 'live' && model.locks.size === 0) text = 'Waiting for the server…';
    else if (state.filter && model.locks.size > 0) text = `No lock or owner matches “${state.filter}”.`;
    else text = state.prefix ? `No lock under “${state.prefix}” is held.` : 'No lock is held.';
  }
  const empty = $('locks-empty');
  setText(empty, text);
  empty.hidden = text === '';
}

let lastSecond = 0;
function frame() {
  const now = Date.now();
  tick(now);
  table.render(now, clock.now(now));
  log.render(now);
  if (lastDown !== null) updateBanner();
  const second = Math.floor(now / 1000);
  if (second !== lastSecond) {
    lastSecond = second;
    chart.draw();
    setText($('stat-grants'), formatRate(chart.rate('grants')));
    setText($('stat-expiries'), formatRate(chart.rate('expiries')));
    setText($('stat-shed'), formatRate(chart.rate('shed')));
    updateEmpty();
  }
  requestAnimationFrame(frame);
}

let lastTick = 0;
function tick(now) {
  lastTick = now;
  applyEvents(now);
  model.sweep(now);
  rebuildView(now);
}

// A hidden tab gets no animation frames: keep applying events so the queue stays short.
setInterval(() => {
  const now = Date.now();
  if (now - lastTick > 1000) tick(now);
}, 1000);

// --- polling --------------------------------------------------------------------------------

// Lock events do not carry the waiters, and a prefix snapshot has no revisions: ask for the
// status of the rows in view, now and then, while someone looks; and soon after rows come into
// view with their waiters unknown (a snapshot, a scroll, another sort or filter).
function pollStatus(unknownOnly) {
  if (document.hidden || !conn) return;
  const rows = table.visible().filter((l) => l.ended === null && (!unknownOnly || l.waiters === null));
  conn.requestStatus(rows.map((l) => l.name));
}
setInterval(() => pollStatus(false), statusEvery);
let pollSoon = 0;
function pollUnknownSoon() {
  clearTimeout(pollSoon);
  pollSoon = setTimeout(() => pollStatus(true), 400);
}
$('locks-scroll').addEventListener('scroll', pollUnknownSoon, { passive: true });

function onStatus(st) {
  if (st && typeof st.name === 'string') model.mergeStatus(st);
}

/** Sums every series of `name` in a Prometheus text exposition. */
function sumMetric(text, name) {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) {
      sum += value;
      found = true;
    }
  }
  return found ? sum : null;
}

let shedBase = null; // {total, at}
async function pollMetrics() {
  if (connState.state !== 'live' || document.hidden) return;
  try {
    const res = await fetch('/metrics', { cache: 'no-store' });
    if (!res.ok) return;
    const total = sumMetric(await res.text(), 'fencelock_shed_total');
    const now = Date.now();
    if (total === null) return;
    // A counter that went down belongs to a restarted server: start over from it.
    if (shedBase !== null && total > shedBase.total)
      chart.spread('shed', total - shedBase.total, shedBase.at + 1000, now);
    shedBase = { total, at: now };
  } catch {
    // The server went away between two polls; the connection banner says so.
  }
}
setInterval(pollMetrics, metricsEvery);

// --- controls -------------------------------------------------------------------------------

function initControls() {
  const prefix = $('prefix');
  prefix.value = state.prefix;
  $('prefix-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const value = prefix.value.trim();
    if (!prefixPattern.test(value)) {
      setProblem('A prefix is at most 200 characters of A–Z a–z 0–9 . _ : -');
      return;
    }
    setProblem('');
    if (value === state.prefix) return;
    state.prefix = value;
    writeUrl(state);
    model.reset([], 0);
    viewDirty = true;
    note(`Watching ${watching(value)}`);
    conn.setPrefix(value);
  });

  const filter = $('filter');
  filter.value = state.filter;
  filter.addEventListener('input', () => {
    state.filter = filter.value;
    viewDirty = true;
    lastBuild = 0;
    writeUrl(state);
    pollUnknownSoon();
  });

  for (const button of document.querySelectorAll('[data-sort]')) {
    button.addEventListener('click', () => {
      const key = button.dataset.sort;
      if (state.sort === key) state.dir = -state.dir;
      else {
        state.sort = key;
        state.dir = descendingFirst.has(key) ? -1 : 1;
      }
      viewDirty = true;
      lastBuild = 0;
      writeUrl(state);
      showSort();
      pollUnknownSoon();
    });
  }
  showSort();
}

function showSort() {
  for (const button of document.querySelectorAll('[data-sort]')) {
    const header = button.parentElement;
    const active = button.dataset.sort === state.sort;
    header.setAttribute('aria-sort', active ? (state.dir === 1 ? 'ascending' : 'descending') : 'none');
  }
}

function onHello(hello) {
  if (typeof hello.version === 'string') setText($('version'), `v${hello.version}`);
}

// --- start ----------------------------------------------------------------------------------

initControls();
if (state.problem) setProblem(state.problem);
const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
conn = new Connection(`${scheme}//${location.host}/v1/ws`, {
  onState,
  onSnapshot,
  onEvent,
  onStatus,
  onHello,
  onProblem: setProblem,
  onAuthNeeded,
});
conn.token = takeToken();
conn.start(state.prefix);
note(`Connecting, watching ${watching(state.prefix)}`);
requestAnimationFrame(frame);
