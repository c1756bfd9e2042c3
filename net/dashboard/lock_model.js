// The held locks as the page knows them: the snapshot of a subscription, then its lock events
// applied in order (docs/websocket-api.md, "Subscriptions: snapshot, then events"). Plain data,
// no DOM: the table renders a sorted, filtered view of it.

/** How long an ended lease stays on screen, marked, before its row leaves (ms). */
export const endHold = { expired: 1800, released: 700 };

/** How long a row stays highlighted after it was granted, handed off or renewed (ms). */
export const flashTime = 1500;

/**
 * The longest time (ms, server clock) from the end of a lease to the next grant of its lock for
 * the grant to count as a hand-off: the server hands a lock to its first waiter in the same step
 * as the release or expiry, so both events carry the same moment, give or take a store write.
 */
const handoffWindow = 100;

/*
 * A lock (one row):
 *   name, owner, token, revision, expiresAt   as the server sent them
 *   span       ms from the lease's last grant or renewal to expiresAt, for the countdown bar
 *              (after a snapshot: from when it was first seen, the only start the page knows)
 *   waiters    queued acquires, or null while unknown (events do not carry it: a status
 *              request fills it in, docs/dashboard.md)
 *   ended      null while held; 'expired' or 'released' once the lease ended
 *   endedAt    local time the end arrived; the row leaves endHold[ended] ms later
 *   endAt      the server's time of the end (its event's `at`)
 *   cause      why it ended (the event's cause)
 *   flash      'new', 'handoff' or 'renewed', shown until flashAt + flashTime
 *   search     lower-case "name\nowner", for the filter
 */

function searchKey(name, owner) {
  return `${name}\n${owner}`.toLowerCase();
}

/** What each sort key sorts by; ties go by name. `left` sorts by deadline: the same order. */
const sortValue = {
  name: (l) => l.name,
  owner: (l) => l.owner,
  token: (l) => l.token,
  left: (l) => l.expiresAt,
  waiters: (l) => (l.waiters === null ? -1 : l.waiters),
  revision: (l) => l.revision,
};

/** The fields (sort keys, and `owner` for the filter) that each kind of change can move. */
const moves = {
  grant: ['owner', 'token', 'left', 'waiters', 'revision'],
  renewal: ['left', 'revision'],
  end: ['revision'],
  status: ['waiters', 'revision', 'left'],
};

export class LockModel {
  constructor() {
    /** name -> lock */
    this.locks = new Map();
    /** Leases held (locks not ended). */
    this.held = 0;
    /** Set when rows came or went since the last view(). */
    this.rowsChanged = true;
    /** The fields of rows that changed since the last view(): the order may have changed. */
    this.fieldsChanged = new Set();
    /** Locks that ended, waiting to leave: {lock, token}. */
    this.leaving = [];
  }

  /**
   * Returns whether a view sorted by `key` (and filtered, when `filtered`) may have changed
   * since the last view(): renewals alone never reorder a table sorted by name.
   */
  viewChanged(key, filtered) {
    return this.rowsChanged || this.fieldsChanged.has(key) || (filtered && this.fieldsChanged.has('owner'));
  }

  touched(kind) {
    for (const field of moves[kind]) this.fieldsChanged.add(field);
  }

  /**
   * Replaces every lock with the `statuses` of a subscribe reply (held ones only).
   * serverNow: the page's estimate of the server's clock, for the countdown bars.
   */
  reset(statuses, serverNow) {
    this.locks.clear();
    this.leaving = [];
    for (const s of statuses) {
      if (!s.held) continue;
      this.locks.set(s.name, {
        name: s.name,
        owner: s.owner,
        token: s.token,
        revision: s.revision ?? 0,
        expiresAt: s.expiresAt,
        span: Math.max(1, s.expiresAt - serverNow),
        // A prefix snapshot comes from the store, which does not count waiters.
        waiters: null,
        ended: null,
        endedAt: 0,
        endAt: 0,
        cause: '',
        flash: null,
        flashAt: 0,
        search: searchKey(s.name, s.owner),
      });
    }
    this.held = this.locks.size;
    this.rowsChanged = true;
  }

  /**
   * Applies one lock_event frame `ev` that arrived at local time `now`. Returns 'handoff' when
   * it granted a lock whose previous lease the page still showed, 'applied' when it changed a
   * lock, and '' when it was stale (not after what the page shows; it may repeat the snapshot).
   */
  apply(ev, now) {
    const lock = this.locks.get(ev.lock);
    if (ev.event === 'acquired' || ev.event === 'renewed') {
      if (
        lock &&
        (ev.token < lock.token ||
          (ev.token === lock.token && (lock.ended !== null || ev.revision <= lock.revision)))
      )
        return '';
      // A new lease right after the one shown ended, or replacing one whose end never came.
      const handoff =
        lock !== undefined &&
        ev.token > lock.token &&
        (lock.ended === null || ev.at - lock.endAt <= handoffWindow);
      const replaced = lock !== undefined && ev.token > lock.token;
      const grant = replaced || ev.event === 'acquired';
      let waiters = null;
      if (!lock) waiters = ev.event === 'acquired' ? 0 : null; // acquired: it was free
      else if (!replaced) waiters = lock.waiters;
      else if (handoff && lock.waiters !== null) waiters = Math.max(0, lock.waiters - 1); // one served
      else if (lock.waiters === 0) waiters = 0; // nobody waited, so nobody waits now
      if (!lock || lock.ended !== null) ++this.held;
      const next = lock ?? { name: ev.lock };
      next.owner = ev.owner;
      next.token = ev.token;
      next.revision = ev.revision;
      next.expiresAt = ev.expiresAt;
      next.span = Math.max(1, ev.expiresAt - ev.at);
      next.waiters = waiters;
      next.ended = null;
      next.endedAt = 0;
      next.endAt = 0;
      next.cause = '';
      next.flash = handoff ? 'handoff' : ev.event === 'acquired' ? 'new' : 'renewed';
      next.flashAt = now;
      next.search = searchKey(ev.lock, ev.owner);
      if (lock) this.touched(grant ? 'grant' : 'renewal');
      else {
        this.locks.set(ev.lock, next);
        this.rowsChanged = true;
      }
      return handoff ? 'handoff' : 'applied';
    }
    if (ev.event === 'released' || ev.event === 'expired') {
      if (!lock || ev.token < lock.token || (ev.token === lock.token && lock.ended !== null))
        return '';
      // A newer token than shown: a lease the page never saw begin ended; so did the older one.
      if (ev.token !== lock.token) this.touched('grant');
      if (lock.ended === null) --this.held;
      lock.token = ev.token;
      lock.owner = ev.owner;
      lock.search = searchKey(lock.name, ev.owner);
      lock.revision = Math.max(lock.revision, ev.revision ?? 0);
      lock.ended = ev.event;
      lock.endedAt = now;
      lock.endAt = ev.at;
      lock.cause = ev.cause ?? ev.event;
      lock.flash = null;
      this.leaving.push({ lock, token: ev.token });
      this.touched('end');
      return 'applied';
    }
    return '';
  }

  /** Removes the locks whose end was shown long enough by local time `now`. */
  sweep(now) {
    if (this.leaving.length === 0) return;
    const stay = [];
    for (const item of this.leaving) {
      const { lock, token } = item;
      const current = this.locks.get(lock.name);
      if (current !== lock || lock.ended === null || lock.token !== token) continue; // granted again
      if (now - lock.endedAt < endHold[lock.ended]) {
        stay.push(item);
        continue;
      }
      this.locks.delete(lock.name);
      this.rowsChanged = true;
    }
    this.leaving = stay;
  }

  /**
   * Merges the answer of a status request: the waiters of the lease the page shows, and its
   * exact revision (a prefix snapshot has none). Existence stays the events' business: a status
   * about another lease, or a free lock, changes nothing (its events are on their way).
   */
  mergeStatus(st) {
    const lock = this.locks.get(st.name);
    if (!lock || lock.ended !== null || !st.held || st.token !== lock.token) return;
    lock.waiters = st.waiters;
    if (st.revision > lock.revision) {
      lock.revision = st.revision;
      lock.expiresAt = st.expiresAt;
    }
    this.touched('status');
  }

  /**
   * Returns the locks matching `filter` (a case-insensitive substring of the name or owner),
   * sorted by `key` and `dir` (1 ascending, -1 descending; ties by name, ascending).
   */
  view(filter, key, dir) {
    const needle = filter.trim().toLowerCase();
    const value = sortValue[key] ?? sortValue.name;
    // Decorated: each key is read once, not twice per comparison (10,000 rows, ~140,000 of them).
    const keyed = [];
    for (const lock of this.locks.values())
      if (!needle || lock.search.includes(needle)) keyed.push({ k: value(lock), n: lock.name, lock });
    keyed.sort((a, b) => {
      if (a.k < b.k) return -dir;
      if (a.k > b.k) return dir;
      return a.n < b.n ? -1 : a.n > b.n ? 1 : 0;
    });
    this.rowsChanged = false;
    this.fieldsChanged.clear();
    return keyed.map((x) => x.lock);
  }
}
