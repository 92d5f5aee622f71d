// Soak: a few thousand short requests from many concurrent clients, a fraction of them hanging up
// mid-stream or mid-request, then the server must be idle with zero KV pages held.
// Bounded: GS_SOAK_REQUESTS requests (default 3000), GS_SOAK_SECONDS overall limit (default 150;
// the sanitized build's ctest runs fewer: tests/CMakeLists.txt).
import assert from 'node:assert/strict';
import { makeClient, modelName, metrics, pagesUsed, waitIdle, runChecks } from './gs_server_lib.mjs';

const total = Number(process.env.GS_SOAK_REQUESTS || 3000);
const limitMs = 1000 * Number(process.env.GS_SOAK_SECONDS || 150);
const concurrency = 32;
const client = makeClient({ timeout: 30_000 });
const model = await modelName(client);

// A deterministic generator, so a failure can be replayed with the same GS_SOAK_SEED.
let seed = Number(process.env.GS_SOAK_SEED || Date.now() % 100000);
console.log(`soak seed ${seed}`);
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const words = ['sun', 'moon', 'river', 'stone', 'cloud', 'tree', 'wind', 'fire', 'salt', 'glass'];
const prompt = () => Array.from({ length: 1 + Math.floor(rand() * 12) }, () => words[Math.floor(rand() * words.length)]).join(' ');

const counts = { done: 0, aborted: 0, errors: 0 };

async function one() {
  const kind = rand();
  const max_tokens = 1 + Math.floor(rand() * 4);
  const chat = rand() < 0.5;
  const body = chat
    ? { model, messages: [{ role: 'user', content: prompt() }], max_tokens, temperature: rand() < 0.5 ? 0 : 1 }
    : { model, prompt: prompt(), max_tokens, temperature: rand() < 0.5 ? 0 : 1 };
  const api = chat ? client.chat.completions : client.completions;
  const ac = new AbortController();
  try {
    if (kind < 0.35) {
      // A stream the client drops after its first chunk.
      const s = await api.create({ ...body, max_tokens: 64, ignore_eos: true, stream: true }, { signal: ac.signal });
      for await (const _ of s) {
        ac.abort();
      }
      counts.aborted++;
    } else if (kind < 0.45) {
      // A non-streaming request abandoned at a random moment.
      setTimeout(() => ac.abort(), Math.floor(rand() * 20));
      await api.create({ ...body, max_tokens: 16 }, { signal: ac.signal });
      counts.done++;
    } else if (kind < 0.75) {
      const s = await api.create({ ...body, stream: true });
      for await (const _ of s) {
      }
      counts.done++;
    } else {
      const r = await api.create(body);
      assert.ok(r.usage.completion_tokens <= max_tokens);
      counts.done++;
    }
  } catch (e) {
    if (ac.signal.aborted) {
      counts.aborted++;
    } else {
      counts.errors++;
      if (counts.errors <= 5) console.log(`request error: ${e.status ?? ''} ${e.message}`);
    }
  }
}

await runChecks([
  [`${total} short requests with random disconnects leak no pages`, async () => {
    const start = Date.now();
    let next = 0;
    async function worker() {
      while (next < total) {
        next++;
        await one();
        assert.ok(Date.now() - start < limitMs, `soak exceeded ${limitMs} ms`);
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker));
    console.log(`completed ${counts.done}, aborted ${counts.aborted}, errors ${counts.errors} in ${Date.now() - start} ms`);
    assert.equal(counts.errors, 0, 'no request may fail except by its own abort');
    assert.equal(counts.done + counts.aborted, total);
    const m = await waitIdle(30_000);
    assert.equal(pagesUsed(m), 0);
    assert.ok(m['gemmaserve_request_success_total{finished_reason="abort"}'] > 0, 'some requests were aborted');
  }],
  ['the server still answers normally afterwards', async () => {
    const r = await client.completions.create({ model, prompt: 'after the storm', max_tokens: 3, ignore_eos: true });
    assert.equal(r.usage.completion_tokens, 3);
    const m = await waitIdle();
    assert.equal(pagesUsed(m), 0);
  }],
], limitMs + 60_000);
