// The events pane: the most recent lock events, newest first, in a VirtualList. Events are
// added in batches, at most ten times a second (nobody reads faster, and each batch moves every
// row in view), and the oldest fall off past `capacity`.

import { element, formatClock, setText } from './format.js';
import { VirtualList } from './virtual_list.js';

/** Row height in CSS pixels; the style sheet's --event-row must agree. */
export const eventRowHeight = 28;

function cell(className) {
  const c = element('div', `cell ${className}`);
  c.setAttribute('role', 'cell');
  return c;
}

function createRow() {
  const row = element('div', 'vrow erow');
  row.setAttribute('role', 'row');
  const time = cell('e-time');
  const lock = cell('e-lock');
  const event = cell('e-event');
  const badge = element('span', 'badge');
  event.append(badge);
  const owner = cell('e-owner');
  const token = cell('e-token');
  const cause = cell('e-cause');
  row.append(time, lock, event, owner, token, cause);
  row.parts = { time, lock, badge, owner, token, cause };
  row.entry = null;
  return row;
}

/*
 * An entry: {at, lock, event, owner, token, cause} from a lock_event frame (cause is "hand-off"
 * for a grant that followed a lease the page showed), or {at, note} for a line of the page's own
 * (reconnected, prefix changed).
 */
function fill(el, entry) {
  if (el.entry === entry) return; // entries never change
  el.entry = entry;
  const p = el.parts;
  setText(p.time, formatClock(entry.at));
  if (entry.note !== undefined) {
    el.dataset.kind = 'note';
    setText(p.lock, entry.note, entry.note);
    setText(p.badge, '');
    p.badge.dataset.event = '';
    setText(p.owner, '');
    setText(p.token, '');
    setText(p.cause, '');
    return;
  }
  el.dataset.kind = 'event';
  setText(p.lock, entry.lock, entry.lock);
  setText(p.badge, entry.event);
  p.badge.dataset.event = entry.event;
  setText(p.owner, entry.owner, entry.owner);
  setText(p.token, String(entry.token));
  setText(p.cause, entry.cause ?? '');
}

export class EventLog {
  constructor(scroller, capacity = 2000) {
    this.capacity = capacity;
    this.entries = [];
    this.batch = [];
    this.lastAdd = 0;
    this.list = new VirtualList(scroller, {
      rowHeight: eventRowHeight,
      createRow,
      fillRow: (el, i) => fill(el, this.entries[i]),
    });
  }

  /** Queues an entry; it shows on the next render. */
  add(entry) {
    this.batch.push(entry);
  }

  /** Adds the queued entries on top (at most every 100 ms) and renders the rows in view. */
  render(now) {
    if (this.batch.length > 0 && now - this.lastAdd >= 100) {
      this.lastAdd = now;
      const added = this.batch.reverse();
      this.batch = [];
      this.entries = added.concat(this.entries);
      if (this.entries.length > this.capacity) this.entries.length = this.capacity;
      this.list.setCount(this.entries.length);
      // A reader scrolled down keeps reading the same rows, now further down.
      this.list.shiftBy(added.length);
    }
    this.list.render();
  }
}
