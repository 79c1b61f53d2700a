// The topbar's unread count, live: /ws/inbox/ sends {"unread": n} on connect and on
// every change (reviews.consumers); reconnects with a growing pause if the link drops.
(function () {
  "use strict";
  const badge = document.getElementById("inbox-count");
  if (!badge || !("WebSocket" in window)) return;
  let pause = 1000;
  function show(count) {
    badge.textContent = String(count);
    badge.title = count + " unread";
    badge.hidden = count === 0;
    document.documentElement.dataset.inboxUnread = String(count);
    const note = document.getElementById("inbox-unread-note");
    if (note) note.textContent = count + " unread";
  }
  function connect() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(scheme + "//" + location.host + "/ws/inbox/");
    socket.onopen = function () { pause = 1000; };
    socket.onmessage = function (message) {
      try {
        const data = JSON.parse(message.data);
        if (typeof data.unread === "number") show(data.unread);
      } catch (error) { /* not ours: ignore */ }
    };
    socket.onclose = function (event) {
      if (event.code === 4403) return; // signed out
      setTimeout(connect, pause);
      pause = Math.min(pause * 2, 30000);
    };
  }
  connect();
})();
