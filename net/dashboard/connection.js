// The page's one WebSocket to /v1/ws (docs/websocket-api.md): subscribe to a prefix, hand the
// snapshot and the lock events to the page, ask for the status of the rows in view, and come
// back by itself after the server went away. The page only reads: it never sends acquire,
// renew or release.

/** First and longest wait before reconnecting (ms); the wait doubles in between. */
const backoffFirst = 250;
const backoffMax = 5000;

/** Errors after which a subscribe is worth trying again on the same socket. */
const retryable = new Set(['overloaded', 'unavailable', 'store_unavailable', 'shutting_down']);

/** Returns the wait before attempt `n` (0-based): doubling, capped, with ±25 % jitter. */
export function backoff(n) {
  const base = Math.min(backoffMax, backoffFirst * 2 ** Math.min(n, 16));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}

export class Connection {
  /**
   * url: the WebSocket URL of /v1/ws.
   * handlers (all called on the page's only thread):
   *   onState(state, detail): 'connecting', 'live' (subscribed, snapshot applied) or 'down'
   *     (detail: {retryAt, attempt, reason}).
   *   onSnapshot(locks, prefix): a subscribe reply's held locks; replaces everything.
   *   onEvent(frame): a lock_event of the current subscription.
   *   onStatus(status): the answer to a status request.
   *   onHello(frame): the server's hello (version, limits).
   *   onProblem(message): a subscribe the server refused (shown to the user).
   *   onAuthNeeded(message): the server wants a bearer token (docs/security.md), or refused the
   *     one given; answer with authenticate(token).
   */
  constructor(url, handlers) {
    this.url = url;
    this.h = handlers;
    this.ws = null;
    this.state = 'connecting';
    this.attempt = 0;
    this.timer = 0;
    this.nextId = 1;
    /** request id -> what it asked */
    this.pending = new Map();
    this.prefix = '';
    this.subscribeId = 0;
    this.subscription = 0;
    this.statusInFlight = 0;
    this.maxPending = 256;
    /** The bearer token sent first on every connection ('' = none). */
    this.token = '';
  }

  /** Sets the bearer token (docs/security.md), sends it now and subscribes again. */
  authenticate(token) {
    this.token = token;
    if (!this.isOpen()) return; // the next connection sends it
    this.sendAuth();
    this.setState('connecting');
    this.subscribe();
  }

  /** Connects and subscribes to `prefix` ("" = every lock). */
  start(prefix) {
    this.prefix = prefix;
    this.connect();
  }

  /** Watches `prefix` instead; the next snapshot replaces the page's state. */
  setPrefix(prefix) {
    this.prefix = prefix;
    if (!this.isOpen()) return; // the next connection subscribes to it
    clearTimeout(this.timer);
    if (this.subscription) this.send({ id: this.nextId++, op: 'unsubscribe', subscription: this.subscription });
    this.subscription = 0;
    this.setState('connecting');
    this.subscribe();
  }

  /** Returns whether the socket is open. */
  isOpen() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  /**
   * Asks for the status of each of `names`, keeping well under the server's limit of
   * unanswered requests. Returns how many were sent.
   */
  requestStatus(names) {
    if (this.state !== 'live') return 0;
    const room = Math.max(0, Math.min(64, this.maxPending >> 2) - this.statusInFlight);
    let sent = 0;
    for (const lock of names.slice(0, room)) {
      const id = this.nextId++;
      this.pending.set(id, { op: 'status' });
      this.statusInFlight++;
      this.send({ id, op: 'status', lock });
      sent++;
    }
    return sent;
  }

  // --- the socket -----------------------------------------------------------------------------

  connect() {
    clearTimeout(this.timer);
    this.timer = 0;
    this.setState('connecting');
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (e) {
      this.scheduleReconnect(String(e));
      return;
    }
    this.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      if (this.token) this.sendAuth(); // answered before the subscribe: frames keep their order
      this.subscribe();
    };
    ws.onmessage = (e) => this.onFrame(e.data);
    // An error is always followed by close, which reconnects.
    ws.onerror = () => {};
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.pending.clear();
      this.statusInFlight = 0;
      this.subscription = 0;
      this.scheduleReconnect(
        !opened
          ? 'the server cannot be reached'
          : e.code === 1001
            ? 'the server is going away (a restart or a drain)'
            : 'the connection closed',
      );
    };
  }

  scheduleReconnect(reason) {
    clearTimeout(this.timer); // a subscribe retry belongs to the socket that just closed
    const wait = backoff(this.attempt);
    this.attempt++;
    this.setState('down', { retryAt: Date.now() + wait, attempt: this.attempt, reason });
    this.timer = setTimeout(() => this.connect(), wait);
  }

  subscribe() {
    const id = this.nextId++;
    this.subscribeId = id;
    this.pending.set(id, { op: 'subscribe', prefix: this.prefix });
    this.send({ id, op: 'subscribe', prefix: this.prefix });
  }

  sendAuth() {
    const id = this.nextId++;
    this.pending.set(id, { op: 'auth' });
    this.send({ id, op: 'auth', token: this.token });
  }

  send(frame) {
    if (this.isOpen()) this.ws.send(JSON.stringify(frame));
  }

  setState(state, detail = {}) {
    this.state = state;
    this.h.onState(state, detail);
  }

  onFrame(text) {
    let f;
    try {
      f = JSON.parse(text);
    } catch {
      return; // the server sends JSON only; ignore anything else rather than stop
    }
    if (f === null || typeof f !== 'object') return;
    switch (f.type) {
      case 'lock_event':
        if (f.subscription === this.subscription && this.subscription !== 0) this.h.onEvent(f);
        return;
      case 'reply':
        return this.onReply(f);
      case 'error':
        return this.onError(f);
      case 'hello':
        if (f.limits && Number.isInteger(f.limits.maxPending)) this.maxPending = f.limits.maxPending;
        this.h.onHello(f);
        return;
      default:
        return; // granted and lease_lost go to holders; the page holds nothing
    }
  }

  onReply(f) {
    const asked = this.pending.get(f.id);
    if (!asked) return;
    this.pending.delete(f.id);
    if (asked.op === 'status') {
      this.statusInFlight--;
      this.h.onStatus(f.result);
      return;
    }
    if (asked.op !== 'subscribe') return;
    const result = f.result;
    if (f.id !== this.subscribeId || asked.prefix !== this.prefix) {
      // The user moved on to another prefix meanwhile.
      this.send({ id: this.nextId++, op: 'unsubscribe', subscription: result.subscription });
      return;
    }
    this.subscription = result.subscription;
    this.attempt = 0;
    this.h.onSnapshot(result.locks, this.prefix);
    this.setState('live');
  }

  onError(f) {
    const asked = f.id === undefined ? undefined : this.pending.get(f.id);
    if (!asked) return;
    this.pending.delete(f.id);
    if (asked.op === 'status') {
      this.statusInFlight--; // a shed or refused status only leaves the waiters unknown
      return;
    }
    if (asked.op !== 'subscribe' || f.id !== this.subscribeId) return; // an auth's error too:
    if (f.error === 'unauthenticated') {                                 // the subscribe's says
      this.h.onAuthNeeded(this.token ? 'The server refused this token.' : 'This server needs a token.');
      return;
    }
    this.h.onProblem(`The server refused the subscription: ${f.error}: ${f.message ?? ''}`);
    if (retryable.has(f.error)) {
      const wait = backoff(this.attempt++);
      this.timer = setTimeout(() => this.subscribe(), wait);
    }
  }
}
