#!/usr/bin/env python3
"""A Practice API webhook receiver in Python, standard library only.

It verifies each delivery's Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>],
where v1 is the HMAC-SHA256 of "{t}.{raw body}" keyed with the endpoint's secret,
the whole string, whsec_ prefix included. It accepts the delivery when any v1
matches any of your secrets (one per line in WEBHOOK_SECRETS_FILE, read on every
request: during a rotation, add the new secret on a second line, then drop the
old one), rejects timestamps more than 300 s from its clock, and deduplicates on
the event id (deliveries are at least once). Deliveries are also unordered: each
carries its sequence (its place in the organisation's feed, GET /events), and an
event is applied to a resource only if no later event of it was (stale otherwise).
It reads no body over MAX_BODY (413, unread: a delivery is a few hundred bytes)
and compares signatures as bytes, so no header can make it crash.

    WEBHOOK_SECRETS_FILE=secrets.txt PORT=9000 python3 receiver.py
"""
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE = 300  # seconds
MAX_BODY = 1 << 20  # bytes; deliveries carry ids and status only
seen = set()  # event ids already handled; keep them in your database in production
applied = {}  # resource id -> sequence of the latest event applied to it


def secrets():
    with open(os.environ["WEBHOOK_SECRETS_FILE"], encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def unhex(s):
    """The bytes a v1= value spells, or None (not hex: non-ASCII, odd length...)."""
    try:
        return bytes.fromhex(s) if s.isascii() else None
    except ValueError:
        return None


def verify(header, body):
    parts = [p.split("=", 1) for p in header.split(",") if "=" in p]
    stamps = [v for k, v in parts if k == "t"]
    signatures = [b for b in (unhex(v) for k, v in parts if k == "v1") if b is not None]
    # ASCII digits only ("²".isdigit() is true, and int() refuses it), and
    # few enough that int() takes them.
    if len(stamps) != 1 or not (stamps[0].isascii() and stamps[0].isdigit() and len(stamps[0]) <= 12) or not signatures:
        return False
    if abs(time.time() - int(stamps[0])) > TOLERANCE:
        return False
    signed = stamps[0].encode() + b"." + body  # the raw bytes, never re-serialised JSON
    for secret in secrets():
        expected = hmac.new(secret.encode(), signed, hashlib.sha256).digest()
        if any(hmac.compare_digest(expected, s) for s in signatures):  # bytes with bytes
            return True
    return False


class Receiver(BaseHTTPRequestHandler):
    def refuse(self, status):
        self.send_response(status)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True  # the body, if any, stays unread

    def do_POST(self):
        length = self.headers.get("Content-Length", "")
        if not (length.isascii() and length.isdigit()):
            return self.refuse(411)  # no length (chunked), or not a number
        if int(length) > MAX_BODY:
            return self.refuse(413)
        body = self.rfile.read(int(length))
        if not verify(self.headers.get("Service-Signature", ""), body):
            self.send_response(401)
            self.end_headers()
            return
        event = json.loads(body)
        duplicate = event["id"] in seen
        seen.add(event["id"])
        sequence = event.get("sequence", 0)  # absent on webhook.test
        stale = False
        for resource in event["data"].values():  # one object: the matter, invoice, time entry...
            if not duplicate and sequence:
                stale = sequence < applied.get(resource["id"], 0)
                applied[resource["id"]] = max(applied.get(resource["id"], 0), sequence)
        # Handle the event here, once, unless it is stale (a later event of the
        # same resource came first: read the resource through the API if you
        # need its state).
        print(json.dumps({"event_id": event["id"], "event": event["event"], "sequence": sequence,
                          "attempt": self.headers.get("Service-Delivery-Attempt"), "duplicate": duplicate,
                          "stale": stale}), flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


# PORT=0 takes any free port; the line on stderr says which.
server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "9000"))), Receiver)
print(f"listening on http://127.0.0.1:{server.server_address[1]}/", file=sys.stderr, flush=True)
server.serve_forever()
