// The operator page: reads /api/v1/... and writes every string it shows as text (textContent, text nodes,
// attribute values), never as HTML: plugin names, health messages and volume ids come from plugins.
const REFRESH_MS = 5000;
/** Rows a long table shows at once: the filter narrows the rest (a page with 1 000 volumes paints in time). */
const MAX_ROWS = 200;

/** An element with attributes and children; strings become text nodes. */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

/** Replaces the children of {@code node}; null and undefined are left out. */
function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

async function api(name) {
  const r = await fetch('/api/v1/' + name, { headers: { Accept: 'application/json' }, cache: 'no-store' });
  let body;
  try {
    body = await r.json();
  } catch (e) {
    throw new Error(name + ': HTTP ' + r.status);
  }
  if (!r.ok) throw new Error(name + ': ' + (body && body.error ? body.error : 'HTTP ' + r.status));
  return body;
}

const pad = (n) => String(n).padStart(2, '0');
function time(iso) {
  if (!iso) return '-';
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + pad(d.getHours()) + ':'
    + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
}
function ago(iso) {
  if (!iso) return '';
  const s = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 1000));
  if (s < 120) return s + 's ago';
  if (s < 7200) return Math.round(s / 60) + 'm ago';
  if (s < 172800) return Math.round(s / 3600) + 'h ago';
  return Math.round(s / 86400) + 'd ago';
}
function since(iso) {
  return iso ? time(iso) + ' (' + ago(iso) + ')' : '-';
}
function bytes(b) {
  b = Number(b || 0);
  if (b < 1024) return b + ' B';
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = -1;
  do { b /= 1024; i++; } while (b >= 1024 && i < units.length - 1);
  return b.toFixed(1) + ' ' + units[i];
}
const typeName = (t) => (t === 'CSI_CONTROLLER' ? 'controller' : t === 'CSI_NODE' ? 'node' : String(t || ''));

function table(headers, rows, empty) {
  if (rows.length === 0) return el('p', { class: 'muted' }, empty);
  return el('table', {}, el('thead', {}, el('tr', {}, headers.map((h) => el('th', {}, h)))), el('tbody', {}, rows));
}

/** The filter's words, lower case ('' shows everything). */
function filterText() {
  return document.getElementById('filter').value.trim().toLowerCase();
}

/**
 * A table of the items the filter matches (by {@code text(item)}), at most MAX_ROWS of them, each made by
 * {@code row(item)}; says how many more there are.
 */
function filtered(headers, items, text, row, empty) {
  const f = filterText();
  const matching = f ? items.filter((x) => text(x).toLowerCase().includes(f)) : items;
  const shown = matching.slice(0, MAX_ROWS);
  const note = [];
  if (f) note.push(matching.length + ' of ' + items.length + ' match the filter');
  if (shown.length < matching.length) note.push('showing the first ' + shown.length + ': narrow the filter for the rest');
  return el('div', {}, note.length ? el('p', { class: 'muted', 'data-note': 'rows' }, note.join('; ')) : null,
    table(headers, shown.map(row), f && items.length ? 'Nothing matches the filter.' : empty));
}

/** A hash link for a problem's target: plugin:NAME, volume:PLUGIN/VOL, cluster-volume:PLUGIN/VOL, cluster. */
function hrefOf(link) {
  if (!link) return null;
  const i = link.indexOf(':');
  const kind = i < 0 ? link : link.slice(0, i);
  const key = i < 0 ? '' : link.slice(i + 1);
  switch (kind) {
    case 'plugin': return '#plugins/' + encodeURIComponent(key);
    case 'volume': return '#volumes/' + encodeURIComponent(key);
    case 'cluster-volume': return '#cluster/' + encodeURIComponent(key);
    case 'cluster': return '#cluster';
    default: return null;
  }
}

// ---- the problems banner ----------------------------------------------------------------------------------
function renderProblems(p, failure) {
  const box = document.getElementById('problems');
  box.replaceChildren();
  if (failure) {
    box.className = 'unknown';
    box.append(el('h2', {}, 'Cannot read the agent'), el('p', {}, failure.message));
    return;
  }
  if (p.healthy) {
    box.className = 'healthy';
    box.append(el('h2', { 'data-state': 'healthy' }, 'All healthy'),
      el('p', { class: 'muted' }, 'No unhealthy plugin, failed task, pending, lost or abnormal volume, failed mount,'
        + ' catalog disconnection or STUCK cluster item.'));
    return;
  }
  box.className = 'unhealthy';
  box.append(el('h2', { 'data-state': 'problems' }, p.problems.length + (p.problems.length === 1 ? ' problem' : ' problems')));
  box.append(el('ul', {}, p.problems.map((x) => {
    const href = hrefOf(x.link);
    return el('li', { 'data-kind': x.kind },
      el('span', { class: 'kind' }, x.kind),
      href ? el('a', { href }, x.subject) : el('strong', {}, x.subject),
      ': ', x.message,
      x.since ? el('span', { class: 'muted' }, ' since ' + since(x.since)) : null,
      ' — ', el('code', {}, x.more));
  })));
}

// ---- plugins -----------------------------------------------------------------------------------------------
function renderPlugins(plugins, status) {
  const tasks = new Map((status.tasks || []).map((t) => [t.id, t]));
  const row = (p) => {
    const h = p.health || {};
    const t = tasks.get(p.name);
    const latest = t && t.resources && t.resources.latest;
    return el('tr', { 'data-key': p.name, 'data-type': typeName(p.type) },
      el('td', {}, el('strong', {}, p.name)),
      el('td', {}, typeName(p.type)),
      el('td', {}, (p.fingerprint && p.fingerprint.name) || '-'),
      el('td', {}, p.version || (p.fingerprint && p.fingerprint.vendor_version) || '-'),
      el('td', {}, el('span', { class: h.healthy ? 'ok' : 'bad' }, h.healthy ? 'healthy' : 'unhealthy'),
        h.healthy || !h.message ? null : ': ' + h.message, p.restored ? ' (restored)' : null),
      el('td', {}, since(h.since)),
      el('td', {}, t ? t.process_state + (t.pid && t.pid !== '0' ? ' pid ' + t.pid : '') : 'external'),
      el('td', { class: 'num' }, t ? String(t.restarts) : '-'),
      el('td', { class: 'num' }, latest && latest.cpu_percent >= 0 ? latest.cpu_percent.toFixed(1) + '%' : '-'),
      el('td', { class: 'num' }, latest ? bytes(latest.memory_bytes) : '-'),
      el('td', { class: 'mono' }, p.socket_path));
  };
  const failures = (status.tasks || []).filter((t) => t.last_failure || t.artifact_error);
  fill(document.getElementById('tab-plugins'),
    el('h2', {}, 'Plugins'),
    filtered(['Plugin id', 'Type', 'Driver', 'Version', 'Health', 'Since', 'Process', 'Restarts', 'CPU', 'Memory',
      'Socket'], plugins.plugins, (p) => [p.name, typeName(p.type), p.fingerprint && p.fingerprint.name].join(' '), row,
    'No plugin is registered.'),
    failures.length === 0 ? null : el('div', {}, el('h2', {}, 'Task failures'),
      table(['Task', 'When', 'What'], failures.map((t) => el('tr', { 'data-key': 'task:' + t.id },
        el('td', {}, t.id), el('td', {}, since(t.last_failure_time)),
        el('td', {}, t.artifact_error ? 'artifact: ' + t.artifact_error : t.last_failure))), '')));
}

// ---- volumes -----------------------------------------------------------------------------------------------
/** A volume's last reported use: "12.0 GiB of 100.0 GiB (12 %)" and a meter; '-' if its plugin reported none. */
function usage(s) {
  const b = s && s.bytes;
  if (!b || !b.total) return '-';
  const used = b.used || Math.max(0, b.total - b.available);
  const ratio = Math.min(1, used / b.total);
  return el('span', {}, el('meter', { min: 0, max: 1, low: 0.85, high: 0.97, optimum: 0, value: ratio.toFixed(3) }),
    ' ' + bytes(used) + ' of ' + bytes(b.total) + ' (' + Math.round(ratio * 100) + ' %)');
}

function renderVolumes(volumes, stats) {
  const usageOf = new Map(((stats && stats.volumes) || []).map((s) => [s.plugin + '/' + s.volume, s]));
  const row = (v) => {
    const key = v.plugin + '/' + v.volume_id;
    const usages = (v.usages || []).map((u) => u.usage + ' ' + (u.stage || '') + ': '
      + (u.allocs || []).map((a) => a.alloc_id + ' ' + a.phase).join(', '));
    let state = el('span', { class: 'ok' }, 'mounted');
    if (v.lost) state = el('span', { class: 'bad' }, 'LOST');
    else if (v.pending) state = el('span', { class: 'warn' }, 'pending');
    return el('tr', { 'data-key': key },
      el('td', {}, v.plugin), el('td', { class: 'mono' }, v.volume_id), el('td', {}, state),
      el('td', { class: 'usage' }, usage(usageOf.get(key))),
      el('td', {}, usages.length ? usages.join('; ') : '-'),
      el('td', {}, v.controller || '-'),
      el('td', {}, v.abnormal ? el('span', { class: 'bad' }, v.abnormal) : '-'),
      el('td', {}, v.waiting_for || '-'));
  };
  const text = (v) => [v.plugin + '/' + v.volume_id, ...(v.usages || []).flatMap((u) => (u.allocs || [])
    .map((a) => a.alloc_id))].join(' ');
  fill(document.getElementById('tab-volumes'), el('h2', {}, 'Volumes on this node'),
    filtered(['Plugin', 'Volume', 'State', 'Used', 'Usages and allocations', 'Controller publication', 'Condition',
      'Waiting for'], volumes.volumes, text, row, 'No volume is staged or published on this node.'));
}

// ---- cluster -----------------------------------------------------------------------------------------------
function renderCluster(plugins, volumes, failure) {
  const tab = document.getElementById('tab-cluster');
  if (failure) {
    fill(tab, el('h2', {}, 'Cluster'), el('p', { class: 'bad' }, failure.message));
    return;
  }
  const controllers = volumes.controllers || {};
  const pluginRows = plugins.plugins.map((p) => el('tr', { 'data-key': 'cluster-plugin:' + p.name },
    el('td', {}, el('strong', {}, p.name)),
    el('td', {}, el('span', { class: p.controllers_healthy < p.controllers_expected ? 'bad' : 'ok' },
      p.controllers_healthy + ' of ' + p.controllers_expected)),
    el('td', {}, el('span', { class: p.nodes_healthy < p.nodes_expected ? 'bad' : 'ok' },
      p.nodes_healthy + ' of ' + p.nodes_expected)),
    el('td', {}, controllers[p.name] || '-')));
  const volumeRow = (v) => {
    const key = v.plugin + '/' + v.volume;
    const claims = v.claims.map((c) => el('div', { 'data-claim': c.node + '/' + c.alloc },
      'node ', el('strong', {}, c.node), ', alloc ', el('strong', {}, c.alloc), ', ' + c.mode
        + (c.readOnly ? ' read-only' : '') + ' since ' + time(c.since),
      c.nodeLive ? null : el('span', { class: 'bad' }, ' NODE LOST')));
    const attachments = v.attachments.map((a) => el('div', {},
      'node ' + a.node + ' ', el('span', { class: a.state === 'FAILED' ? 'bad' : 'ok' }, a.state),
      ' by ' + a.controller + ' since ' + time(a.since), a.message ? ': ' + a.message : null));
    // What the controller agent's checks found (ABNORMAL in the plugin's words, MISSING), and where it came from.
    const condition = (volumes.conditions || []).find((c) => c.plugin === v.plugin && c.volume === v.volume);
    const about = [
      condition ? el('div', { class: 'bad', 'data-condition': condition.condition }, condition.condition + ' since '
        + time(condition.since) + (condition.message ? ': ' + condition.message : '')) : null,
      v.source ? el('div', {}, 'from ' + v.source) : null,
      v.validated === false ? el('div', { class: 'warn' }, 'NOT VALIDATED') : null];
    return el('tr', { 'data-key': 'cluster-volume:' + key, id: 'cluster-volume-' + encodeURIComponent(key) },
      el('td', {}, v.plugin), el('td', { class: 'mono' }, v.volume, ...about.filter((x) => x)),
      el('td', {}, (v.accessModes || []).join(', ') || 'any'),
      el('td', { class: 'num' }, v.capacityBytes ? bytes(v.capacityBytes) : '-'),
      el('td', {}, claims.length ? claims : '-'), el('td', {}, attachments.length ? attachments : '-'),
      el('td', {}, controllers[v.plugin] || 'none elected'));
  };
  const listed = (what, ids) => (ids && ids.length ? [what + ' ' + ids.join(', ')] : []);
  const leakItems = (volumes.leaks || []).map((l) => el('li', { 'data-kind': 'leak' }, 'plugin ' + l.plugin + ': '
    + [...listed('volumes no record names:', l.volumes), ...listed('snapshots no record names:', l.snapshots),
      ...listed('recorded snapshots it lacks:', l.missing_snapshots),
      ...listed('publications no attachment records:', l.unrecorded_publications)].join('; ')
    + ' (since ' + time(l.since) + ')'));
  const volumeText = (v) => [v.plugin + '/' + v.volume, ...v.claims.map((c) => c.node + ' ' + c.alloc)].join(' ');
  const requestRows = (volumes.requests || []).map((r) => el('tr', {},
    el('td', {}, r.kind), el('td', {}, r.plugin), el('td', { class: 'mono' }, r.name), el('td', {}, r.state),
    el('td', {}, r.progress)));
  fill(tab,
    el('h2', {}, 'Plugins in the cluster'),
    plugins.freshness && plugins.freshness.stale ? el('p', { class: 'warn' }, 'STALE: one etcd member\'s own copy, '
      + (plugins.freshness.error || 'no quorum')) : null,
    table(['Plugin', 'Controllers healthy', 'Nodes healthy', 'Controller agent'], pluginRows,
      'No plugin in the cluster catalog.'),
    el('h2', {}, 'Cluster volumes'),
    filtered(['Plugin', 'Volume', 'Access modes', 'Capacity', 'Claims (node, alloc, mode)', 'Attachments',
      'Controller agent'], volumes.volumes, volumeText, volumeRow, 'No cluster volume is registered.'),
    requestRows.length ? el('h2', {}, 'Requests not done') : null,
    requestRows.length ? table(['Kind', 'Plugin', 'Name', 'State', 'Progress'], requestRows, '') : null,
    leakItems.length ? el('h2', {}, 'LEAKED (left as they are)') : null,
    leakItems.length ? el('ul', {}, leakItems) : null,
    (volumes.stuck || []).length ? el('h2', {}, 'STUCK') : null,
    (volumes.stuck || []).length ? el('ul', {}, volumes.stuck.map((s) => el('li', { 'data-kind': 'stuck' }, s))) : null);
}

// ---- tabs, the hash and the filter -------------------------------------------------------------------------
/** The last answers: rendered again when the filter changes. */
let last = null;
/** The hash the filter was last set from: a link to a row shows that row once; the filter is the user's after. */
let routedHash = null;

function render() {
  if (!last) return;
  if (last.failure) {
    renderProblems(null, last.failure);
  } else {
    renderProblems(last.problems);
    renderPlugins(last.plugins, last.status);
    renderVolumes(last.volumes, last.volumeStats);
    document.getElementById('agent').textContent = 'pid ' + last.status.pid + ', version ' + last.status.version
      + (last.status.cluster ? ', cluster node ' + last.status.cluster.node_id : '') + ', up since '
      + time(last.status.started);
  }
  const clustered = Boolean(last.status && last.status.cluster);
  document.querySelector('nav a[data-tab="cluster"]').hidden = !clustered;
  if (clustered) renderCluster(last.clusterPlugins, last.clusterVolumes, last.clusterFailure);
}

function route() {
  const hash = decodeURIComponent(location.hash.slice(1));
  const slash = hash.indexOf('/');
  let tab = slash < 0 ? hash : hash.slice(0, slash);
  const target = slash < 0 ? '' : hash.slice(slash + 1);
  if (target && location.hash !== routedHash && last) {
    // A link to one plugin or volume (from the banner): the filter shows it, among at most a few.
    document.getElementById('filter').value = target;
    render();
  }
  if (last) routedHash = location.hash;
  const clusterLink = document.querySelector('nav a[data-tab="cluster"]');
  if (!['plugins', 'volumes', 'cluster'].includes(tab) || (tab === 'cluster' && clusterLink.hidden)) tab = 'plugins';
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.tab === tab);
  for (const s of document.querySelectorAll('section.tab')) s.hidden = s.id !== 'tab-' + tab;
  for (const tr of document.querySelectorAll('tr.target')) tr.classList.remove('target');
  if (target) {
    const want = tab === 'cluster' ? 'cluster-volume:' + target : target;
    const row = [...document.querySelectorAll('#tab-' + tab + ' tr[data-key]')].find((tr) => tr.dataset.key === want);
    if (row) {
      row.classList.add('target');
      row.scrollIntoView({ block: 'center' });
    }
  }
}

async function refresh() {
  const next = {};
  try {
    [next.problems, next.status, next.plugins, next.volumes, next.volumeStats] = await Promise.all([api('problems'),
      api('status'), api('plugins'), api('volumes'), api('volume-stats')]);
  } catch (e) {
    next.failure = e;
  }
  if (next.status && next.status.cluster) {
    try {
      [next.clusterPlugins, next.clusterVolumes] = await Promise.all([api('cluster/plugins'), api('cluster/volumes')]);
    } catch (e) {
      next.clusterFailure = e;
    }
  }
  last = next;
  render();
  document.getElementById('updated').textContent = 'updated ' + time(new Date().toISOString());
  route();
  if (!document.body.dataset.loaded) {
    document.body.dataset.loaded = 'true';
    // Since navigation: the first render with data, and (after the next frame) its paint: benchmarks/README.md.
    document.body.dataset.renderedMs = String(Math.round(performance.now()));
    requestAnimationFrame(() => setTimeout(() => {
      document.body.dataset.paintedMs = String(Math.round(performance.now()));
    }, 0));
  }
}

window.addEventListener('hashchange', route);
document.getElementById('filter').addEventListener('input', () => {
  render();
  route();
});
refresh();
setInterval(refresh, REFRESH_MS);
