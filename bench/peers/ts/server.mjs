// The TypeScript SDK v2 peer of Bondry's bench: `node server.mjs --port PORT
// --mode stateless|stateful [--tools N]` serves MCP Streamable HTTP on
// http://127.0.0.1:PORT/mcp with the bench's echo tool and N-1 copies of it,
// as the SDK documents: stateless through createMcpHandler (2026-07-28 and the
// 2025 revisions per request, JSON responses), stateful through one
// WebStandardStreamableHTTPServerTransport per session (JSON responses).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer, WebStandardStreamableHTTPServerTransport, createMcpHandler, fromJsonSchema } from '@modelcontextprotocol/server';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, index, all) => (arg.startsWith('--') ? [...pairs, [arg.slice(2), all[index + 1]]] : pairs), []),
);
const port = Number(args.port);
const mode = args.mode ?? 'stateless';
const tools = Number(args.tools ?? 1);

// The definition Bondry's demo.echo lists.
const inputSchema = {
  type: 'object',
  properties: { text: { type: 'string', maxLength: 10000, description: 'Text to echo back' } },
  required: ['text'],
  additionalProperties: false,
};
const outputSchema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };

function makeServer() {
  const server = new McpServer({ name: 'ts-peer', version: '1.0.0' });
  for (let index = 0; index < tools; index++) {
    const name = index === 0 ? 'demo.echo' : `demo.e${String(index).padStart(5, '0')}`;
    server.registerTool(
      name,
      {
        title: 'Echo',
        description: 'Returns the text it is given, as structured content.',
        inputSchema: fromJsonSchema(inputSchema),
        outputSchema: fromJsonSchema(outputSchema),
        annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      async ({ text }) => ({ content: [{ type: 'text', text: JSON.stringify({ text }) }], structuredContent: { text } }),
    );
  }
  return server;
}

// Node's request as the web-standard Request the SDK's handlers take.
async function toRequest(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const headers = new Headers();
  for (const [key, value] of Object.entries(req.headers)) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  const body = chunks.length ? Buffer.concat(chunks) : undefined;
  return new Request(`http://127.0.0.1:${port}${req.url}`, { method: req.method, headers, body });
}

// Every answer here is one JSON body (or empty), so it is sent whole with its length.
async function send(res, response) {
  const body = Buffer.from(await response.arrayBuffer());
  res.writeHead(response.status, { ...Object.fromEntries(response.headers), 'content-length': body.length });
  res.end(body);
}

const handle = mode === 'stateful' ? statefulHandler() : statelessHandler();

function statelessHandler() {
  const handler = createMcpHandler(() => makeServer(), { responseMode: 'json', keepAliveMs: 0 });
  return (request) => handler.fetch(request);
}

function statefulHandler() {
  const sessions = new Map();
  return async (request) => {
    const id = request.headers.get('mcp-session-id');
    if (id) {
      const transport = sessions.get(id);
      return transport ? transport.handleRequest(request) : new Response('session not found', { status: 404 });
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (sessionId) => sessions.set(sessionId, transport),
      onsessionclosed: (sessionId) => sessions.delete(sessionId),
    });
    await makeServer().connect(transport);
    return transport.handleRequest(request);
  };
}

const server = http.createServer(async (req, res) => {
  try {
    if (!req.url.startsWith('/mcp')) {
      res.writeHead(404).end();
      return;
    }
    await send(res, await handle(await toRequest(req)));
  } catch (error) {
    console.error(error);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => console.error(`listening on http://127.0.0.1:${port}/mcp`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
