// The held-locks table: a VirtualList of rows (name, owner, token, time left with a bar,
// waiters, revision) over the sorted, filtered view of the LockModel. Only the rows in view
// exist in the DOM, and each render touches only what changed.

import { flashTime } from './lock_model.js';
import { element, formatLeft, setText } from './format.js';
import { VirtualList } from './virtual_list.js';

/** Row height in CSS pixels; the style sheet's --lock-row must agree. */
export const lockRowHeight = 34;

const endLabel = {
  expired: 'expired',
  undelivered: 'lost: undelivered',
  store_lost: 'lost: store lost',
  released: 'released',
  session_closed: 'released: session closed',
  revoked: 'released: revoked by an admin',
};

function cell(className) {
  const c = element('div', `cell ${className}`);
  c.setAttribute('role', 'cell');
  return c;
}

function createRow() {
  const row = element('div', 'vrow');
  row.setAttribute('role', 'row');
  const name = cell('c-name');
  const owner = cell('c-owner');
  const token = cell('c-token');
  const left = cell('c-left');
  const track = element('div', 'track');
  const fill = element('div', 'fill');
  track.append(fill);
  const leftText = element('span', 'left-text');
  left.append(track, leftText);
  const waiters = cell('c-waiters');
  const revision = cell('c-rev');
  row.append(name, owner, token, left, waiters, revision);
  row.parts = { name, owner, token, left, fill, leftText, waiters, revision };
  row.shown = { lock: null, scale: -1, level: '', state: '' };
  return row;
}

export class LockTable {
  /** scroller: the element that scrolls the rows. */
  constructor(scroller) {
    this.rows = [];
    this.serverNow = 0;
    this.localNow = 0;
    this.list = new VirtualList(scroller, {
      rowHeight: lockRowHeight,
      createRow,
      fillRow: (el, index) => this.fill(el, this.rows[index]),
    });
  }

  /** Shows `rows` (a view of the model) from the next render on. */
  setRows(rows) {
    this.rows = rows;
    this.list.setCount(rows.length);
  }

  /** Renders the rows in view at local time `localNow` and server time `serverNow`. */
  render(localNow, serverNow) {
    this.localNow = localNow;
    this.serverNow = serverNow;
    this.list.render();
  }

  /** Returns the locks whose rows are in view. */
  visible() {
    const [first, last] = this.list.range();
    return this.rows.slice(first, last);
  }

  fill(el, lock) {
    const p = el.parts;
    const shown = el.shown;
    if (shown.lock !== lock) {
      shown.lock = lock;
      el.dataset.lock = lock.name;
    }
    setText(p.name, lock.name, lock.name);
    setText(p.owner, lock.owner, lock.owner);
    setText(p.token, String(lock.token));
    setText(p.waiters, lock.waiters === null ? '–' : String(lock.waiters));
    setText(p.revision, String(lock.revision));

    let state = '';
    let scale = 0;
    let text;
    if (lock.ended !== null) {
      state = lock.ended;
      text = endLabel[lock.cause] ?? lock.ended;
    } else {
      const left = lock.expiresAt - this.serverNow;
      scale = Math.min(1, Math.max(0, left / lock.span));
      text = formatLeft(left);
      if (lock.flash !== null && this.localNow - lock.flashAt < flashTime) state = lock.flash;
    }
    setText(p.leftText, text);
    // Three decimals are finer than a pixel of the bar; fewer style writes per frame.
    scale = Math.round(scale * 1000) / 1000;
    if (shown.scale !== scale) {
      shown.scale = scale;
      p.fill.style.transform = `scaleX(${scale})`;
    }
    const level = lock.ended !== null ? 'none' : scale < 0.1 ? 'crit' : scale < 0.25 ? 'warn' : 'ok';
    if (shown.level !== level) {
      shown.level = level;
      p.left.dataset.level = level;
    }
    if (shown.state !== state) {
      shown.state = state;
      el.dataset.state = state;
    }
  }
}
