// Overload: with one running slot and a two-request queue, a burst of clients gets 429 (in the
// OpenAI error shape) for what does not fit, the rest complete, and nothing is left behind.
import assert from 'node:assert/strict';
import { makeClient, modelName, waitIdle, pagesUsed, runChecks } from './gs_server_lib.mjs';

const client = makeClient();
const model = await modelName(client);

await runChecks([
  ['a burst beyond --max-queue gets 429, the rest succeed', async () => {
    const burst = Array.from({ length: 12 }, (_, i) =>
      client.completions.create({ model, prompt: `burst ${i}`, max_tokens: 48, ignore_eos: true, temperature: 0 })
        .then((r) => ({ ok: true, tokens: r.usage.completion_tokens }))
        .catch((e) => ({ ok: false, e })));
    const results = await Promise.all(burst);
    const ok = results.filter((r) => r.ok);
    const refused = results.filter((r) => !r.ok);
    assert.ok(ok.length >= 1, 'some requests are served');
    assert.ok(refused.length >= 1, 'some requests are refused');
    for (const r of ok) assert.equal(r.tokens, 48);
    for (const { e } of refused) {
      assert.equal(e.status, 429, `refused with ${e.status}: ${e.message}`);
      assert.equal(e.error?.type, 'rate_limit_error');
      assert.equal(typeof e.error?.message, 'string');
      assert.equal(e.headers?.get('retry-after'), '1', 'a 429 says when to retry');
    }
    console.log(`served ${ok.length}, refused ${refused.length}`);
    assert.equal(pagesUsed(await waitIdle()), 0);
  }],
  ['after the burst the server serves again', async () => {
    const r = await client.completions.create({ model, prompt: 'calm', max_tokens: 2, ignore_eos: true });
    assert.equal(r.usage.completion_tokens, 2);
  }],
]);
