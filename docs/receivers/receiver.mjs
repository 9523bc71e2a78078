// A Practice API webhook receiver in Node.js, built-in modules only.
//
// It verifies each delivery's Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>],
// where v1 is the HMAC-SHA256 of "{t}.{raw body}" keyed with the endpoint's secret,
// the whole string, whsec_ prefix included. It accepts the delivery when any v1
// matches any of your secrets (one per line in WEBHOOK_SECRETS_FILE, read on every
// request: during a rotation, add the new secret on a second line, then drop the
// old one), rejects timestamps more than 300 s from its clock, and deduplicates on
// the event id (deliveries are at least once). Deliveries are also unordered: each
// carries its sequence (its place in the organisation's feed, GET /events), and an
// event is applied to a resource only if no later event of it was (stale otherwise).
// It reads no body over MAX_BODY (413: a delivery is a few hundred bytes) and
// compares signatures as bytes.
//
//     WEBHOOK_SECRETS_FILE=secrets.txt PORT=9000 node receiver.mjs
import { createHmac, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const TOLERANCE = 300; // seconds
const MAX_BODY = 1 << 20; // bytes; deliveries carry ids and status only
const seen = new Set(); // event ids already handled; keep them in your database in production
const applied = new Map(); // resource id -> sequence of the latest event applied to it

const secrets = () =>
  readFileSync(process.env.WEBHOOK_SECRETS_FILE, "utf8").split("\n").map((s) => s.trim()).filter(Boolean);

function verify(header, body) {
  const parts = header.split(",").map((p) => p.split("="));
  const stamps = parts.filter(([k]) => k === "t").map(([, v]) => v);
  const signatures = parts.filter(([k]) => k === "v1").map(([, v]) => Buffer.from(v ?? "", "hex"));
  if (stamps.length !== 1 || !/^\d+$/.test(stamps[0]) || signatures.length === 0) return false;
  if (Math.abs(Date.now() / 1000 - Number(stamps[0])) > TOLERANCE) return false;
  for (const secret of secrets()) {
    // The raw bytes, never re-serialised JSON.
    const expected = createHmac("sha256", secret).update(`${stamps[0]}.`).update(body).digest();
    if (signatures.some((s) => s.length === expected.length && timingSafeEqual(s, expected))) return true;
  }
  return false;
}

const server = createServer((req, res) => {
  const chunks = [];
  let size = 0;
  let refused = false;
  // tooLarge answers 413 and reads no more: the rest of the body is never
  // buffered, and the connection is closed once the answer is sent.
  const tooLarge = () => {
    refused = true;
    req.pause();
    res.writeHead(413, { connection: "close" }).end(() => req.destroy());
  };
  if (Number(req.headers["content-length"] ?? 0) > MAX_BODY) return tooLarge();
  req.on("data", (c) => {
    if (refused) return;
    size += c.length;
    if (size > MAX_BODY) return tooLarge(); // chunked, no length said
    chunks.push(c);
  });
  req.on("end", () => {
    if (refused) return;
    const body = Buffer.concat(chunks);
    if (!verify(req.headers["service-signature"] ?? "", body)) {
      res.writeHead(401).end();
      return;
    }
    const event = JSON.parse(body);
    const duplicate = seen.has(event.id);
    seen.add(event.id);
    const sequence = event.sequence ?? 0; // absent on webhook.test
    let stale = false;
    for (const resource of Object.values(event.data)) { // one object: the matter, invoice, time entry…
      if (!duplicate && sequence) {
        stale = sequence < (applied.get(resource.id) ?? 0);
        applied.set(resource.id, Math.max(applied.get(resource.id) ?? 0, sequence));
      }
    }
    // Handle the event here, once, unless it is stale (a later event of the same
    // resource came first: read the resource through the API if you need its state).
    console.log(JSON.stringify({ event_id: event.id, event: event.event, sequence, attempt: req.headers["service-delivery-attempt"], duplicate, stale }));
    res.writeHead(204).end();
  });
});
// PORT=0 takes any free port; the line on stderr says which.
server.listen(Number(process.env.PORT ?? 9000), "127.0.0.1", () => {
  console.error(`listening on http://127.0.0.1:${server.address().port}/`);
});
