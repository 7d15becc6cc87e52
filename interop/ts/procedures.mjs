// Drives a tool that Bondry serves from a web service and that asks three rounds of
// input (crates/bondry/tests/http_backends.rs), with the official TypeScript SDK client:
// pinned to 2026-07-28, where the SDK answers each input_required and retries with the
// sealed requestState, and in a 2025-11-25 session, where the questions arrive as
// elicitation requests on the call's stream.
// Usage: node procedures.mjs http://127.0.0.1:PORT/mcp
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[2]);

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function session(label, options, expected, prefix) {
  const client = new Client(
    { name: 'bondry-interop-procedures', version: '0' },
    { ...options, capabilities: { elicitation: { form: {} } } },
  );
  const asked = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    return { action: 'accept', content: { answer: `${prefix}${asked.length}` } };
  });
  await client.connect(new StreamableHTTPClientTransport(url));
  const version = client.getNegotiatedProtocolVersion();
  check(version === expected, `${label}: negotiated ${version}, expected ${expected}`);
  const result = await client.callTool({ name: 'svc.ask', arguments: {} });
  const answers = result.structuredContent?.answers?.join();
  check(answers === `${prefix}1,${prefix}2,${prefix}3`, `${label}: ${JSON.stringify(result)}`);
  check(asked.join() === 'question 1,question 2,question 3', `${label}: asked ${asked}`);
  await client.close();
  console.log(`ok ${label}: ${version}, three rounds answered ${answers}`);
}

await session('modern', { versionNegotiation: { mode: { pin: '2026-07-28' } } }, '2026-07-28', 'ts');
await session('handshake', {}, '2025-11-25', 'hs');
