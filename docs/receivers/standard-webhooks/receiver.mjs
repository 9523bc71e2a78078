// A Practice API webhook receiver in Node.js on the Standard Webhooks
// library (npm standardwebhooks, pinned in package.json: npm ci).
//
// Every delivery carries webhook-id (the event id), webhook-timestamp and
// webhook-signature (v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{raw body}">,
// one per signing secret during a rotation) beside Service-Signature. The
// library takes the endpoint's secret exactly as the API showed it
// (whsec_…), checks the signature in constant time and rejects timestamps
// more than 5 minutes from its clock. Secrets are one per line in
// WEBHOOK_SECRETS_FILE, read on every request: during a rotation, add the new
// secret on a second line, then drop the old one.
//
// Deliveries are at least once: it deduplicates on webhook-id. They are also
// unordered: each carries its sequence (its place in the organisation's feed,
// GET /events), and an event is applied to a resource only if no later event
// of it was (stale otherwise). It reads no body over MAX_BODY (413: a delivery
// is a few hundred bytes).
//
//     npm ci && WEBHOOK_SECRETS_FILE=secrets.txt PORT=9000 node receiver.mjs
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";

const MAX_BODY = 1 << 20; // bytes; deliveries carry ids and status only
const seen = new Set(); // event ids already handled; keep them in your database in production
const applied = new Map(); // resource id -> sequence of the latest event applied to it

const secrets = () =>
  readFileSync(process.env.WEBHOOK_SECRETS_FILE, "utf8").split("\n").map((s) => s.trim()).filter(Boolean);

// verify returns the parsed event, or null when no secret verifies it.
function verify(body, headers) {
  for (const secret of secrets()) {
    try {
      return new Webhook(secret).verify(body, headers); // the raw body, never re-serialised JSON
    } catch {
      // not this secret (or not signed, or too old): try the next one
    }
  }
  return null;
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
    const body = Buffer.concat(chunks).toString("utf8");
    const event = verify(body, {
      "webhook-id": req.headers["webhook-id"] ?? "",
      "webhook-timestamp": req.headers["webhook-timestamp"] ?? "",
      "webhook-signature": req.headers["webhook-signature"] ?? "",
    });
    if (event === null) {
      res.writeHead(401).end();
      return;
    }
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
