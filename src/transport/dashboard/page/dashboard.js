// The operator dashboard's page: fetches /dashboard/data (src/transport/dashboard/snapshot.ts,
// DashboardView) every few seconds and draws it, time series with uPlot and categories as bars.
// Plain script, no build step; everything it drew stays readable on window.ethtraceDashboard and in
// each chart's data-values attribute (test/transport/dashboard.test.ts reads them).
(() => {
  const REFRESH_MS = 5000;
  const RANGES = ['15m', '1h', '1d'];
  const COLORS = {
    requests: '#2f6fed',
    credits: '#8a5cf6',
    ok: '#17a05d',
    error: '#e8930c',
    refused: '#dc3b3b',
    p50: '#17a05d',
    p90: '#e8930c',
    p99: '#dc3b3b',
    busy: '#2f6fed',
    queued: '#dc3b3b',
    size: '#8d96a8',
  };
  /** Extra colours for failure codes beyond the first of each kind. */
  const ERROR_SHADES = ['#e8930c', '#c9760a', '#f2b44e', '#a85f06', '#f5c97c'];
  const HEIGHTS = { 'chart-traffic': 230, 'chart-failures': 170, 'chart-latency': 210, 'chart-pool': 160 };
  const STATUS_NAMES = {
    'refused-rate': 'HTTP 429 · rate limit',
    'refused-day': 'HTTP 429 · daily quota',
    'refused-allowlist': 'HTTP 403 · allow-list',
    '-32700': 'parse error',
    '-32600': 'invalid request',
    '-32601': 'method not found',
    '-32602': 'invalid params',
    '-32603': 'internal error',
    '-32000': 'server error',
    '-32002': 'timeout or refused',
    '-32003': 'transaction rejected',
    '-32005': 'limit exceeded',
    '-32008': 'response too large',
    3: 'execution reverted',
  };

  const state = { range: rangeOf(location.hash), view: null, plots: {}, draws: 0, timer: null };
  window.ethtraceDashboard = state;

  const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });
  const whole = new Intl.NumberFormat('en');
  const $ = (id) => document.getElementById(id);

  function rangeOf(hash) {
    const r = hash.replace('#', '');
    return RANGES.includes(r) ? r : '1h';
  }

  function statusName(status) {
    const known = STATUS_NAMES[status];
    if (status.startsWith('refused-')) return known || status;
    return known ? `${status} ${known}` : status;
  }

  function ms(v) {
    if (v === null || v === undefined) return '–';
    if (v >= 1000) return `${(v / 1000).toFixed(v >= 10000 ? 0 : 1)} s`;
    return `${v >= 10 ? v.toFixed(0) : v.toFixed(v >= 1 ? 1 : 2)} ms`;
  }

  function age(seconds) {
    if (seconds < 120) return `${seconds} s`;
    if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
    if (seconds < 172800) return `${Math.round(seconds / 3600)} h`;
    return `${Math.round(seconds / 86400)} days`;
  }

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function setStat(id, value, note) {
    const box = $(id);
    box.querySelector('strong').textContent = value;
    const small = box.querySelector('small');
    small.replaceChildren();
    if (note instanceof Node) small.append(note);
    else small.textContent = note;
  }

  // --- uPlot charts -------------------------------------------------------------------------

  function size(id) {
    return { width: Math.max(200, $(id).clientWidth), height: HEIGHTS[id] || 200 };
  }

  /** Draws `data` in the chart `id`; the plot is made again only when its series change. */
  function plot(id, signature, makeOptions, data, shown) {
    const box = $(id);
    const old = state.plots[id];
    if (old && old.signature === signature) old.plot.setData(data);
    else {
      if (old) old.plot.destroy();
      box.replaceChildren();
      const options = Object.assign(makeOptions(), size(id));
      state.plots[id] = { signature, plot: new uPlot(options, data, box) };
    }
    // What the chart means, when its drawn data is stacked: each series' own numbers.
    box.dataset.values = JSON.stringify(shown === undefined ? data : shown);
    box.dataset.state = 'drawn';
  }

  function empty(id, message) {
    const old = state.plots[id];
    if (old) old.plot.destroy();
    delete state.plots[id];
    const box = $(id);
    box.replaceChildren(el('div', 'empty', message));
    box.dataset.values = '[]';
    box.dataset.state = 'drawn';
  }

  /** The x scale of per-minute bars: half a minute of room on each side, so no bar is cut at an edge. */
  const minuteBars = { time: true, range: (u) => [u.data[0][0] - 30, u.data[0][u.data[0].length - 1] + 30] };

  const axisStyle = { stroke: '#6b7485', grid: { stroke: '#edf0f5', width: 1 }, ticks: { show: false } };

  /**
   * Points for values with no neighbour, which a line cannot show (a lone minute of a day), where
   * uPlot leaves points out for density.
   */
  function isolated(u, seriesIdx, show) {
    if (show) return null;
    const d = u.data[seriesIdx];
    const out = [];
    for (let i = 0; i < d.length; i++) if (d[i] != null && d[i - 1] == null && d[i + 1] == null) out.push(i);
    return out.length > 0 ? out : null;
  }

  function series(label, color, extra) {
    return Object.assign({ label, stroke: color, width: 2, points: { show: false } }, extra || {});
  }

  function fill(color) {
    return `${color}22`;
  }

  function countAxis(scale, side) {
    return Object.assign({}, axisStyle, {
      scale,
      side: side || 3,
      size: 56,
      values: (_u, vals) => vals.map((v) => compact.format(v)),
    });
  }

  function drawTraffic(v) {
    // Stacked bars: each bar is drawn from zero, so the failed (errors and refusals) and refused
    // series are drawn over the total as its lower parts; the legend shows each part's own count.
    const failed = v.errors.map((e, i) => e + (v.refused[i] ?? 0));
    const bars = uPlot.paths.bars({ size: [0.8, 36, 2], gap: 1 });
    const own = (counts) => (_u, _x, _s, i) => (i === null ? '--' : whole.format(counts[i] ?? 0));
    plot(
      'chart-traffic',
      v.range,
      () => ({
        scales: {
          x: minuteBars,
          n: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
          c: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
        },
        axes: [axisStyle, countAxis('n'), Object.assign(countAxis('c', 1), { grid: { show: false } })],
        series: [
          {},
          series('requests', COLORS.requests, {
            scale: 'n',
            fill: `${COLORS.requests}bb`,
            paths: bars,
            width: 0,
          }),
          series('failed', COLORS.error, {
            scale: 'n',
            fill: COLORS.error,
            paths: bars,
            width: 0,
            value: own(v.errors),
          }),
          series('refused', COLORS.refused, { scale: 'n', fill: COLORS.refused, paths: bars, width: 0 }),
          series('credits', COLORS.credits, { scale: 'c', width: 2 }),
        ],
      }),
      [v.time, v.requests, failed, v.refused, v.credits],
    );
  }

  function failureColor(status, index) {
    if (status.startsWith('refused-')) return status === 'refused-allowlist' ? '#9b2c2c' : COLORS.refused;
    return ERROR_SHADES[index % ERROR_SHADES.length];
  }

  /** Running sums of `rows`, so bars drawn from zero, largest first, read as a stack. */
  function stack(rows) {
    const out = [];
    let below = null;
    for (const row of rows) {
      below = row.map((x, i) => x + (below ? below[i] : 0));
      out.push(below);
    }
    return out;
  }

  function drawFailures(v) {
    const top = v.failures.slice(0, 6);
    if (top.length === 0) return empty('chart-failures', 'no failures in this range');
    let shade = 0;
    const colors = top.map((f) => failureColor(f.status, f.status.startsWith('refused-') ? 0 : shade++));
    const bars = uPlot.paths.bars({ size: [0.8, 36, 2], gap: 1 });
    // Drawn top of the stack first, so each code's part stays visible below the next.
    const order = top.map((_f, i) => top.length - 1 - i);
    const stacked = stack(top.map((f) => f.counts));
    plot(
      'chart-failures',
      `${v.range}|${top.map((f) => f.status).join(',')}`,
      () => ({
        scales: { x: minuteBars, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] } },
        axes: [axisStyle, countAxis('y')],
        series: [
          {},
          ...order.map((i) =>
            series(statusName(top[i].status), colors[i], {
              paths: bars,
              fill: colors[i],
              width: 0,
              value: (_u, _x, _s, idx) =>
                idx === null ? '--' : whole.format(state.view.failures[i]?.counts[idx] ?? 0),
            }),
          ),
        ],
      }),
      [v.time, ...order.map((i) => stacked[i])],
      top.map((f) => ({ status: f.status, counts: f.counts })),
    );
  }

  function decades(_u, splits) {
    return splits.map((x) => (Math.abs(Math.log10(x) % 1) < 1e-9 ? x : null));
  }

  /** A percentile's line: uPlot's own points (shown where data is sparse), so a lone minute still shows. */
  function latencySeries(label, color) {
    return { label, stroke: color, width: 2, value: (_u, x) => ms(x), points: { filter: isolated } };
  }

  function drawLatency(v) {
    if (!v.latency.count.some((c) => c > 0)) return empty('chart-latency', 'no answered calls in this range');
    plot(
      'chart-latency',
      v.range,
      () => ({
        scales: { x: minuteBars, y: { distr: 3 } },
        axes: [
          axisStyle,
          Object.assign({}, axisStyle, {
            size: 64,
            // Grid lines and labels at powers of ten only.
            filter: decades,
            grid: Object.assign({}, axisStyle.grid, { filter: decades }),
            values: (_u, vals) => vals.map((x) => (x === null ? '' : ms(x))),
          }),
        ],
        series: [
          {},
          latencySeries('p50', COLORS.p50),
          latencySeries('p90', COLORS.p90),
          latencySeries('p99', COLORS.p99),
        ],
      }),
      [v.time, v.latency.p50, v.latency.p90, v.latency.p99],
    );
  }

  function drawPool(v) {
    const p = v.pool;
    if (p.time.length === 0) return empty('chart-pool', 'no samples yet');
    // Queued jobs stacked on the busy ones: the band between the two lines is the queue.
    const waiting = p.busy.map((b, i) => b + (p.queued[i] ?? 0));
    const step = uPlot.paths.stepped({ align: 1 });
    plot(
      'chart-pool',
      `${v.range}|${p.stepMs}`,
      () => ({
        scales: {
          // The whole range, as the other charts, though samples begin when the server started.
          x: { time: true, range: () => [state.view.since / 1000, state.view.now / 1000] },
          y: { range: (_u, _min, max) => [0, Math.max(2, Math.ceil(max * 1.15))] },
        },
        axes: [axisStyle, Object.assign(countAxis('y'), { incrs: [1, 2, 5, 10, 20, 50, 100] })],
        series: [
          {},
          series('busy', COLORS.busy, { fill: fill(COLORS.busy), paths: step, points: { filter: isolated } }),
          series('queued', COLORS.queued, {
            paths: step,
            points: { filter: isolated },
            value: (_u, _x, _s, i) => (i === null ? '--' : whole.format(state.view.pool.queued[i] ?? 0)),
          }),
          series('workers', COLORS.size, { dash: [4, 4], width: 1.5, points: { filter: isolated } }),
        ],
        bands: [{ series: [2, 1], fill: `${COLORS.queued}33` }],
      }),
      [p.time, p.busy, waiting, p.size],
      { time: p.time, busy: p.busy, queued: p.queued, size: p.size },
    );
  }

  // --- bars -----------------------------------------------------------------------------------

  /** One bar: a name, segments (fractions of the track, left to right), a value, an optional limit mark. */
  function bar(name, segments, value, options) {
    const row = el('div', 'bar');
    const label = el('div', 'name', name);
    label.title = name;
    const track = el('div', `track${options?.unlimited ? ' unlimited' : ''}`);
    let left = 0;
    for (const s of segments) {
      const f = el('div', `fill ${s.className || ''}`);
      f.style.left = `${(left * 100).toFixed(2)}%`;
      f.style.width = `${(Math.min(1, s.fraction) * 100).toFixed(2)}%`;
      left += s.fraction;
      track.append(f);
    }
    if (options?.limit !== undefined) {
      const mark = el('div', 'limit');
      mark.style.left = `calc(${(options.limit * 100).toFixed(2)}% - 1px)`;
      mark.title = 'limit';
      track.append(mark);
    }
    row.append(label, track, el('div', 'value', value));
    return row;
  }

  function drawMethods(v) {
    const box = $('chart-methods');
    const top = v.methods.slice(0, 10);
    box.replaceChildren();
    if (top.length === 0) box.append(el('div', 'empty', 'no calls in this range'));
    const max = Math.max(1, ...top.map((m) => m.requests));
    for (const m of top) {
      const bad = m.errors + m.refused;
      const row = bar(
        m.name,
        [
          { fraction: (m.requests - bad) / max },
          { fraction: m.errors / max, className: 'error' },
          { fraction: m.refused / max, className: 'bad' },
        ],
        `${whole.format(m.requests)} · ${compact.format(m.credits)} cr`,
      );
      row.dataset.name = m.name;
      box.append(row);
    }
    box.dataset.values = JSON.stringify(top);
    box.dataset.state = 'drawn';
  }

  function drawFailureTotals(v) {
    const box = $('chart-failure-totals');
    box.replaceChildren();
    const max = Math.max(1, ...v.failures.map((f) => f.total));
    let shade = 0;
    for (const f of v.failures.slice(0, 8)) {
      const refused = f.status.startsWith('refused-');
      const row = bar(
        statusName(f.status),
        [{ fraction: f.total / max, className: refused ? 'bad' : 'error' }],
        whole.format(f.total),
      );
      row.querySelector('.fill').style.background = failureColor(f.status, refused ? 0 : shade++);
      box.append(row);
    }
    box.dataset.values = JSON.stringify(v.failures.map((f) => ({ status: f.status, total: f.total })));
  }

  function limitBar(label, used, limit, unit) {
    if (limit === null) {
      const scale = Math.max(1, used) * 1.25;
      return bar(label, [{ fraction: used / scale }], `${whole.format(used)} ${unit} · no limit`, {
        unlimited: true,
      });
    }
    const scale = Math.max(limit, used) * 1.15 || 1;
    return bar(
      label,
      [{ fraction: used / scale, className: used >= limit ? 'over' : '' }],
      `${whole.format(used)} / ${whole.format(limit)} ${unit}`,
      { limit: limit / scale },
    );
  }

  function drawKeys(v) {
    const box = $('chart-keys');
    box.replaceChildren();
    const keys = v.keys.slice(0, 8);
    if (keys.length === 0) box.append(el('div', 'empty', 'no key was used in this range'));
    for (const k of keys) {
      const item = el('div', 'key');
      item.dataset.name = k.name;
      const h = el('h3', '', k.name);
      const refused = k.refused > 0 ? ` · ${whole.format(k.refused)} refused` : '';
      h.append(el('small', '', `${whole.format(k.requests)} requests${refused}`));
      item.append(
        h,
        limitBar('busiest second', k.peakCreditsPerSecond, k.limits.creditsPerSecond, 'credits/s'),
        limitBar('today (UTC)', k.creditsToday, k.limits.creditsPerDay, 'credits'),
      );
      box.append(item);
    }
    box.dataset.values = JSON.stringify(keys);
    box.dataset.state = 'drawn';
  }

  /** With --database: every host of the service over the range (the rest of the page is this host's). */
  function drawHosts(v) {
    const card = $('card-hosts');
    const box = $('chart-hosts');
    if (!v.service) {
      card.hidden = true;
      return;
    }
    card.hidden = false;
    box.replaceChildren();
    if (v.service.error !== null)
      box.append(el('div', 'empty', `the usage database cannot be read: ${v.service.error}`));
    const hosts = v.service.hosts;
    if (hosts.length === 0 && v.service.error === null)
      box.append(el('div', 'empty', 'no usage recorded in this range'));
    const all = { host: 'all hosts', requests: 0, credits: 0, errors: 0, refused: 0 };
    for (const h of hosts) for (const f of ['requests', 'credits', 'errors', 'refused']) all[f] += h[f];
    const scale = Math.max(1, all.requests);
    for (const h of hosts.length > 1 ? [...hosts, all] : hosts) {
      const bad = h.errors + h.refused;
      const parts = [{ fraction: (h.requests - bad) / scale }, { fraction: bad / scale, className: 'bad' }];
      box.append(
        bar(
          h.host,
          parts,
          `${whole.format(h.requests)} requests · ${whole.format(h.credits)} credits · ${whole.format(bad)} failed or refused`,
        ),
      );
    }
    box.dataset.values = JSON.stringify(hosts);
    box.dataset.state = 'drawn';
  }

  // --- the page -------------------------------------------------------------------------------

  function drawStats(v) {
    const t = v.totals;
    setStat('stat-requests', compact.format(t.requests), `in the last ${v.range}`);
    setStat(
      'stat-credits',
      compact.format(t.credits),
      `${compact.format(t.credits / Math.max(1, v.time.length))} per minute`,
    );
    const bad = t.errors + t.refused;
    const share = t.requests === 0 ? 0 : (100 * bad) / t.requests;
    setStat(
      'stat-failures',
      compact.format(bad),
      `${share.toFixed(share < 10 && share > 0 ? 1 : 0)}% · ${whole.format(t.errors)} errors, ${whole.format(t.refused)} refused`,
    );
    setStat('stat-latency', t.p50 === null ? '–' : `${ms(t.p50)} / ${ms(t.p99)}`, 'answered calls');
    if (v.head === null) setStat('stat-head', 'none', 'the chain is empty');
    else {
      const note = el('span');
      const dot = el(
        'span',
        `dot${v.head.ageSeconds > 600 ? ' stuck' : v.head.ageSeconds > 60 ? ' late' : ''}`,
      );
      note.append(dot, `${age(v.head.ageSeconds)} old`);
      setStat('stat-head', `#${whole.format(v.head.number)}`, note);
    }
  }

  function draw(v) {
    drawStats(v);
    drawTraffic(v);
    drawMethods(v);
    drawKeys(v);
    drawHosts(v);
    drawFailures(v);
    drawFailureTotals(v);
    drawLatency(v);
    drawPool(v);
  }

  async function refresh() {
    const updated = $('updated');
    let res;
    try {
      res = await fetch(`/dashboard/data?range=${state.range}`, {
        credentials: 'same-origin',
        cache: 'no-store',
      });
    } catch {
      updated.textContent = 'server unreachable';
      updated.classList.add('stale');
      return;
    }
    // The session ended (the token changed, the cookie expired): back to the login page.
    if (res.status === 401) return location.assign('/dashboard');
    if (!res.ok) {
      updated.textContent = `server answered ${res.status}`;
      updated.classList.add('stale');
      return;
    }
    const view = await res.json();
    if (view.range !== state.range) return;
    state.view = view;
    draw(view);
    state.draws++;
    document.body.dataset.draws = String(state.draws);
    updated.classList.remove('stale');
    updated.textContent = `updated ${new Date(view.now).toLocaleTimeString()} · every ${REFRESH_MS / 1000} s`;
  }

  function choose(range) {
    state.range = range;
    for (const b of document.querySelectorAll('#ranges button'))
      b.classList.toggle('active', b.dataset.range === range);
    if (location.hash !== `#${range}`) history.replaceState(null, '', `#${range}`);
    refresh();
  }

  for (const b of document.querySelectorAll('#ranges button'))
    b.addEventListener('click', () => choose(b.dataset.range));
  window.addEventListener('hashchange', () => choose(rangeOf(location.hash)));
  window.addEventListener('resize', () => {
    for (const [id, p] of Object.entries(state.plots)) p.plot.setSize(size(id));
  });
  choose(state.range);
  state.timer = setInterval(refresh, REFRESH_MS);
})();
