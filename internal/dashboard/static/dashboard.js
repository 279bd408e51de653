// tfk8s dashboard: copies commands to the clipboard, and streams a job's logs into
// #log from the server-sent events its data-stream names. Every piece of log text enters the page as text (textContent),
// never as HTML, so a log line cannot inject markup; ANSI colours arrive as class
// names the server chose.
(function () {
  "use strict";

  const maxLines = 20000;

  function lineElement(msg) {
    const line = document.createElement("div");
    line.className = "line";
    if (msg.replica) {
      const prefix = document.createElement("span");
      prefix.className = "replica";
      prefix.textContent = "[" + msg.replica + "] ";
      line.appendChild(prefix);
    }
    for (const seg of msg.segments) {
      const span = document.createElement("span");
      if (seg.class) {
        span.className = seg.class;
      }
      span.textContent = seg.text;
      line.appendChild(span);
    }
    return line;
  }

  function matches(line, query) {
    return query === "" || line.textContent.toLowerCase().includes(query);
  }

  function stream(log) {
    const status = document.getElementById("log-status");
    const search = document.getElementById("log-search");
    const query = () => (search ? search.value.trim().toLowerCase() : "");
    const source = new EventSource(log.dataset.stream);
    let count = 0;
    source.addEventListener("open", () => {
      status.textContent = "Streaming…";
    });
    source.addEventListener("line", (ev) => {
      const line = lineElement(JSON.parse(ev.data));
      line.hidden = !matches(line, query());
      const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 20;
      log.appendChild(line);
      count++;
      if (count > maxLines) {
        log.firstChild.remove();
      }
      if (atBottom) {
        window.scrollTo(0, document.body.scrollHeight);
      }
    });
    source.addEventListener("end", (ev) => {
      source.close();
      const msg = JSON.parse(ev.data);
      status.textContent = msg.error ? "Stopped: " + msg.error : "End of the log (" + count + " lines).";
      status.className = msg.error ? "status error" : "status done";
    });
    source.addEventListener("error", () => {
      // A stream that broke is not reopened: the server would send the log again
      // from its start.
      if (source.readyState !== EventSource.CLOSED) {
        source.close();
      }
      if (!status.classList.contains("done")) {
        status.textContent = "The log stream was refused or broke off: reload the page to see it again.";
        status.className = "status error";
      }
    });
    if (search) {
      search.addEventListener("input", () => {
        const q = query();
        for (const line of log.children) {
          line.hidden = !matches(line, q);
        }
      });
    }
  }

  // A Copy button puts the command beside it (its data-copy) on the clipboard.
  function copyCommand(button) {
    navigator.clipboard.writeText(button.dataset.copy).then(
      () => { button.textContent = "Copied"; },
      () => { button.textContent = "Select and copy it"; });
  }

  document.addEventListener("click", (ev) => {
    const button = ev.target.closest("button.copy");
    if (button) {
      copyCommand(button);
    }
  });

  // The job page's progress section answers an error with itself saying why: show it
  // (htmx swaps in no error response by itself).
  document.addEventListener("htmx:beforeSwap", (ev) => {
    if (ev.detail.xhr.status >= 400 && ev.detail.target.id === "progress") {
      ev.detail.shouldSwap = true;
      ev.detail.isError = false;
    }
  });

  document.addEventListener("DOMContentLoaded", () => {
    const log = document.getElementById("log");
    if (log && log.dataset.stream) {
      stream(log);
    }
  });
})();
