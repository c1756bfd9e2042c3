// A small line chart of per-second rates over the last minutes, drawn on a <canvas>. Counts go
// into one bucket per second of local time; each point is the mean of the `smooth` seconds up
// to it (a few events a second would otherwise draw a saw), and the current, unfinished second
// is not drawn. Colours come from the style sheet (--series-<key>), so the chart follows the
// light or dark theme.

/** Seconds each drawn point averages. */
const smooth = 5;

export class RateChart {
  /**
   * canvas: where to draw.
   * keys: the series, e.g. ['grants', 'expiries', 'shed'].
   * seconds: how far back the chart reaches.
   */
  constructor(canvas, keys, seconds = 300) {
    this.canvas = canvas;
    this.keys = keys;
    this.seconds = seconds;
    // The seconds drawn, the unfinished one, and those the first point averages over.
    this.size = seconds + smooth + 1;
    this.buckets = new Map(keys.map((k) => [k, new Float64Array(this.size)]));
    this.head = Math.floor(Date.now() / 1000);
    this.colors = null; // read from the style sheet on the next draw
    matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
      this.colors = null;
      this.draw();
    });
    new ResizeObserver(() => this.draw()).observe(canvas);
  }

  /** Reads the theme's colours and font once: reading styles costs a style recalculation. */
  theme() {
    if (this.colors === null) {
      const style = getComputedStyle(this.canvas);
      const color = (name) => style.getPropertyValue(name).trim() || '#888';
      this.colors = {
        grid: color('--grid'),
        muted: color('--muted'),
        series: Object.fromEntries(this.keys.map((k) => [k, color(`--series-${k}`)])),
        font: `11px ${style.fontFamily}`,
      };
    }
    return this.colors;
  }

  /** Adds `n` to series `key` in the second of local time `ms`. */
  count(key, n, ms) {
    const sec = Math.floor(ms / 1000);
    this.advance(sec);
    if (sec <= this.head - this.size) return;
    this.buckets.get(key)[sec % this.size] += n;
  }

  /** Spreads `n` evenly over the seconds of local time from `fromMs` to `toMs` (a counter's growth). */
  spread(key, n, fromMs, toMs) {
    const from = Math.floor(fromMs / 1000);
    const to = Math.max(from, Math.floor(toMs / 1000));
    const each = n / (to - from + 1);
    for (let s = from; s <= to; ++s) this.count(key, each, s * 1000);
  }

  /** Returns the mean rate per second of `key` over the last `window` finished seconds. */
  rate(key, window = 10) {
    this.advance(Math.floor(Date.now() / 1000));
    const b = this.buckets.get(key);
    let sum = 0;
    for (let i = 1; i <= window; ++i) sum += b[(this.head - i) % this.size];
    return sum / window;
  }

  /** Moves the newest second to `sec`, clearing the seconds skipped. */
  advance(sec) {
    if (sec <= this.head) return;
    const clear = Math.min(sec - this.head, this.size);
    for (const b of this.buckets.values())
      for (let i = 1; i <= clear; ++i) b[(this.head + i) % this.size] = 0;
    this.head = sec;
  }

  /** Draws the finished seconds of every series. */
  draw() {
    const canvas = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth;
    const h = canvas.clientHeight;
    if (w === 0 || h === 0) return;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
    }
    this.advance(Math.floor(Date.now() / 1000));
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    const { grid, muted, series, font } = this.theme();

    const n = this.seconds; // points: ages n .. 1 (finished seconds)
    const size = this.size;
    const lines = new Map();
    let max = 0;
    for (const [key, b] of this.buckets) {
      // means[age] = mean of the seconds age .. age + smooth - 1 ago
      const means = new Float64Array(n + 1);
      let sum = 0;
      for (let age = n + smooth - 1; age >= 1; --age) {
        sum += b[(this.head - age + size) % size];
        if (age + smooth <= n + smooth - 1) sum -= b[(this.head - age - smooth + size) % size];
        if (age <= n) {
          means[age] = sum / smooth;
          max = Math.max(max, means[age]);
        }
      }
      lines.set(key, means);
    }
    const top = niceCeiling(Math.max(max, 1));

    const pad = { left: 34, right: 8, top: 8, bottom: 18 };
    const pw = w - pad.left - pad.right;
    const ph = h - pad.top - pad.bottom;
    const x = (age) => pad.left + pw * (1 - (age - 1) / (n - 1));
    const y = (v) => pad.top + ph * (1 - v / top);

    ctx.font = font;
    ctx.lineWidth = 1;
    ctx.strokeStyle = grid;
    ctx.fillStyle = muted;
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    for (const v of [0, top / 2, top]) {
      const yy = Math.round(y(v)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(pad.left, yy);
      ctx.lineTo(w - pad.right, yy);
      ctx.stroke();
      ctx.fillText(formatTick(v), pad.left - 6, yy);
    }
    ctx.textBaseline = 'alphabetic';
    for (let m = 0; m * 60 <= n; ++m) {
      const xx = x(Math.max(1, m * 60));
      ctx.textAlign = m === 0 ? 'right' : m * 60 >= n ? 'left' : 'center';
      ctx.fillText(m === 0 ? 'now' : `−${m} min`, xx, h - 4);
    }

    ctx.lineJoin = 'round';
    for (const key of this.keys) {
      const means = lines.get(key);
      ctx.strokeStyle = series[key];
      ctx.lineWidth = 1.75;
      ctx.beginPath();
      for (let age = n; age >= 1; --age) {
        if (age === n) ctx.moveTo(x(age), y(means[age]));
        else ctx.lineTo(x(age), y(means[age]));
      }
      ctx.stroke();
    }
  }
}

/** Returns the smallest of 1, 2, 5 × 10^k that is at least `v`. */
function niceCeiling(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function formatTick(v) {
  if (v >= 1000) return `${v / 1000}k`;
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}
