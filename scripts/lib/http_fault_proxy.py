#!/usr/bin/env python3
"""An HTTP reverse proxy on 127.0.0.1 that answers a share of requests with S3 errors.

toxiproxy (TCP level: resets, latency, cuts) cannot make an HTTP 503; this proxy can. It sits
in front of MinIO (or of a toxiproxy in front of MinIO) and, for each request, with probability
--error-rate answers `503 SlowDown` (or --status) after reading the request body, as a
throttling S3 front end would; other requests are forwarded unchanged, headers included, so
SigV4 signatures stay valid. It prints one line per injected fault on stderr and, on exit
(SIGTERM), how many requests it forwarded and failed.

  http_fault_proxy.py --listen 29020 --upstream 29010 --error-rate 0.15
"""
import argparse
import http.client
import http.server
import random
import signal
import socketserver
import sys
import threading

BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
        b'<Message>Please reduce your request rate.</Message></Error>')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--upstream", type=int, required=True)
    ap.add_argument("--error-rate", type=float, default=0.1)
    ap.add_argument("--status", type=int, default=503)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    lock = threading.Lock()
    counts = {"forwarded": 0, "failed": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):  # quiet
            pass

        def handle_any(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            with lock:
                fault = rng.random() < args.error_rate
                counts["failed" if fault else "forwarded"] += 1
            if fault:
                sys.stderr.write(f"fault-proxy: {args.status} for {self.command} {self.path}\n")
                self.send_response(args.status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                self.wfile.write(BODY)
                return
            conn = http.client.HTTPConnection("127.0.0.1", args.upstream, timeout=120)
            headers = {k: v for k, v in self.headers.items()}
            try:
                conn.request(self.command, self.path, body=body if (n or self.command in ("PUT", "POST")) else None,
                             headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as e:
                # The upstream (e.g. toxiproxy) cut the connection: cut ours too.
                sys.stderr.write(f"fault-proxy: upstream failed for {self.command} {self.path}: {e!r}\n")
                self.close_connection = True
                conn.close()
                return
            self.send_response(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            conn.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    srv = Server(("127.0.0.1", args.listen), Handler)

    def stop(*_):
        sys.stderr.write(f"fault-proxy: forwarded {counts['forwarded']}, failed {counts['failed']}\n")
        sys.stderr.flush()
        threading.Thread(target=srv.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    srv.serve_forever()


if __name__ == "__main__":
    main()
