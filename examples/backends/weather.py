#!/usr/bin/env python3
"""A web service behind Bondry (docs/backends.md), Python standard library only.

Serves the capabilities of examples/http-backend.toml: a forecast tool, a tool that asks
the caller which city, a prompt and a resource. With BONDRY_SIGNING_KEY set (the key
Bondry signs with), every request's Bondry-Signature is checked first.

    python3 examples/backends/weather.py --port 8470
"""

import argparse
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SKEW = 300
KEY = os.environb.get(b"BONDRY_SIGNING_KEY")
FORECASTS = {"lyon": "sunny", "oslo": "snow", "lima": "fog"}
seen = {}  # request_id -> when it was seen, shared by the server's threads
seen_lock = threading.Lock()


def signed(signature, body):
    """Whether Bondry signed `body`, lately, and this request was never seen."""
    try:
        fields = dict(part.split("=", 1) for part in signature.split(","))
        t = int(fields["t"])
        request_id = json.loads(body)["request_id"]
    except (KeyError, ValueError, TypeError):
        return False
    given = fields.get("v1", "")
    if not isinstance(request_id, str) or abs(time.time() - t) > SKEW or not given.isascii():
        return False
    expected = hmac.new(KEY, f"{t}.{request_id}.".encode() + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, given):
        return False
    with seen_lock:
        for old in [old for old, at in seen.items() if time.time() - at > 2 * SKEW]:
            del seen[old]
        if request_id in seen:
            return False
        seen[request_id] = time.time()
    return True


def forecast(request):
    city = request["arguments"]["city"]
    weather = FORECASTS.get(city.lower())
    if weather is None:
        text = f"No forecast for {city}; try Lyon, Oslo or Lima"
        return {"error": {"code": "unknown_city", "retryable": False, "content": [{"type": "text", "text": text}]}}
    return {"content": [{"type": "text", "text": f"{weather} in {city}"}], "structured": {"city": city, "forecast": weather}}


def plan(request):
    """Asks the caller which city first; the state remembers that it asked."""
    answer = request.get("input_responses", {}).get("city")
    if answer is None:
        schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Which city?", "requestedSchema": schema}}
        return {"input_required": {"requests": {"city": ask}, "state": {"asked": "city"}}}
    if answer.get("action") != "accept":
        return {"error": {"code": "declined", "retryable": False}}
    return forecast({"arguments": {"city": answer["content"]["city"]}})


def greeting(request):
    name = request["arguments"].get("name", "there")
    return {"description": "A weather greeting", "messages": [{"role": "user", "content": {"type": "text", "text": f"Greet {name} and say what the weather is like"}}]}


def stations(request):
    return {"contents": [{"uri": request["uri"], "mimeType": "text/plain", "text": ", ".join(sorted(FORECASTS))}]}


ROUTES = {"/forecast": forecast, "/plan": plan, "/greeting": greeting, "/stations": stations}


class Service(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if KEY is not None and not signed(self.headers.get("Bondry-Signature", ""), body):
            return self.answer(401, {"error": "bad signature"})
        route = ROUTES.get(self.path)
        if route is None:
            return self.answer(404, {"error": "no such capability"})
        return self.answer(200, route(json.loads(body)))

    def answer(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8470, help="0 picks a free one")
    server = ThreadingHTTPServer(("127.0.0.1", parser.parse_args().port), Service)
    print(f"serving on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
