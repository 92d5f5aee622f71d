// Shared helpers of the node tests that drive a running `gemmaserve serve` (tests/e2e/*.sh start
// it and pass its address in GS_BASE_URL, its API key in GS_API_KEY).
import assert from 'node:assert/strict';
import OpenAI from 'openai';

export const baseUrl = process.env.GS_BASE_URL;
export const apiKey = process.env.GS_API_KEY || 'unused';
if (!baseUrl) {
  console.error('GS_BASE_URL is not set (the e2e script sets it to the server it started)');
  process.exit(2);
}

// The official client, with retries off so that 429/5xx reach the test as they are.
export function makeClient(opts = {}) {
  return new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, maxRetries: 0, timeout: 60_000, ...opts });
}

export async function modelName(client) {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  return models.data[0].id;
}

// POST/GET outside the OpenAI routes (tokenize, metrics, raw bodies).
export async function http(method, path, body, headers = {}) {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, text, json, headers: res.headers };
}

// /metrics as {name{labels}: value}.
export async function metrics() {
  const res = await fetch(`${baseUrl}/metrics`);
  assert.equal(res.status, 200);
  const out = {};
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

export const pagesUsed = (m) => m['gemmaserve_kv_pages_used{pool="sliding"}'] + m['gemmaserve_kv_pages_used{pool="full"}'];

// Waits until no request runs or waits and no KV page is held; returns the last metrics.
export async function waitIdle(limitMs = 20_000) {
  const end = Date.now() + limitMs;
  let m;
  while (Date.now() < end) {
    m = await metrics();
    if (m.gemmaserve_requests_running === 0 && m.gemmaserve_requests_waiting === 0 && pagesUsed(m) === 0) return m;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`server not idle after ${limitMs} ms: running ${m.gemmaserve_requests_running}, ` +
              `waiting ${m.gemmaserve_requests_waiting}, pages used ${pagesUsed(m)}`);
}

// Asserts that `promise` fails with an OpenAI-shaped error of the given status.
export async function expectApiError(promise, status, check = () => {}) {
  try {
    await promise;
  } catch (e) {
    assert.equal(e.status, status, `expected HTTP ${status}, got ${e.status}: ${e.message}`);
    assert.equal(typeof e.error?.message, 'string', `no error.message in ${JSON.stringify(e.error)}`);
    assert.equal(typeof e.error?.type, 'string', `no error.type in ${JSON.stringify(e.error)}`);
    assert.ok('param' in e.error && 'code' in e.error, `error lacks param/code: ${JSON.stringify(e.error)}`);
    check(e);
    return e;
  }
  assert.fail(`expected HTTP ${status}, the request succeeded`);
}

// A tiny test runner: named async checks, run in order, each bounded in time.
export async function runChecks(checks, perCheckMs = 120_000) {
  let failed = 0;
  for (const [name, fn] of checks) {
    const t0 = Date.now();
    try {
      await Promise.race([
        fn(),
        new Promise((_, rej) => setTimeout(() => rej(new Error(`timed out after ${perCheckMs} ms`)), perCheckMs).unref()),
      ]);
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: ${e.stack || e}`);
    }
  }
  console.log(`${checks.length - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
