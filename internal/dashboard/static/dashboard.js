// tfk8s dashboard: copies commands to the clipboard, streams a job's logs into
// #log from the server-sent events its data-stream names, and draws with uPlot the
// charts a [data-curves] element holds (curves.go). Every piece of log text enters the page as text (textContent),
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

  // Curves: one uPlot chart per scalar, one line per replica, kept across the
  // refreshes of their section so that a refresh updates their data in place.
  const charts = new Map(); // scalar → {figure, plot, lines}
  const palette = ["#0b5cad", "#b42318", "#1a7f37", "#9a6700", "#6e40c9", "#0e7490", "#c2410c", "#475569"];
  const chartWidth = 440, chartHeight = 220;

  function chartOptions(c) {
    const x = c.x || "step";
    const series = [{ label: x }];
    c.lines.forEach((line, i) => {
      series.push({ label: line, stroke: palette[i % palette.length], width: 1.5, spanGaps: true, points: { show: c.steps.length < 2 } });
    });
    return {
      width: chartWidth, height: chartHeight, series: series,
      scales: { x: { time: false } },
      axes: [{ label: x }, { size: 60 }],
    };
  }

  // drawCurves draws the charts of el; a chart already drawn of the same lines gets
  // the new data and moves into el, the section that replaced its old one. Charts are
  // kept by el's id, so that the training and the usage curves keep their own.
  function drawCurves(el) {
    const shown = new Set();
    const prefix = el.id + "\n";
    for (const c of JSON.parse(el.dataset.curves || "[]")) {
      const data = [c.steps].concat(c.values);
      const lines = c.lines.join("\n");
      const key = prefix + c.scalar;
      let ch = charts.get(key);
      if (ch && ch.lines === lines) {
        ch.plot.setData(data);
      } else {
        if (ch) {
          ch.plot.destroy();
          ch.figure.remove();
        }
        const figure = document.createElement("figure");
        figure.className = "curve";
        figure.dataset.scalar = c.scalar;
        const caption = document.createElement("figcaption");
        caption.textContent = c.scalar;
        figure.appendChild(caption);
        ch = { figure: figure, lines: lines, plot: new uPlot(chartOptions(c), data, figure) };
        figure.plot = ch.plot; // what the browser tests read the plotted points from
        charts.set(key, ch);
      }
      el.appendChild(ch.figure);
      shown.add(key);
    }
    for (const [key, ch] of charts) {
      if (key.startsWith(prefix) && !shown.has(key)) {
        ch.plot.destroy();
        ch.figure.remove();
        charts.delete(key);
      }
    }
  }

  if (window.htmx) {
    // Fired for the page once htmx has started, and for every fragment it swaps in.
    htmx.onLoad((elt) => {
      if (!window.uPlot) {
        return;
      }
      const found = elt.matches && elt.matches("[data-curves]") ? [elt] : elt.querySelectorAll("[data-curves]");
      for (const el of found) {
        drawCurves(el);
      }
    });
  }

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
