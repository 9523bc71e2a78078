// The client against a running server (scripts/e2e runs it): BASE_URL and
// KEY from the environment; it prints one JSON object of what it saw.
import { explain } from "./narrowing.js";
import { newIdempotencyKey, pages, practiceClient } from "./index.js";

// Node's process, without a dependency on its type package.
declare const process: { env: Record<string, string | undefined> };

const base = process.env.BASE_URL ?? "";
const key = process.env.KEY ?? "";
const run = process.env.RUN ?? String(Date.now() % 1000000);
const api = practiceClient(base, key);
const out: Record<string, unknown> = {};

// A create with an Idempotency-Key, and its replay.
const idem = newIdempotencyKey();
const body = { name: "Nordlys ApS", cvr: `9${run.padStart(7, "0")}` };
const created = await api.POST("/companies", { params: { header: { "Idempotency-Key": idem } }, body });
const replay = await api.POST("/companies", { params: { header: { "Idempotency-Key": idem } }, body });
out.created = { status: created.response.status, id: created.data?.data.id, cvr: created.data?.data.cvr };
out.replay = { status: replay.response.status, replayed: replay.response.headers.get("Idempotent-Replayed"), id: replay.data?.data.id };

// Five people, listed two a page: every one, once.
const people: string[] = [];
for (let i = 0; i < 5; i++) {
  const p = await api.POST("/people", {
    params: { header: { "Idempotency-Key": `ts-${run}-${i}` } },
    body: { name: `Person ${i}`, email: `ts-${run}-${i}@example.dk` },
  });
  if (p.data) people.push(p.data.data.id);
}
let pageCount = 0;
const listed: string[] = [];
for await (const p of pages((cursor) => {
  pageCount++;
  return api.GET("/people", { params: { query: cursor ? { cursor, per_page: 2 } : { per_page: 2 } } });
})) {
  listed.push(p.id);
}
out.list = { created: people, listed, pages: pageCount };

// A batch read by ids.
const byIds = await api.GET("/people", { params: { query: { ids: people.slice(0, 3) } } });
out.ids = byIds.data?.data.map((p) => p.id);

// An error narrowed by its code: a CVR that is not 8 digits.
const bad = await api.POST("/companies", { params: { header: { "Idempotency-Key": newIdempotencyKey() } }, body: { name: "X", cvr: "12" } });
if (bad.error && bad.error.code === "invalid_request") {
  out.error = { status: bad.response.status, code: bad.error.code, field: bad.error.field, problems: bad.error.errors.length, explained: explain(bad.error) };
} else {
  out.error = { status: bad.response.status, unexpected: bad.error ?? bad.data };
}
// The same key with another body: a ConflictError.
const reused = await api.POST("/companies", { params: { header: { "Idempotency-Key": idem } }, body: { name: "Another", cvr: body.cvr } });
out.conflict = reused.error ? { status: reused.response.status, code: reused.error.code, explained: explain(reused.error) } : { status: reused.response.status };

console.log(JSON.stringify(out));
