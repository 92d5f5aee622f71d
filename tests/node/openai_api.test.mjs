// The official OpenAI client against `gemmaserve serve` on the demo model: chat and completions,
// streaming and not, exact usage, stop strings, seeds, errors, concurrency, disconnects, metrics.
// Started by tests/e2e/openai_client.sh (the server runs with --api-key and --max-model-len 512).
import assert from 'node:assert/strict';
import { makeClient, modelName, http, metrics, pagesUsed, waitIdle, expectApiError, runChecks } from './gs_server_lib.mjs';

const client = makeClient();
const model = await modelName(client);
const maxModelLen = 512;
const messages = [{ role: 'user', content: 'Write a short poem about the sea.' }];

async function streamText(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let content = '', reasoning = '', finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      content += c.delta.content ?? '';
      reasoning += c.delta.reasoning_content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { content, reasoning, finish, usage, chunks };
}

async function completionStream(params) {
  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage };
}

await runChecks([
  ['models lists the served model', async () => {
    const m = await client.models.list();
    assert.equal(m.data[0].object, 'model');
    assert.equal(m.data[0].max_model_len, maxModelLen);
  }],

  ['models.retrieve: the served model, 404 model_not_found for another id', async () => {
    const m = await client.models.retrieve(model);
    assert.equal(m.id, model);
    assert.equal(m.object, 'model');
    assert.deepEqual(m, (await client.models.list()).data[0]);
    for (const id of ['no-such-model', 'org/other-model']) {
      await expectApiError(client.models.retrieve(id), 404, (e) => assert.equal(e.code, 'model_not_found'));
    }
    await expectApiError(makeClient({ apiKey: 'wrong-key' }).models.retrieve(model), 401);
  }],

  ['a wrong method on a known path is 405 with Allow', async () => {
    for (const [method, path, allow] of [['GET', '/v1/chat/completions', 'POST'], ['DELETE', '/v1/models', 'GET, HEAD'],
                                         ['POST', '/health', 'GET, HEAD'], ['PUT', '/v1/completions', 'POST']]) {
      const r = await http(method, path, method === 'POST' ? {} : undefined);
      assert.equal(r.status, 405, `${method} ${path}: ${r.text}`);
      assert.equal(r.headers.get('allow'), allow, `${method} ${path}`);
      assert.equal(r.json.error.type, 'invalid_request_error');
    }
    assert.equal((await http('GET', '/v1/no-such-route')).status, 404);
  }],

  ['chat: usage is exact', async () => {
    const r = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.model, model);
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].message.role, 'assistant');
    const tok = await http('POST', '/tokenize', { model, messages });
    assert.equal(r.usage.prompt_tokens, tok.json.count, 'prompt_tokens = tokens of the rendered template');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    if (r.choices[0].finish_reason === 'length') assert.equal(r.usage.completion_tokens, 12);
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 12);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
  }],

  ['chat: logprobs count equals completion tokens', async () => {
    const r = await client.chat.completions.create({ model, messages, max_tokens: 10, temperature: 0, logprobs: true,
                                                     top_logprobs: 3, ignore_eos: true });
    assert.equal(r.usage.completion_tokens, 10);
    assert.equal(r.choices[0].logprobs.content.length, 10);
    for (const lp of r.choices[0].logprobs.content) {
      assert.ok(lp.logprob <= 0);
      assert.equal(lp.top_logprobs.length, 3);
      // Greedy: the chosen token is the most likely one.
      assert.ok(lp.logprob >= lp.top_logprobs[0].logprob - 1e-4);
    }
  }],

  ['chat: streaming gives the same greedy text as non-streaming', async () => {
    const params = { model, messages, max_tokens: 24, temperature: 0 };
    const whole = await client.chat.completions.create(params);
    const s = await streamText(params);
    assert.equal(s.content, whole.choices[0].message.content ?? '');
    assert.equal(s.reasoning, whole.choices[0].message.reasoning_content ?? '');
    assert.equal(s.finish, whole.choices[0].finish_reason);
    assert.deepEqual(
      [s.usage.prompt_tokens, s.usage.completion_tokens],
      [whole.usage.prompt_tokens, whole.usage.completion_tokens]);
  }],

  ['completions: streaming and not, usage', async () => {
    const params = { model, prompt: 'The capital of France is', max_tokens: 16, temperature: 0, ignore_eos: true };
    const whole = await client.completions.create(params);
    assert.equal(whole.object, 'text_completion');
    assert.equal(whole.choices[0].finish_reason, 'length');
    assert.equal(whole.usage.completion_tokens, 16);
    const tok = await http('POST', '/tokenize', { model, prompt: params.prompt });
    assert.equal(whole.usage.prompt_tokens, tok.json.count);
    const s = await completionStream(params);
    assert.equal(s.text, whole.choices[0].text);
    assert.equal(s.finish, 'length');
    assert.equal(s.usage.completion_tokens, 16);
  }],

  ['completions: token-id prompt, echo and n', async () => {
    const tok = await http('POST', '/tokenize', { model, prompt: 'Once upon a time' });
    const r = await client.completions.create({ model, prompt: tok.json.tokens, max_tokens: 4, n: 3, temperature: 1,
                                                seed: 5, echo: true });
    assert.equal(r.choices.length, 3);
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
    const detok = await http('POST', '/detokenize', { tokens: tok.json.tokens });
    for (const c of r.choices) assert.ok(c.text.startsWith(detok.json.prompt), 'echo repeats the prompt');
    assert.equal(r.usage.prompt_tokens, tok.json.count);
  }],

  ['stop strings cut the text, streaming too', async () => {
    const params = { model, prompt: 'Count with me:', max_tokens: 40, temperature: 0, ignore_eos: true };
    const full = (await client.completions.create(params)).choices[0].text;
    // Pick a stop string from the middle of the greedy text (skip whitespace-only picks).
    let stop = null;
    for (let i = Math.floor(full.length / 3); i + 2 <= full.length && !stop; i++) {
      const cand = full.slice(i, i + 2);
      if (cand.trim().length === 2 && !cand.includes('\uFFFD')) stop = cand;
    }
    assert.ok(stop, `no usable stop string in ${JSON.stringify(full)}`);
    const want = full.slice(0, full.indexOf(stop));
    const r = await client.completions.create({ ...params, stop: [stop] });
    assert.equal(r.choices[0].text, want);
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.ok(r.usage.completion_tokens < 40);
    const s = await completionStream({ ...params, stop: stop });
    assert.equal(s.text, want);
    assert.equal(s.finish, 'stop');
  }],

  ['seeded sampling reproduces', async () => {
    const params = { model, messages, max_tokens: 16, temperature: 1.0, top_p: 0.95, ignore_eos: true };
    const a = await client.chat.completions.create({ ...params, seed: 1234 });
    const b = await client.chat.completions.create({ ...params, seed: 1234 });
    const c = await client.chat.completions.create({ ...params, seed: 999 });
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
    const sa = await streamText({ ...params, seed: 1234 });
    assert.equal(sa.content, a.choices[0].message.content ?? '');
    assert.notEqual(a.choices[0].message.content, c.choices[0].message.content, 'another seed, another sample');
  }],

  ['16 concurrent clients get what they would get alone', async () => {
    const prompts = ['alpha', 'bravo charlie', 'delta echo foxtrot', 'golf'];
    const alone = [];
    for (const p of prompts) {
      alone.push((await client.completions.create({ model, prompt: p, max_tokens: 12, temperature: 0, ignore_eos: true })).choices[0].text);
    }
    const jobs = [];
    for (let i = 0; i < 16; i++) {
      const p = prompts[i % 4];
      jobs.push(i % 2
        ? client.completions.create({ model, prompt: p, max_tokens: 12, temperature: 0, ignore_eos: true }).then((r) => r.choices[0].text)
        : completionStream({ model, prompt: p, max_tokens: 12, temperature: 0, ignore_eos: true }).then((r) => r.text));
    }
    const got = await Promise.all(jobs);
    got.forEach((t, i) => assert.equal(t, alone[i % 4], `client ${i}`));
    await waitIdle();
  }],

  ['a client that disconnects mid-stream gives its pages back', async () => {
    await waitIdle();
    const before = await metrics();
    const ac = new AbortController();
    const stream = await client.chat.completions.create(
      { model, messages, max_tokens: 400, temperature: 0, ignore_eos: true, stream: true }, { signal: ac.signal });
    let chunks = 0;
    let busy = null;
    try {
      for await (const _ of stream) {
        if (++chunks === 3) {
          busy = await metrics();
          ac.abort();
        }
      }
    } catch (e) {
      assert.ok(ac.signal.aborted, `unexpected stream error ${e}`);
    }
    assert.ok(busy.gemmaserve_requests_running >= 1 && pagesUsed(busy) > 0, 'the request held pages while it ran');
    const after = await waitIdle();
    assert.ok(after['gemmaserve_request_success_total{finished_reason="abort"}'] >
              before['gemmaserve_request_success_total{finished_reason="abort"}'], 'counted as aborted');
    assert.ok(after.gemmaserve_generation_tokens_total < before.gemmaserve_generation_tokens_total + 400,
              'generation stopped early');
  }],

  ['errors: bad values, unknown role, too long, bad key, wrong model', async () => {
    await expectApiError(client.chat.completions.create({ model, messages, temperature: 5 }), 400,
                         (e) => assert.equal(e.param, 'temperature'));
    await expectApiError(client.chat.completions.create({ model, messages, top_p: 0 }), 400);
    await expectApiError(client.chat.completions.create({ model, messages, max_tokens: -1 }), 400);
    await expectApiError(client.chat.completions.create({ model, messages, n: 0 }), 400);
    await expectApiError(client.chat.completions.create({ model, messages: [{ role: 'wizard', content: 'x' }] }), 400,
                         (e) => assert.match(e.message, /wizard/));
    await expectApiError(client.chat.completions.create({ model, messages: [] }), 400);
    await expectApiError(client.completions.create({ model, prompt: 'x', logprobs: 99 }), 400);
    await expectApiError(client.chat.completions.create({ model, messages, response_format: { type: 'json_object' } }), 400);
    const long = 'word '.repeat(maxModelLen * 2);
    await expectApiError(client.completions.create({ model, prompt: long, max_tokens: 4 }), 400, (e) => {
      assert.match(e.message, new RegExp(`${maxModelLen}`));
      assert.match(e.message, /prompt is \d+ tokens/);
    });
    await expectApiError(client.completions.create({ model, prompt: 'hi', max_tokens: maxModelLen }), 400,
                         (e) => assert.equal(e.param, 'max_tokens'));
    await expectApiError(makeClient({ apiKey: 'wrong-key' }).models.list(), 401);
    await expectApiError(client.completions.create({ model: 'no-such-model', prompt: 'x' }), 404);
  }],

  ['errors: malformed JSON, wrong types, body too large', async () => {
    for (const body of ['{', '[]', '{"prompt": 5}', '{"prompt":"x","max_tokens":"many"}', '{"prompt":"x","stream":"yes"}']) {
      const r = await http('POST', '/v1/completions', body);
      assert.equal(r.status, 400, body);
      assert.equal(r.json.error.type, 'invalid_request_error', body);
    }
    const big = await http('POST', '/v1/completions', JSON.stringify({ prompt: 'a'.repeat(3 << 20) }));
    assert.equal(big.status, 413);
    assert.equal(typeof big.json.error.message, 'string');
    const none = await http('GET', '/v1/nowhere');
    assert.equal(none.status, 404);
    assert.equal(typeof none.json.error.message, 'string');
  }],

  ['tokenize / detokenize round trip', async () => {
    const text = 'Hello, world! Ünïcödé and numbers 12345.';
    const t = await http('POST', '/tokenize', { model, prompt: text, add_special_tokens: false });
    assert.equal(t.status, 200);
    assert.equal(t.json.count, t.json.tokens.length);
    assert.equal(t.json.max_model_len, maxModelLen);
    const d = await http('POST', '/detokenize', { model, tokens: t.json.tokens });
    assert.equal(d.status, 200);
    assert.equal(d.json.prompt, text);
    assert.equal((await http('POST', '/detokenize', { tokens: [-5] })).status, 400);
  }],

  ['chat_template_kwargs: template switches work, the template inputs and Jinja globals are refused', async () => {
    const plain = await client.chat.completions.create({ model, messages, max_tokens: 1 });
    const thinking = await client.chat.completions.create(
      { model, messages, max_tokens: 1, chat_template_kwargs: { enable_thinking: true } });
    assert.ok(thinking.usage.prompt_tokens > plain.usage.prompt_tokens, 'enable_thinking changes the prompt');
    const injections = {
      messages: [{ role: 'system', content: 'never validated' }], bos_token: '', add_generation_prompt: false,
      tools: [], range: 'x', namespace: 'x',
    };
    for (const [key, value] of Object.entries(injections)) {
      await expectApiError(client.chat.completions.create(
        { model, messages, max_tokens: 1, chat_template_kwargs: { enable_thinking: true, [key]: value } }), 400, (e) => {
        assert.equal(e.param, 'chat_template_kwargs', key);
        assert.match(e.message, new RegExp(`'${key}'`));
      });
    }
  }],

  ['metrics: Prometheus text with the documented series', async () => {
    const res = await fetch(`${process.env.GS_BASE_URL}/metrics`);
    const text = await res.text();
    assert.match(res.headers.get('content-type'), /text\/plain/);
    for (const line of text.split('\n')) {
      if (!line) continue;
      assert.match(line, /^(# (HELP|TYPE) [a-zA-Z_:][\w:]* .+|[a-zA-Z_:][\w:]*(\{[a-zA-Z_]+="[^"]*"(,[a-zA-Z_]+="[^"]*")*\})? (-?[\d.eE+-]+|NaN|\+Inf))$/, line);
    }
    const m = await metrics();
    for (const k of ['gemmaserve_requests_running', 'gemmaserve_requests_waiting', 'gemmaserve_kv_pages_total{pool="full"}',
                     'gemmaserve_kv_pages_total{pool="sliding"}', 'gemmaserve_prefix_cache_hit_rate',
                     'gemmaserve_time_to_first_token_seconds_count', 'gemmaserve_inter_token_latency_seconds_count',
                     'gemmaserve_generation_tokens_total', 'gemmaserve_prompt_tokens_total',
                     'gemmaserve_request_success_total{finished_reason="length"}']) {
      assert.ok(k in m, `missing ${k}`);
    }
    assert.ok(m.gemmaserve_time_to_first_token_seconds_count > 0);
    assert.ok(m['gemmaserve_time_to_first_token_seconds_bucket{le="+Inf"}'] === m.gemmaserve_time_to_first_token_seconds_count);
    assert.ok(m.gemmaserve_generation_tokens_total > 0);
  }],

  ['prefix cache: a repeated prompt reports cached tokens', async () => {
    const long = [{ role: 'user', content: 'Tell me everything about lighthouses. '.repeat(12) }];
    await client.chat.completions.create({ model, messages: long, max_tokens: 2, temperature: 0 });
    const r = await client.chat.completions.create({ model, messages: long, max_tokens: 2, temperature: 0 });
    assert.ok(r.usage.prompt_tokens_details.cached_tokens > 0, 'second identical prompt hits the prefix cache');
    assert.ok(r.usage.prompt_tokens_details.cached_tokens < r.usage.prompt_tokens);
  }],

  ['logit_bias, min_tokens and include_stop_str_in_output change the output', async () => {
    const tok = await http('POST', '/tokenize', { model, prompt: ' harbour', add_special_tokens: false });
    const x = tok.json.tokens[tok.json.tokens.length - 1];
    const word = (await http('POST', '/detokenize', { tokens: [x] })).json.prompt;
    const base = { model, prompt: 'The sea', max_tokens: 6, temperature: 0, ignore_eos: true };
    // +100 forces the token at every step.
    let r = await client.completions.create({ ...base, logit_bias: { [x]: 100 } });
    assert.equal(r.choices[0].text, word.repeat(6));
    // As a stop token it ends the output at once, unless min_tokens holds it back.
    r = await client.completions.create({ ...base, logit_bias: { [x]: 100 }, stop_token_ids: [x] });
    assert.equal(r.usage.completion_tokens, 1);
    assert.equal(r.choices[0].finish_reason, 'stop');
    r = await client.completions.create({ ...base, logit_bias: { [x]: 100 }, stop_token_ids: [x], min_tokens: 3 });
    assert.equal(r.usage.completion_tokens, 4);
    assert.equal(r.choices[0].finish_reason, 'stop');
    // A stop string is cut, or kept with include_stop_str_in_output.
    r = await client.completions.create({ ...base, logit_bias: { [x]: 100 }, stop: [word] });
    assert.equal(r.choices[0].text, '');
    r = await client.completions.create({ ...base, logit_bias: { [x]: 100 }, stop: [word], include_stop_str_in_output: true });
    assert.equal(r.choices[0].text, word);
    assert.equal(r.choices[0].finish_reason, 'stop');
  }],

  ['parameters out of range are 400 naming the field; unknown fields are accepted', async () => {
    for (const [params, field] of [[{ repetition_penalty: 0 }, 'repetition_penalty'],
                                   [{ logit_bias: { 5: 101 } }, 'logit_bias'],
                                   [{ logit_bias: { 99999999: 1 } }, 'logit_bias'],
                                   [{ min_tokens: 9, max_tokens: 4 }, 'min_tokens'],
                                   [{ reasoning_effort: 'extreme' }, 'reasoning_effort'],
                                   [{ use_beam_search: true }, 'use_beam_search']]) {
      await expectApiError(client.chat.completions.create({ model, messages, max_tokens: 4, ...params }), 400,
                           (e) => assert.equal(e.error.param, field, JSON.stringify(e.error)));
    }
    const r = await client.chat.completions.create({ model, messages, max_tokens: 2, user: 'u1', store: false,
                                                     metadata: { team: 'e2e' }, service_tier: 'auto',
                                                     parallel_tool_calls: true, some_future_field: { a: 1 },
                                                     repetition_penalty: 1.2, reasoning_effort: 'none' });
    assert.equal(r.choices.length, 1);
  }],

  ['idle at the end: no pages leaked', async () => {
    await waitIdle();
  }],
]);
