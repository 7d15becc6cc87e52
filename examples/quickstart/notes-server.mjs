// A small MCP server over stdio, for the gateway quickstart (docs/quickstart-gateway.md):
// one tool, `save`, whose description is read from description.txt at every tools/list,
// so that editing the file is a change of the tool's definition that Bondry withholds
// until an operator approves it. Node.js 18 or later, no packages.
import { appendFileSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const REVISIONS = ["2025-11-25", "2025-06-18"];

function send(message) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
}

function tools() {
  const description = readFileSync(new URL("./description.txt", import.meta.url), "utf8").trim();
  return [
    {
      name: "save",
      description,
      inputSchema: {
        type: "object",
        properties: { text: { type: "string", description: "The note" } },
        required: ["text"],
      },
    },
  ];
}

function answer(method, params) {
  switch (method) {
    case "initialize": {
      const asked = params?.protocolVersion;
      return {
        protocolVersion: REVISIONS.includes(asked) ? asked : REVISIONS[0],
        capabilities: { tools: {} },
        serverInfo: { name: "notes", version: "1.0.0" },
      };
    }
    case "ping":
      return {};
    case "tools/list":
      return { tools: tools() };
    case "tools/call": {
      if (params?.name !== "save") throw { code: -32602, message: `Unknown tool: ${params?.name}` };
      appendFileSync(new URL("./notes.txt", import.meta.url), `${params.arguments?.text ?? ""}\n`);
      return { content: [{ type: "text", text: "saved" }] };
    }
    default:
      throw { code: -32601, message: `Method not found: ${method}` };
  }
}

createInterface({ input: process.stdin }).on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    send({ id: null, error: { code: -32700, message: "Parse error" } });
    return;
  }
  if (message.id === undefined || message.method === undefined) return; // notifications, answers
  try {
    send({ id: message.id, result: answer(message.method, message.params) });
  } catch (error) {
    send({ id: message.id, error: { code: error.code ?? -32603, message: error.message ?? String(error) } });
  }
});
