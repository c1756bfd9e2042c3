// The dashboard's lock model (net/dashboard/lock_model.js) without a browser: a snapshot, then
// lock events in order, repeats dropped, ends marked then swept, hand-offs, status answers, and
// the sorted, filtered view. CTest: unit.dashboard_lock_model (node --test).

import assert from 'node:assert/strict';
import { test } from 'node:test';

// The page's modules are plain .js files beside no package.json: Node.js reads them as ES
// modules by their syntax from 20.19 on.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.log(`SKIPPED: Node.js ${process.versions.node} is older than 20.19`);
  process.exit(0);
}
const { LockModel, endHold } = await import('../../net/dashboard/lock_model.js');

const held = (name, owner, token, expiresAt, revision = 0) => ({
  name,
  held: true,
  owner,
  token,
  expiresAt,
  revision,
  waiters: 0,
  lastToken: token,
});

const event = (kind, lock, owner, token, revision, at, extra = {}) => ({
  type: 'lock_event',
  subscription: 1,
  event: kind,
  lock,
  owner,
  token,
  revision,
  at,
  ...(kind === 'acquired' || kind === 'renewed' ? { expiresAt: at + 30_000 } : { cause: kind }),
  ...extra,
});

test('a snapshot replaces everything; free locks are not shown', () => {
  const m = new LockModel();
  m.reset([held('a', 'w1', 3, 40_000), { name: 'b', held: false, waiters: 0, lastToken: 9 }], 10_000);
  assert.equal(m.held, 1);
  assert.deepEqual([...m.locks.keys()], ['a']);
  const a = m.locks.get('a');
  assert.equal(a.span, 30_000); // the time left when first seen
  assert.equal(a.waiters, null); // a prefix snapshot does not count waiters
  m.reset([], 0);
  assert.equal(m.held, 0);
  assert.equal(m.locks.size, 0);
});

test('events after the snapshot apply; repeats of it do not', () => {
  const m = new LockModel();
  m.reset([held('a', 'w1', 3, 40_000)], 10_000);
  // The grant the snapshot already shows, repeated.
  assert.equal(m.apply(event('acquired', 'a', 'w1', 3, 0, 9_000), 1), '');
  // A renewal after it.
  assert.equal(m.apply(event('renewed', 'a', 'w1', 3, 1, 11_000), 2), 'applied');
  assert.equal(m.locks.get('a').expiresAt, 41_000);
  assert.equal(m.locks.get('a').span, 30_000);
  assert.equal(m.apply(event('renewed', 'a', 'w1', 3, 1, 11_000), 3), '');
  // An older token changes nothing.
  assert.equal(m.apply(event('renewed', 'a', 'w0', 2, 7, 11_500), 4), '');
  assert.equal(m.locks.get('a').revision, 1);
});

test('an expiry is marked, then swept after its hold', () => {
  const m = new LockModel();
  m.apply(event('acquired', 'a', 'w1', 1, 0, 1_000), 100);
  assert.equal(m.held, 1);
  assert.equal(m.apply(event('expired', 'a', 'w1', 1, 1, 31_000), 200), 'applied');
  const a = m.locks.get('a');
  assert.equal(a.ended, 'expired');
  assert.equal(a.cause, 'expired');
  assert.equal(m.held, 0);
  // The same end again is a repeat.
  assert.equal(m.apply(event('expired', 'a', 'w1', 1, 1, 31_000), 250), '');
  m.sweep(200 + endHold.expired - 1);
  assert.ok(m.locks.has('a'), 'left before its hold');
  m.sweep(200 + endHold.expired);
  assert.ok(!m.locks.has('a'));
  assert.equal(m.held, 0);
});

test('a grant right after a release is a hand-off and serves a waiter', () => {
  const m = new LockModel();
  m.apply(event('acquired', 'a', 'w1', 1, 0, 1_000), 0);
  m.mergeStatus({ name: 'a', held: true, owner: 'w1', token: 1, expiresAt: 31_000, revision: 0, waiters: 2 });
  assert.equal(m.locks.get('a').waiters, 2);
  m.apply(event('released', 'a', 'w1', 1, 1, 5_000), 10);
  assert.equal(m.held, 0);
  assert.equal(m.apply(event('acquired', 'a', 'w2', 2, 0, 5_001), 11), 'handoff');
  const a = m.locks.get('a');
  assert.equal(a.owner, 'w2');
  assert.equal(a.ended, null);
  assert.equal(a.flash, 'handoff');
  assert.equal(a.waiters, 1);
  assert.equal(m.held, 1);
  // The sweep does not remove the lock granted again.
  m.sweep(10_000);
  assert.ok(m.locks.has('a'));
});

test('a grant long after the release is a new grant, not a hand-off', () => {
  const m = new LockModel();
  m.apply(event('acquired', 'a', 'w1', 1, 0, 1_000), 0);
  m.apply(event('released', 'a', 'w1', 1, 1, 5_000), 10);
  assert.equal(m.apply(event('acquired', 'a', 'w3', 2, 0, 5_400), 20), 'applied');
  assert.equal(m.locks.get('a').flash, 'new');
});

test('a status fills in waiters and the exact revision of the lease shown only', () => {
  const m = new LockModel();
  m.reset([held('a', 'w1', 3, 40_000)], 10_000);
  m.mergeStatus({ name: 'a', held: true, owner: 'w1', token: 3, expiresAt: 45_000, revision: 4, waiters: 1 });
  assert.equal(m.locks.get('a').waiters, 1);
  assert.equal(m.locks.get('a').revision, 4);
  assert.equal(m.locks.get('a').expiresAt, 45_000);
  // About another lease, or a free lock: the events decide.
  m.mergeStatus({ name: 'a', held: true, owner: 'w9', token: 4, expiresAt: 50_000, revision: 0, waiters: 7 });
  m.mergeStatus({ name: 'a', held: false, waiters: 0, lastToken: 4 });
  assert.equal(m.locks.get('a').owner, 'w1');
  assert.equal(m.locks.get('a').waiters, 1);
});

test('the view filters by name or owner and sorts by any column', () => {
  const m = new LockModel();
  m.reset(
    [
      held('jobs:b', 'Alice', 5, 50_000),
      held('jobs:a', 'bob', 9, 20_000),
      held('billing:x', 'carol', 1, 90_000),
    ],
    0,
  );
  const names = (rows) => rows.map((l) => l.name);
  assert.deepEqual(names(m.view('', 'name', 1)), ['billing:x', 'jobs:a', 'jobs:b']);
  assert.deepEqual(names(m.view('', 'name', -1)), ['jobs:b', 'jobs:a', 'billing:x']);
  assert.deepEqual(names(m.view('', 'token', -1)), ['jobs:a', 'jobs:b', 'billing:x']);
  assert.deepEqual(names(m.view('', 'left', 1)), ['jobs:a', 'jobs:b', 'billing:x']);
  assert.deepEqual(names(m.view('JOBS', 'name', 1)), ['jobs:a', 'jobs:b']);
  assert.deepEqual(names(m.view('alice', 'name', 1)), ['jobs:b']);
  assert.deepEqual(names(m.view('nobody', 'name', 1)), []);
});

test('renewals reorder a view by time left, not a view by name', () => {
  const m = new LockModel();
  m.reset([held('a', 'w', 1, 10_000), held('b', 'w', 2, 20_000)], 0);
  m.view('', 'name', 1);
  m.apply(event('renewed', 'a', 'w', 1, 1, 5_000), 1);
  assert.equal(m.viewChanged('name', false), false);
  assert.equal(m.viewChanged('left', false), true);
  m.view('', 'left', 1);
  m.apply(event('acquired', 'c', 'w', 3, 0, 5_000), 2);
  assert.equal(m.viewChanged('name', false), true); // a new row
});
