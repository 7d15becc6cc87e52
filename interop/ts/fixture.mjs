// Drives Bondry's conformance fixture realm (examples/conformance.toml) with the official
// TypeScript SDK client, in the handshake era (2025-11-25) and pinned to 2026-07-28: it
// lists and gets prompts, lists and reads resources and templates, completes an
// argument, and calls tools, including one that reports progress.
// Usage: node fixture.mjs http://127.0.0.1:PORT/mcp
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[2]);

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function session(label, options, expected) {
  const client = new Client({ name: 'bondry-interop-fixture', version: '0' }, options);
  await client.connect(new StreamableHTTPClientTransport(url));
  const version = client.getNegotiatedProtocolVersion();
  check(version === expected, `${label}: negotiated ${version}, expected ${expected}`);

  const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
  check(prompts.includes('test_prompt_with_arguments'), `${label}: prompts ${prompts}`);
  const prompt = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'one', arg2: 'two' } });
  check(prompt.messages[0].content.text === "Prompt with arguments: arg1='one', arg2='two'", `${label}: prompt ${JSON.stringify(prompt)}`);
  const image = await client.getPrompt({ name: 'test_prompt_with_image' });
  check(image.messages[0].content.type === 'image', `${label}: image prompt ${JSON.stringify(image)}`);

  const resources = (await client.listResources()).resources.map((resource) => resource.uri);
  check(resources.includes('test://static-text') && resources.includes('test://static-binary'), `${label}: resources ${resources}`);
  const text = await client.readResource({ uri: 'test://static-text' });
  check(text.contents[0].text === 'This is the content of the static text resource.', `${label}: read ${JSON.stringify(text)}`);
  const binary = await client.readResource({ uri: 'test://static-binary' });
  check(binary.contents[0].mimeType === 'image/png' && binary.contents[0].blob.length > 0, `${label}: blob ${JSON.stringify(binary)}`);
  const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
  check(templates.includes('test://template/{id}/data'), `${label}: templates ${templates}`);
  const templated = await client.readResource({ uri: 'test://template/a%20b/data' });
  check(JSON.parse(templated.contents[0].text).id === 'a b', `${label}: template read ${JSON.stringify(templated)}`);

  const completion = await client.complete({
    ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
    argument: { name: 'arg1', value: 'par' },
  });
  check(completion.completion.values.join() === 'paris,park,party', `${label}: completion ${JSON.stringify(completion)}`);

  const mixed = await client.callTool({ name: 'test_multiple_content_types', arguments: {} });
  const kinds = mixed.content.map((block) => block.type).join();
  check(kinds === 'text,image,resource,resource_link', `${label}: content kinds ${kinds}`);
  const progress = [];
  const slow = await client.callTool(
    { name: 'test_tool_with_progress', arguments: {} },
    { onprogress: (update) => progress.push(update.progress) },
  );
  check(!slow.isError && progress.join() === '0,50,100', `${label}: progress ${progress} then ${JSON.stringify(slow)}`);

  await client.close();
  console.log(`ok ${label}: ${version}, ${prompts.length} prompts, ${resources.length} resources`);
}

await session('handshake', {}, '2025-11-25');
await session('modern', { versionNegotiation: { mode: { pin: '2026-07-28' } } }, '2026-07-28');
