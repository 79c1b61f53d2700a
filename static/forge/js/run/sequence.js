// Puts a run's events in seq order before they are applied: the ones that can be applied
// now come out, in order; an event past a gap waits until the gap is filled; an event
// already applied, or already waiting, is dropped. No DOM, no network.
//
// The websocket sends every event after the seq the page connected with, in order, so a
// gap should never happen; if one does (a bug, a proxy), the page sees `hasGap` and asks
// GET /runs/{id}/events?after=<lastSeq> for the missing ones, which go through push too.
export class EventSequencer {
  constructor(lastSeq = 0) {
    this.lastSeq = lastSeq;
    this.waiting = new Map();
  }

  // Returns the events that follow lastSeq without a gap, in seq order.
  push(events) {
    for (const event of events) {
      if (!event || !Number.isInteger(event.seq) || event.seq <= this.lastSeq) continue;
      if (!this.waiting.has(event.seq)) this.waiting.set(event.seq, event);
    }
    const ready = [];
    while (this.waiting.has(this.lastSeq + 1)) {
      const event = this.waiting.get(this.lastSeq + 1);
      this.waiting.delete(this.lastSeq + 1);
      this.lastSeq += 1;
      ready.push(event);
    }
    return ready;
  }

  get hasGap() {
    return this.waiting.size > 0;
  }
}
