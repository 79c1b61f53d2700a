// The run's websocket, /ws/runs/<id>/?after=<seq>: the server sends every event after
// that seq from the database, then live ones. Each (re)connection asks for the events
// after the last one the page has applied, so a dropped connection loses nothing; the
// EventSequencer drops what a reconnection sends twice.
const REFUSED = new Set([4400, 4403, 4404]);
// The server closes a watcher that fell too far behind the run's feed: reconnecting at
// once with the last applied seq reads what it missed from the database.
const LAGGING = 4408;

export class RunStream {
  // path: "/ws/runs/7/"; after(): the last applied seq; onEvents([event]); onStatus(name)
  // with name one of connecting, live, reconnecting, refused, stopped.
  constructor(path, { after, onEvents, onStatus }) {
    this.path = path;
    this.after = after;
    this.onEvents = onEvents;
    this.onStatus = onStatus;
    this.socket = null;
    this.timer = null;
    this.retries = 0;
    this.stopped = true;
    this.connections = 0;
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  stop(status = "stopped") {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = null;
    const socket = this.socket;
    this.socket = null;
    if (socket) socket.close(1000, "done");
    this.onStatus(status);
  }

  // Closes the connection as a network failure would; the stream reconnects by itself.
  drop() {
    if (this.socket) this.socket.close(4000, "dropped");
  }

  get running() {
    return !this.stopped;
  }

  connect() {
    const url = new URL(this.path, window.location.href);
    url.protocol = window.location.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("after", String(this.after()));
    this.onStatus(this.retries ? "reconnecting" : "connecting");
    const socket = new WebSocket(url.toString());
    this.socket = socket;
    this.connections += 1;
    socket.addEventListener("open", () => {
      if (this.socket !== socket) return;
      this.retries = 0;
      this.onStatus("live");
    });
    socket.addEventListener("message", (message) => {
      if (this.socket !== socket) return;
      // One event, or an array of consecutive events that were ready at once.
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      this.onEvents(Array.isArray(data) ? data : [data]);
    });
    socket.addEventListener("close", (event) => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (this.stopped) return;
      if (REFUSED.has(event.code)) {
        this.stopped = true;
        this.onStatus("refused");
        return;
      }
      this.onStatus("reconnecting");
      if (event.code === LAGGING) {
        this.timer = setTimeout(() => this.connect(), 0);
        return;
      }
      this.retries += 1;
      const wait = Math.min(10_000, 200 * 2 ** Math.min(this.retries - 1, 6));
      this.timer = setTimeout(() => this.connect(), wait);
    });
  }
}
