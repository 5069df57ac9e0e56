"""Stores on 127.0.0.1 for the remote-run tests and bench: moto's S3 server and a stand-in for the Hugging Face Hub.

Both count the requests they answer (method and path), so a test can say how many listings and GETs a
command cost and which files were fetched. Each is a context manager: started on a free port, stopped
(and its thread joined) on exit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit


def folder_files(folder: Path, under: str = "") -> dict[str, bytes]:
    """Every file below `folder` by its relative path (prefixed with `under/`), as the store holds it."""
    return {
        f"{under}/{p.relative_to(folder).as_posix()}".lstrip("/"): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


class S3Store:
    """moto's S3 API server on a free port, each request recorded as (method, path, query)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str]] = []
        #: seconds added to every answer (bench/remote.py: a store far away)
        self.delay = 0.0
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> S3Store:
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import WSGIRequestHandler, make_server

        class Quiet(WSGIRequestHandler):
            def log_request(self, *args: object) -> None:
                pass

        app = DomainDispatcherApplication(create_backend_app)

        def counting(environ: dict, start_response: Any) -> Any:
            self.requests.append(
                (environ["REQUEST_METHOD"], unquote(environ.get("PATH_INFO", "")), environ.get("QUERY_STRING", ""))
            )
            if self.delay:
                time.sleep(self.delay)
            return app(environ, start_response)

        self._server = make_server("127.0.0.1", 0, counting, threaded=True, request_handler=Quiet)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self) -> dict[str, str]:
        """What a process needs to reach this store through the AWS chain (fake keys: moto takes any); one
        attempt per call, so a stopped store fails at once instead of after botocore's backoff."""
        return {
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_MAX_ATTEMPTS": "1",
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )

    def put(self, bucket: str, files: dict[str, bytes]) -> None:
        client = self.client()
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(Bucket=bucket)
        for key, body in files.items():
            client.put_object(Bucket=bucket, Key=key, Body=body)

    def clear(self) -> None:
        self.requests.clear()

    def gets(self) -> list[str]:
        """The object paths fetched (GET of a key, not a listing)."""
        return [
            path
            for method, path, query in self.requests
            if method == "GET" and path.count("/") >= 2 and "list-type" not in query
        ]

    def listings(self) -> int:
        return sum(1 for method, _, query in self.requests if method == "GET" and "list-type" in query)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join()
            self._server = None

    def __exit__(self, *exc: object) -> None:
        self.stop()


#: what huggingface_hub asks the Hub for on its own, whatever the call (its registry of AI agent harnesses,
#: at most once a day): answered 404 and not counted as rlsql's requests
LIBRARY_OWN = {"/api/agent-harnesses"}


class HubStore:
    """A stand-in for the Hub's HTTP API: repositories (model or dataset) with commits of files, and the routes
    huggingface_hub calls for them: revision info, the recursive tree listing, paths-info, and resolve (with
    Range). Unknown repositories and revisions answer as the Hub does (404 with X-Error-Code)."""

    def __init__(self) -> None:
        #: (repo type, repo id) -> {"refs": {branch: sha}, "commits": {sha: {path: bytes}}}
        self.repos: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        #: seconds added to every answer (bench/remote.py: a store far away)
        self.delay = 0.0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def commit(self, repo_id: str, files: dict[str, bytes], repo_type: str = "model", branch: str = "main") -> str:
        """Make `files` the new commit of `branch`; returns its sha."""
        repo = self.repos.setdefault((repo_type, repo_id), {"refs": {}, "commits": {}})
        sha = hashlib.sha1(json.dumps([repo_id, len(repo["commits"]), sorted(files)]).encode()).hexdigest()
        repo["commits"][sha] = dict(files)
        repo["refs"][branch] = sha
        return sha

    def __enter__(self) -> HubStore:
        store = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                path = unquote(urlsplit(self.path).path)
                if path not in LIBRARY_OWN:
                    store.requests.append(("GET", path))
                store.answer(self, "GET")

            def do_HEAD(self) -> None:
                store.requests.append(("HEAD", unquote(urlsplit(self.path).path)))
                store.answer(self, "HEAD")

            def do_POST(self) -> None:
                store.requests.append(("POST", unquote(urlsplit(self.path).path)))
                store.answer(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _find(self, kind: str, repo_id: str, revision: str) -> tuple[str, dict[str, bytes]] | str:
        repo = self.repos.get(({"models": "model", "datasets": "dataset", "": "model"}[kind], repo_id))
        if repo is None:
            return "RepoNotFound"
        sha = repo["refs"].get(revision, revision)
        if sha not in repo["commits"]:
            return "RevisionNotFound"
        return sha, repo["commits"][sha]

    def answer(self, h: BaseHTTPRequestHandler, method: str) -> None:
        if self.delay:
            time.sleep(self.delay)
        path = unquote(urlsplit(h.path).path)
        api = re.match(
            r"^/api/(models|datasets)/([^/]+/[^/]+)(?:/(revision|tree|paths-info)/([^/]+)(?:/(.*))?)?$", path
        )
        resolve = re.match(r"^/(?:(datasets)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if api:
            kind, repo_id, route, revision, sub = api.groups()
            route, revision = route or "revision", revision or "main"  # the repository's info: its main branch
        elif resolve:
            kind, repo_id, revision, sub = resolve.groups()
            kind, route = kind or "", "resolve"
        else:
            return self._send(h, 404, b"{}", {"X-Error-Code": "RepoNotFound"})
        found = self._find(kind, repo_id, revision)
        if isinstance(found, str):
            message = json.dumps({"error": f"{found}: {repo_id}@{revision}"}).encode()
            return self._send(h, 404, message, {"X-Error-Code": found, "Content-Type": "application/json"})
        sha, files = found
        if route == "revision":
            body = {
                "id": repo_id,
                "sha": sha,
                "lastModified": "2026-06-02T17:42:31.000Z",
                "siblings": [{"rfilename": p} for p in sorted(files)],
            }
            return self._json(h, body)
        if route == "tree":
            prefix = f"{sub}/" if sub else ""
            entries = [
                {"type": "file", "path": p, "size": len(b), "oid": hashlib.sha1(b).hexdigest()}
                for p, b in sorted(files.items())
                if p.startswith(prefix)
            ]
            return self._json(h, entries)
        if route == "paths-info":
            length = int(h.headers.get("Content-Length") or 0)
            wanted = re.findall(r"paths=([^&]+)", h.rfile.read(length).decode()) if length else []
            entries = [
                {
                    "type": "file",
                    "path": unquote(p),
                    "size": len(files[unquote(p)]),
                    "oid": hashlib.sha1(files[unquote(p)]).hexdigest(),
                }
                for p in wanted
                if unquote(p) in files
            ]
            return self._json(h, entries)
        if sub not in files:
            return self._send(h, 404, b"{}", {"X-Error-Code": "EntryNotFound"})
        body = files[sub]
        headers = {"X-Repo-Commit": sha, "ETag": f'"{hashlib.sha1(body).hexdigest()}"', "Accept-Ranges": "bytes"}
        ranged = re.match(r"^bytes=(\d+)-(\d*)$", h.headers.get("Range") or "")
        if ranged:
            start = int(ranged[1])
            end = int(ranged[2]) if ranged[2] else len(body) - 1
            headers["Content-Range"] = f"bytes {start}-{end}/{len(body)}"
            return self._send(h, 206, body[start : end + 1], headers, head=method == "HEAD")
        return self._send(h, 200, body, headers, head=method == "HEAD")

    def _json(self, h: BaseHTTPRequestHandler, body: Any) -> None:
        self._send(h, 200, json.dumps(body).encode(), {"Content-Type": "application/json"})

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str], head: bool = False) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def resolves(self) -> list[str]:
        """The file paths fetched (resolve GETs)."""
        resolved = [p.split("/resolve/", 1)[1] for m, p in self.requests if m == "GET" and "/resolve/" in p]
        return [p.split("/", 1)[1] for p in resolved]

    def clear(self) -> None:
        self.requests.clear()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join()
            self._server = None

    def __exit__(self, *exc: object) -> None:
        self.stop()
