// The JSON API (README "The JSON API"). Every path is relative: the page may be served under
// /proxy/application_.../ by YARN's proxy, so nothing here starts with a slash.

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

const enc = encodeURIComponent;

function query(params) {
  const parts = [];
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue;
    parts.push(`${enc(k)}=${enc(String(v))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

export async function get(path, params) {
  let r;
  try {
    r = await fetch(path + query(params), { headers: { Accept: 'application/json' }, cache: 'no-store' });
  } catch (e) {
    throw new ApiError(`cannot reach the server (${e.message})`, 0);
  }
  let body = null;
  try {
    body = await r.json();
  } catch (e) {
    if (r.ok) throw new ApiError(`${path}: not JSON`, r.status);
  }
  if (!r.ok) throw new ApiError((body && body.error) || `${path}: HTTP ${r.status}`, r.status);
  return body;
}

const job = (id) => `api/jobs/${enc(id)}`;

export const api = {
  info: () => get('api/info'),
  jobs: (filters) => get('api/jobs', filters),
  job: (id) => get(job(id)),
  events: (id, after) => get(`${job(id)}/events`, { after }),
  metrics: (id, after) => get(`${job(id)}/metrics`, { after }),
  config: (id) => get(`${job(id)}/config`),
  logs: (id) => get(`${job(id)}/logs`),
  log: (id, task, name, offset, limit) => get(`${job(id)}/logs/${enc(task)}/${enc(name)}`, { offset, limit }),
};
