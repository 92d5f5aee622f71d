// Images through the official OpenAI client against `gemmaserve serve` on the demo model
// (tests/e2e/server_images.sh starts it with --enable-multimodal, --limit-mm-per-prompt image=2 and
// --allowed-local-media-path fixtures/image_golden; GS_IMAGES=off: a server without
// --enable-multimodal, where only the refusal is checked).
//
// The answers' text is not checked: the demo model's weights are random. Until the vision tower
// (issue 30, vtower) is on the same branch, the engine prefills the images' placeholder embeddings
// instead of soft tokens; everything checked here (acceptance, token counts, streaming, the prefix
// cache keyed by image content, the 400s) holds either way.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { makeClient, modelName, http, metrics, waitIdle, expectApiError, runChecks } from './gs_server_lib.mjs';

const client = makeClient();
const model = await modelName(client);
const fixtures = process.env.GS_IMAGE_FIXTURES;
assert.ok(fixtures, 'GS_IMAGE_FIXTURES is not set');
const dataUrl = (file, type = 'image/png') => `data:${type};base64,${readFileSync(`${fixtures}/${file}`).toString('base64')}`;
const image = (url, detail) => ({ type: 'image_url', image_url: detail ? { url, detail } : { url } });
const ask = (...parts) => [{ role: 'user', content: [{ type: 'text', text: 'Describe' }, ...parts] }];

async function tokenCount(messages, extra = {}) {
  const r = await http('POST', '/tokenize', { model, messages, ...extra });
  assert.equal(r.status, 200, r.text);
  return r.json.count;
}

if (process.env.GS_IMAGES === 'off') {
  await runChecks([
    ['images are refused with how to turn them on', async () => {
      await expectApiError(client.chat.completions.create({ model, messages: ask(image(dataUrl('tiny.png'))), max_tokens: 2 }),
        400, (e) => {
          assert.match(e.error.message, /messages\[0\]\.content\[1\]: image input is off/);
          assert.match(e.error.message, /--enable-multimodal/);
        });
    }],
  ]);
}

await runChecks([
  ['an image chat is answered and its usage counts the soft tokens', async () => {
    const messages = ask(image(dataUrl('tiny.png')));
    const r = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0 });
    assert.equal(r.choices.length, 1);
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    // tiny.png (30x20) at the default 280-token budget: 960x624 pixels, 260 soft tokens, + boi and eoi.
    const count = await tokenCount(messages);
    assert.equal(r.usage.prompt_tokens, count);
    const textOnly = await tokenCount([{ role: 'user', content: 'Describe' }]);
    assert.equal(count - textOnly, 262);
  }],
  ['detail and mm_processor_kwargs set the budget', async () => {
    const base = await tokenCount(ask());
    assert.equal(await tokenCount(ask(image(dataUrl('tiny.png'), 'low'))) - base, 62);       // 70: 60 soft tokens
    assert.equal(await tokenCount(ask(image(dataUrl('tiny.png'))), { mm_processor_kwargs: { max_soft_tokens: 70 } }) - base, 62);
    const r = await client.chat.completions.create({ model, messages: ask(image(dataUrl('wide169.jpg', 'image/jpeg'), 'low')),
      max_tokens: 2, temperature: 0 });
    assert.equal(r.usage.prompt_tokens, base + 66 + 2);
  }],
  ['streaming with an image', async () => {
    const stream = await client.chat.completions.create({ model, messages: ask(image(dataUrl('gray.png'), 'low')), max_tokens: 4,
      temperature: 0, stream: true, stream_options: { include_usage: true } });
    let usage = null, finish = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) finish = c.finish_reason ?? finish;
    }
    assert.ok(finish);
    assert.equal(usage.prompt_tokens, await tokenCount(ask(image(dataUrl('gray.png'), 'low'))));
  }],
  ['a repeated image hits the prefix cache, another image with the same token ids does not', async () => {
    // wide169.png and wide169.jpg have the same size, so the same token ids, and other pixels.
    const send = async (file, type) => {
      await waitIdle();
      const before = (await metrics()).gemmaserve_prefix_cache_hits_total;
      await client.chat.completions.create({ model, messages: ask(image(dataUrl(file, type))), max_tokens: 1, temperature: 0 });
      await waitIdle();
      return (await metrics()).gemmaserve_prefix_cache_hits_total - before;
    };
    await send('wide169.png', 'image/png');
    const same = await send('wide169.png', 'image/png');
    const other = await send('wide169.jpg', 'image/jpeg');
    assert.ok(same >= 264, `a repeated image should be served from the cache, got ${same} tokens`);
    assert.ok(other < 16, `another image must not hit past its text prefix, got ${other} tokens`);
  }],
  ['file:// URLs only under --allowed-local-media-path', async () => {
    const r = await client.chat.completions.create({ model, messages: ask(image(`file://${fixtures}/square.png`, 'low')),
      max_tokens: 1 });
    assert.equal(r.usage.prompt_tokens, (await tokenCount(ask())) + 64 + 2);
    await expectApiError(client.chat.completions.create({ model, messages: ask(image('file:///etc/hostname')), max_tokens: 1 }),
      400, (e) => assert.match(e.error.message, /messages\[0\]\.content\[1\]: file \/etc\/hostname is outside --allowed-local-media-path/));
  }],
  ['bad images are 400s naming the part', async () => {
    const png = readFileSync(`${fixtures}/square.png`);
    const cut = `data:image/png;base64,${png.subarray(0, 2000).toString('base64')}`;
    await expectApiError(client.chat.completions.create({ model, messages: ask(image(cut)), max_tokens: 1 }), 400,
      (e) => { assert.match(e.error.message, /messages\[0\]\.content\[1\]: corrupt or truncated PNG/); assert.equal(e.error.param, 'messages'); });
    await expectApiError(client.chat.completions.create({ model, messages: ask(image('data:image/png;base64,bm90IGFuIGltYWdl')),
      max_tokens: 1 }), 400, (e) => assert.match(e.error.message, /unsupported image format/));
    await expectApiError(client.chat.completions.create({ model, messages: ask(image('http://example.com/a.png')), max_tokens: 1 }),
      400, (e) => assert.match(e.error.message, /--allowed-media-domains/));
    await expectApiError(client.chat.completions.create({ model, max_tokens: 1,
      messages: ask(image(dataUrl('tiny.png')), image(dataUrl('tiny.png')), image(dataUrl('tiny.png'))) }), 400,
      (e) => assert.match(e.error.message, /3 images in one request, over the limit of 2/));
    // The server is still serving.
    const ok = await client.chat.completions.create({ model, messages: ask(image(dataUrl('tiny.png'), 'low')), max_tokens: 1 });
    assert.equal(ok.choices.length, 1);
  }],
]);
