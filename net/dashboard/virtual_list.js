// A scrolling list that keeps only the rows in view in the DOM: a spacer as tall as all rows
// gives the scroll bar its range, and a small pool of absolutely placed row elements is moved
// and refilled as the user scrolls. Rows have one fixed height, so finding the rows in view is
// arithmetic, whatever the number of rows (10,000 locks stay as cheap as 10).

const overscan = 4;

export class VirtualList {
  /**
   * scroller: the element that scrolls (overflow: auto); its first child becomes the spacer.
   * rowHeight: the height of every row in CSS pixels (must match the style sheet).
   * createRow(): returns a new, empty row element.
   * fillRow(el, index): makes `el` show item `index`; called for every row in view on each
   *   render, so it must only touch the DOM where something changed.
   */
  constructor(scroller, { rowHeight, createRow, fillRow }) {
    this.scroller = scroller;
    this.rowHeight = rowHeight;
    this.createRow = createRow;
    this.fillRow = fillRow;
    this.count = 0;
    this.pool = [];
    this.spacer = document.createElement('div');
    this.spacer.className = 'vspacer';
    scroller.replaceChildren(this.spacer);
    // Geometry is read in events and kept, never read while rendering: a read after the DOM
    // writes of a render would force a layout of the whole page in the middle of the frame.
    this.top = scroller.scrollTop;
    this.viewport = scroller.clientHeight;
    scroller.addEventListener('scroll', () => {
      this.top = scroller.scrollTop;
    }, { passive: true });
    new ResizeObserver(([entry]) => {
      this.viewport = entry.contentRect.height;
    }).observe(scroller);
  }

  /** Sets the number of items; render() shows them. */
  setCount(count) {
    if (count === this.count) return;
    this.count = count;
    this.spacer.style.height = `${count * this.rowHeight}px`;
  }

  /** Returns the range [first, last) of items that render() places in the DOM. */
  range() {
    const first = Math.max(0, Math.floor(this.top / this.rowHeight) - overscan);
    const shown = Math.ceil(this.viewport / this.rowHeight) + 2 * overscan;
    return [first, Math.min(this.count, first + shown)];
  }

  /** Places and fills the rows in view, hiding the pool's spare rows. */
  render() {
    const [first, last] = this.range();
    const needed = last - first;
    while (this.pool.length < needed) {
      const row = this.createRow();
      row.style.position = 'absolute';
      row.style.height = `${this.rowHeight}px`;
      row.hidden = true;
      this.pool.push(row);
      this.spacer.append(row);
    }
    for (let k = 0; k < this.pool.length; ++k) {
      const row = this.pool[k];
      const index = first + k;
      if (index >= last) {
        if (!row.hidden) row.hidden = true;
        continue;
      }
      if (row.hidden) row.hidden = false;
      if (row.vindex !== index) {
        row.vindex = index;
        row.style.transform = `translateY(${index * this.rowHeight}px)`;
      }
      this.fillRow(row, index);
    }
  }

  /** Keeps the rows in view still when `added` rows were inserted above them. */
  shiftBy(added) {
    if (added > 0 && this.top > 0) {
      this.top += added * this.rowHeight;
      this.scroller.scrollTop = this.top;
    }
  }
}
