// The operator page: reads /api/v1/... and writes every string it shows as text (textContent, text nodes,
// attribute values), never as HTML: plugin names, health messages and volume ids come from plugins.
const REFRESH_MS = 5000;

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
  const rows = plugins.plugins.map((p) => {
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
  });
  const failures = (status.tasks || []).filter((t) => t.last_failure || t.artifact_error);
  fill(document.getElementById('tab-plugins'),
    el('h2', {}, 'Plugins'),
    table(['Plugin id', 'Type', 'Driver', 'Version', 'Health', 'Since', 'Process', 'Restarts', 'CPU', 'Memory',
      'Socket'], rows, 'No plugin is registered.'),
    failures.length === 0 ? null : el('div', {}, el('h2', {}, 'Task failures'),
      table(['Task', 'When', 'What'], failures.map((t) => el('tr', { 'data-key': 'task:' + t.id },
        el('td', {}, t.id), el('td', {}, since(t.last_failure_time)),
        el('td', {}, t.artifact_error ? 'artifact: ' + t.artifact_error : t.last_failure))), '')));
}

// ---- volumes -----------------------------------------------------------------------------------------------
function renderVolumes(volumes) {
  const rows = [];
  for (const v of volumes.volumes) {
    const key = v.plugin + '/' + v.volume_id;
    const usages = (v.usages || []).map((u) => u.usage + ' ' + (u.stage || '') + ': '
      + (u.allocs || []).map((a) => a.alloc_id + ' ' + a.phase).join(', '));
    let state = el('span', { class: 'ok' }, 'mounted');
    if (v.lost) state = el('span', { class: 'bad' }, 'LOST');
    else if (v.pending) state = el('span', { class: 'warn' }, 'pending');
    rows.push(el('tr', { 'data-key': key },
      el('td', {}, v.plugin), el('td', { class: 'mono' }, v.volume_id), el('td', {}, state),
      el('td', {}, usages.length ? usages.join('; ') : '-'),
      el('td', {}, v.controller || '-'),
      el('td', {}, v.abnormal ? el('span', { class: 'bad' }, v.abnormal) : '-'),
      el('td', {}, v.waiting_for || '-')));
  }
  fill(document.getElementById('tab-volumes'), el('h2', {}, 'Volumes on this node'),
    table(['Plugin', 'Volume', 'State', 'Usages and allocations', 'Controller publication', 'Condition',
      'Waiting for'], rows, 'No volume is staged or published on this node.'));
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
  const volumeRows = volumes.volumes.map((v) => {
    const key = v.plugin + '/' + v.volume;
    const claims = v.claims.map((c) => el('div', { 'data-claim': c.node + '/' + c.alloc },
      'node ', el('strong', {}, c.node), ', alloc ', el('strong', {}, c.alloc), ', ' + c.mode
        + (c.readOnly ? ' read-only' : '') + ' since ' + time(c.since),
      c.nodeLive ? null : el('span', { class: 'bad' }, ' NODE LOST')));
    const attachments = v.attachments.map((a) => el('div', {},
      'node ' + a.node + ' ', el('span', { class: a.state === 'FAILED' ? 'bad' : 'ok' }, a.state),
      ' by ' + a.controller + ' since ' + time(a.since), a.message ? ': ' + a.message : null));
    return el('tr', { 'data-key': 'cluster-volume:' + key, id: 'cluster-volume-' + encodeURIComponent(key) },
      el('td', {}, v.plugin), el('td', { class: 'mono' }, v.volume),
      el('td', {}, (v.accessModes || []).join(', ') || 'any'),
      el('td', { class: 'num' }, v.capacityBytes ? bytes(v.capacityBytes) : '-'),
      el('td', {}, claims.length ? claims : '-'), el('td', {}, attachments.length ? attachments : '-'),
      el('td', {}, controllers[v.plugin] || 'none elected'));
  });
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
    table(['Plugin', 'Volume', 'Access modes', 'Capacity', 'Claims (node, alloc, mode)', 'Attachments',
      'Controller agent'], volumeRows, 'No cluster volume is registered.'),
    requestRows.length ? el('h2', {}, 'Requests not done') : null,
    requestRows.length ? table(['Kind', 'Plugin', 'Name', 'State', 'Progress'], requestRows, '') : null,
    (volumes.stuck || []).length ? el('h2', {}, 'STUCK') : null,
    (volumes.stuck || []).length ? el('ul', {}, volumes.stuck.map((s) => el('li', { 'data-kind': 'stuck' }, s))) : null);
}

// ---- tabs and the hash -------------------------------------------------------------------------------------
function route() {
  const hash = decodeURIComponent(location.hash.slice(1));
  const slash = hash.indexOf('/');
  let tab = slash < 0 ? hash : hash.slice(0, slash);
  const target = slash < 0 ? '' : hash.slice(slash + 1);
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
  let status;
  try {
    const [problems, s, plugins, volumes] = await Promise.all([api('problems'), api('status'), api('plugins'),
      api('volumes')]);
    status = s;
    renderProblems(problems);
    renderPlugins(plugins, status);
    renderVolumes(volumes);
    document.getElementById('agent').textContent = 'pid ' + status.pid + ', version ' + status.version
      + (status.cluster ? ', cluster node ' + status.cluster.node_id : '') + ', up since ' + time(status.started);
  } catch (e) {
    renderProblems(null, e);
  }
  const clusterLink = document.querySelector('nav a[data-tab="cluster"]');
  clusterLink.hidden = !(status && status.cluster);
  if (status && status.cluster) {
    try {
      const [plugins, volumes] = await Promise.all([api('cluster/plugins'), api('cluster/volumes')]);
      renderCluster(plugins, volumes);
    } catch (e) {
      renderCluster(null, null, e);
    }
  }
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
refresh();
setInterval(refresh, REFRESH_MS);
