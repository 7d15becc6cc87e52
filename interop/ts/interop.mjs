// Drives Bondry with the official TypeScript SDK client: the legacy handshake offering
// 2025-06-18, and `auto` negotiation, which must land in the modern era. Each connects,
// lists every tool and calls some. Usage: node interop.mjs http://127.0.0.1:PORT/mcp [PREFIX]
// (PREFIX, e.g. `up.`, when the demo tools are an upstream's served through a gateway).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[2]);
const prefix = process.argv[3] ?? '';
const named = (name) => `${prefix}${name}`;

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function session(label, options, expected) {
  const client = new Client({ name: 'bondry-interop-ts', version: '0' }, options);
  await client.connect(new StreamableHTTPClientTransport(url));
  const version = client.getNegotiatedProtocolVersion();
  check(version === expected, `${label}: negotiated ${version}, expected ${expected}`);

  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  const names = tools.map((tool) => tool.name);
  check(names.includes(named('demo.echo')) && names.includes(named('demo.forecast')), `${label}: tools ${names}`);
  check(!names.includes(named('admin.reset')), `${label}: admin.reset is listed`);

  const echo = await client.callTool({ name: named('demo.echo'), arguments: { text: 'hi' } });
  check(echo.structuredContent?.text === 'hi', `${label}: demo.echo gave ${JSON.stringify(echo)}`);
  const forecast = await client.callTool({ name: named('demo.forecast'), arguments: { region: 'eu-west', days: 2 } });
  check(!forecast.isError && forecast.structuredContent?.region === 'eu-west', `${label}: demo.forecast gave ${JSON.stringify(forecast)}`);
  const invalid = await client.callTool({ name: named('demo.add'), arguments: { a: 'x', b: 1 } });
  check(invalid.isError === true, `${label}: invalid input gave ${JSON.stringify(invalid)}`);

  await client.close();
  console.log(`ok ${label}: ${version}, ${tools.length} tools`);
}

await session('legacy handshake', { supportedProtocolVersions: ['2025-06-18'] }, '2025-06-18');
await session('auto negotiation', { versionNegotiation: { mode: 'auto' } }, '2026-07-28');
