// The official TypeScript MCP SDK's client, spawning `computerfs mcp -w WS`
// over stdio as an agent host does, or connecting to `computerfs mcp
// --http` with its bearer token, and calling every tool.
//
//   node client.mjs COMPUTERFS_BINARY WORKSPACE
//   node client.mjs --http URL TOKEN
//
// It prints one line per check and ends with "N passed, N failed"; it
// exits 1 if any check failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [a, b] = process.argv.slice(2, 4);
const http = a === "--http";
if (!a || !b || (http && !process.argv[4])) {
  console.error("usage: node client.mjs COMPUTERFS_BINARY WORKSPACE | --http URL TOKEN");
  process.exit(2);
}

let passed = 0;
let failed = 0;
function check(name, cond, detail) {
  if (cond) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}: ${detail ?? ""}`);
  }
}

function text(res) {
  return (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

const transport = http
  ? new StreamableHTTPClientTransport(new URL(b), {
      requestInit: { headers: { Authorization: `Bearer ${process.argv[4]}` } },
    })
  : new StdioClientTransport({
      command: a,
      args: ["mcp", "-w", b],
      env: { ...process.env },
      stderr: "inherit",
    });
const client = new Client({ name: "computerfs-ts-test", version: "1.0.0" });
await client.connect(transport);

async function call(name, args, opts) {
  return client.callTool({ name, arguments: args }, undefined, opts);
}

try {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  const want = ["diff", "edit", "exec", "fork", "glob", "grep", "ls", "multi_edit", "read", "restore", "snapshot", "undo", "write"];
  check("tools/list", JSON.stringify(names) === JSON.stringify(want), JSON.stringify(names));
  const exec = tools.find((t) => t.name === "exec");
  check("exec's backend enum", JSON.stringify(exec?.inputSchema?.properties?.backend?.enum ?? []).includes("shell"),
    JSON.stringify(exec?.inputSchema?.properties?.backend));
  check("read is read-only", tools.find((t) => t.name === "read")?.annotations?.readOnlyHint === true);
  check("exec is open-world", exec?.annotations?.openWorldHint === true);

  let r = await call("snapshot", { name: "start" });
  check("snapshot", !r.isError && r.structuredContent?.created?.name === "start", text(r));

  r = await call("write", { file_path: "/ts/app.ts", content: "export const a = 1;\nexport const b = 2;\n" });
  check("write creates", !r.isError && r.structuredContent?.created === true, text(r));

  r = await call("write", { file_path: "/ts/app.ts", content: "no\n" });
  check("write over a file this session wrote", !r.isError, text(r));

  r = await call("read", { file_path: "/ts/app.ts" });
  check("read numbers lines", text(r).startsWith("     1\tno"), JSON.stringify(text(r)));

  r = await call("write", { file_path: "/ts/app.ts", content: "export const a = 1;\nexport const b = 2;\n" });
  check("write after read", !r.isError, text(r));

  r = await call("edit", { file_path: "/ts/app.ts", old_string: "a = 1", new_string: "a = 10" });
  check("edit returns a diff", !r.isError && text(r).includes("-export const a = 1;\n+export const a = 10;"), text(r));

  r = await call("edit", { file_path: "/ts/app.ts", old_string: "export", new_string: "declare" });
  check("edit refuses an ambiguous match", r.isError === true && text(r).includes("not unique"), text(r));

  r = await call("multi_edit", {
    file_path: "/ts/app.ts",
    edits: [
      { old_string: "a = 10", new_string: "a = 11" },
      { old_string: "b = 2", new_string: "b = 22" },
    ],
  });
  check("multi_edit", !r.isError && JSON.stringify(r.structuredContent?.replacements) === "[1,1]", text(r));

  r = await call("read", { file_path: "/ts/app.ts", offset: 2, limit: 1 });
  check("read offset and limit", text(r).startsWith("     2\texport const b = 22;"), JSON.stringify(text(r)));

  r = await call("glob", { pattern: "**/*.ts" });
  check("glob", text(r) === "/ts/app.ts", text(r));

  r = await call("grep", { pattern: "const \\w = 2+", output_mode: "content", "-n": true });
  check("grep content", text(r) === "/ts/app.ts:2:export const b = 22;", text(r));

  r = await call("grep", { pattern: "EXPORT", "-i": true, output_mode: "count", type: "ts" });
  check("grep count", text(r) === "/ts/app.ts:2", text(r));

  r = await call("ls", { path: "/ts" });
  check("ls", text(r).includes("app.ts") && Object.keys(r.structuredContent?.files ?? {}).length === 1, text(r));

  r = await call("exec", { command: "wc -l < ts/app.ts; echo made > /ts/out.txt" });
  check("exec", !r.isError && text(r).startsWith("2\n") && r.structuredContent?.backend === "shell" &&
    JSON.stringify(r.structuredContent?.changes ?? []).includes("/ts/out.txt"), text(r));

  r = await call("write", { file_path: "/ts/out.txt", content: "mine\n" });
  check("write refuses a file this session has not read", r.isError === true && text(r).includes("read it first"), text(r));

  r = await call("exec", { command: "exit 4" });
  check("exec exit status", r.structuredContent?.exit_code === 4, text(r));

  // Progress: the server reports every second while the command runs.
  let progress = 0;
  r = await call("exec", { command: "sleep 2.5; echo slept" }, {
    onprogress: () => progress++,
    timeout: 60000,
  });
  check("exec progress", progress >= 1 && text(r).startsWith("slept"), `${progress} notifications; ${text(r)}`);

  // Cancellation: aborting the request ends the command.
  const ac = new AbortController();
  const t0 = Date.now();
  setTimeout(() => ac.abort(), 300);
  let aborted = false;
  try {
    await call("exec", { command: "sleep 30" }, { signal: ac.signal });
  } catch {
    aborted = true;
  }
  check("exec cancelled", aborted && Date.now() - t0 < 10000, `aborted=${aborted} after ${Date.now() - t0} ms`);
  r = await call("exec", { command: "echo after" });
  check("exec after a cancel", text(r).startsWith("after"), text(r));

  r = await call("diff", { from: "start" });
  check("diff", !r.isError && text(r).includes("added    /ts/app.ts") && r.structuredContent?.count >= 2, text(r));

  // Undo the last exec that changed something, then restore the start.
  r = await call("exec", { command: "echo undo-me > /ts/undo.txt" });
  const undoID = r.structuredContent?.exec_id;
  r = await call("undo", {});
  check("undo", !r.isError && undoID && r.structuredContent?.exec_id === undoID && text(r).includes("/ts/undo.txt"), text(r));
  r = await call("read", { file_path: "/ts/undo.txt" });
  check("undo removed what the exec made", r.isError === true, text(r));
  check("undo is destructive", tools.find((t) => t.name === "undo")?.annotations?.destructiveHint === true);
  r = await call("restore", { name: "start" });
  check("restore", !r.isError && text(r).includes("\n/ts"), text(r));
  r = await call("diff", { from: "start" });
  check("nothing differs after the restore", !r.isError && r.structuredContent?.count === 0, text(r));

  r = await call("read", { file_path: "/nope" });
  check("errors are tool errors that say what to do", r.isError === true && text(r).includes("no such file"), text(r));
} catch (e) {
  check("no exception", false, e?.stack ?? String(e));
} finally {
  await client.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
