#!/usr/bin/python3
"""Interoperability test: the WebSocket API (docs/websocket-api.md) from an independent client.

Drives a real `fencelock serve` with Debian's python3-websockets (10.4) and asyncio, nothing of
ours on the client side, to show that the protocol is usable from another language:

  hello -> acquire (granted) -> a waiter granted on release, without polling -> a prefix
  subscription: snapshot, then acquired/renewed/released/expired events in order -> lease_lost
  "expired" for a lease nobody renews -> error frames for bad input, the socket still usable ->
  a session-bound lease released when its socket closes.

    /usr/bin/python3 tests/integration/python/ws_interop.py <path/to/fencelock>

Exits 0 when every step passed; non-zero after printing what each socket sent and received and
the server's last output. Prints "SKIPPED: ..." and exits 0 when python3-websockets is missing
(CTest reports that as skipped). Uses /usr/bin/python3: Debian installs python3-websockets for the
system interpreter only. No step asserts speed; every wait has a generous timeout.
"""

import asyncio
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

try:
    import websockets
except ImportError:
    print("SKIPPED: python3-websockets is not installed")
    sys.exit(0)

# Generous: the machine is shared and CI may be slow. Nothing here measures speed.
STEP_TIMEOUT_S = 10.0
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class Failure(Exception):
    """A step whose answer was not the expected one."""


def check(condition, message):
    if not condition:
        raise Failure(message)


# --- the server -----------------------------------------------------------------------------------


def _die_with_parent():
    """Runs in the forked child before exec: SIGKILL it when this test process dies, even by
    SIGKILL (a CTest timeout), so that no server outlives the test."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # the try/finally in main() still stops the server


class Server:
    """`fencelock serve --port 0 --data-dir <dir>` as a child; its output read by two threads."""

    def __init__(self, binary, data_dir):
        self.binary = binary
        self.data_dir = data_dir
        self.proc = None
        self.port = None
        self.stdout_lines = []
        self.stderr_lines = []
        self._lock = threading.Lock()
        self._listening = threading.Event()
        self._readers = []

    def start(self):
        args = [self.binary, "serve", "--port", "0", "--data-dir", self.data_dir]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     preexec_fn=_die_with_parent)
        for stream, lines, is_stdout in ((self.proc.stdout, self.stdout_lines, True),
                                         (self.proc.stderr, self.stderr_lines, False)):
            reader = threading.Thread(target=self._read, args=(stream, lines, is_stdout),
                                      daemon=True)
            reader.start()
            self._readers.append(reader)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._listening.wait(0.05):
            if self.proc.poll() is not None:
                raise Failure(f"the server exited with {self.proc.returncode} before listening")
            if time.monotonic() > deadline:
                raise Failure(f"no \"listening\" line within {START_TIMEOUT_S:.0f} s")

    def _read(self, stream, lines, is_stdout):
        # Reads to EOF, so that the server never blocks on a full pipe.
        for raw in stream:
            line = raw.rstrip("\n")
            with self._lock:
                lines.append(line)
            if is_stdout and self.port is None:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and event.get("event") == "listening":
                    self.port = int(event["port"])
                    self._listening.set()

    def stop(self):
        """Stops the server (SIGTERM, then SIGKILL) and reaps it; safe to call at any point."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                print(f"note: the server ignored SIGTERM for {STOP_TIMEOUT_S:.0f} s; killing it")
                self.proc.kill()
                self.proc.wait()
        for reader in self._readers:
            reader.join(STOP_TIMEOUT_S)

    def tail(self, n=30):
        with self._lock:
            return self.stdout_lines[-n:], self.stderr_lines[-n:]


# --- one client socket ----------------------------------------------------------------------------


class Peer:
    """One WebSocket, with every frame it sent and received (for the failure report). Frames that
    arrive while a step waits for another one are kept, in order, for the steps after it."""

    all_peers = []

    def __init__(self, name, ws):
        self.name = name
        self.ws = ws
        self.log = []  # (seconds since start, ">" sent or "<" received, text)
        self.unread = []
        self.sent_count = 0
        Peer.all_peers.append(self)

    @classmethod
    async def connect(cls, name, port):
        ws = await websockets.connect(f"ws://127.0.0.1:{port}/v1/ws", open_timeout=STEP_TIMEOUT_S,
                                      close_timeout=STEP_TIMEOUT_S, ping_interval=None)
        peer = cls(name, ws)
        hello = await peer.expect("hello", lambda f: True)
        check(hello.get("type") == "hello", f"{name}: the first frame is not a hello")
        check(isinstance(hello.get("session"), str) and hello["session"] != "",
              f"{name}: hello has no session")
        check(hello.get("server") == "fencelock", f"{name}: hello.server is not \"fencelock\"")
        check(isinstance(hello.get("version"), str), f"{name}: hello has no version")
        limits = hello.get("limits")
        check(isinstance(limits, dict)
              and all(isinstance(limits.get(k), int) and limits[k] > 0
                      for k in ("maxFrame", "maxSubscriptions", "maxPending")),
              f"{name}: hello.limits lacks maxFrame, maxSubscriptions or maxPending")
        return peer

    def _record(self, direction, text):
        self.log.append((time.monotonic() - START, direction, text))

    async def send(self, frame):
        text = frame if isinstance(frame, str) else json.dumps(frame)
        self._record(">", text)
        self.sent_count += 1
        await self.ws.send(text)

    async def _next(self, timeout):
        text = await asyncio.wait_for(self.ws.recv(), timeout)  # cancelling recv() loses nothing
        if isinstance(text, bytes):
            self._record("<", f"<binary frame of {len(text)} bytes>")
            raise Failure(f"{self.name}: the server sent a binary frame")
        self._record("<", text)
        try:
            frame = json.loads(text)
        except ValueError:
            raise Failure(f"{self.name}: the server sent a frame that is not JSON") from None
        check(isinstance(frame, dict), f"{self.name}: the server sent a frame that is not an "
                                       "object")
        return frame

    async def expect(self, what, matches, timeout=STEP_TIMEOUT_S):
        """Returns the first frame (kept or new) for which `matches` is true."""
        for i, frame in enumerate(self.unread):
            if matches(frame):
                return self.unread.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure(f"{self.name}: no {what} within {timeout:.0f} s")
            try:
                frame = await self._next(left)
            except asyncio.TimeoutError:
                raise Failure(f"{self.name}: no {what} within {timeout:.0f} s") from None
            except websockets.ConnectionClosed as e:
                raise Failure(f"{self.name}: the socket closed ({e}) while waiting for "
                              f"{what}") from None
            if matches(frame):
                return frame
            self.unread.append(frame)

    async def expect_answer(self, request_id, timeout=STEP_TIMEOUT_S):
        """Returns the reply, granted or error frame that carries `request_id`."""
        return await self.expect(
            f"answer to id {request_id!r}",
            lambda f: f.get("type") in ("reply", "granted", "error") and "id" in f
            and f["id"] == request_id and type(f["id"]) is type(request_id),
            timeout)

    async def call(self, request, timeout=STEP_TIMEOUT_S):
        await self.send(request)
        return await self.expect_answer(request["id"], timeout)

    async def expect_quiet(self, seconds, matches, what):
        """Fails if a frame for which `matches` is true arrives within `seconds`."""
        for frame in self.unread:
            check(not matches(frame), f"{self.name}: unexpected {what}: {frame}")
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                frame = await self._next(left)
            except asyncio.TimeoutError:
                return
            check(not matches(frame), f"{self.name}: unexpected {what}: {frame}")
            self.unread.append(frame)

    async def close(self):
        await self.ws.close()

    def dump(self):
        print(f"--- {self.name}: frames sent (>) and received (<), seconds since start")
        for at, direction, text in self.log:
            print(f"{at:8.3f} {direction} {text}")
        if self.unread:
            print(f"    ({len(self.unread)} received frames no step consumed)")


START = time.monotonic()


def ok(step):
    print(f"ok   {time.monotonic() - START:7.3f}s  {step}")


def expect_granted(frame, request_id, lock, owner):
    check(frame.get("type") == "granted", f"expected granted for {request_id!r}, got {frame}")
    lease = frame.get("result")
    check(isinstance(lease, dict), f"granted has no result object: {frame}")
    check(lease.get("name") == lock and lease.get("owner") == owner,
          f"granted for {request_id!r} names the wrong lock or owner: {frame}")
    token = lease.get("token")
    check(isinstance(token, int) and token >= 1, f"granted has no positive token: {frame}")
    check(isinstance(lease.get("expiresAt"), int) and isinstance(lease.get("ttlMs"), int),
          f"granted lease lacks ttlMs or expiresAt: {frame}")
    return token


def expect_reply(frame, op):
    check(frame.get("type") == "reply" and frame.get("op") == op,
          f"expected a {op} reply, got {frame}")
    return frame.get("result")


async def wait_for_waiters(peer, lock, count):
    """Asks `status` until `lock` has `count` waiters, so that the next step starts from a queued
    waiter rather than racing with its acquire. (This is the test's check, not the waiter's: the
    waiter itself sends nothing after its acquire.)"""
    deadline = time.monotonic() + STEP_TIMEOUT_S
    n = 0
    while True:
        n += 1
        status = expect_reply(await peer.call({"id": f"status-{lock}-{n}", "op": "status",
                                               "lock": lock}), "status")
        if status.get("waiters") == count:
            return status
        check(time.monotonic() < deadline,
              f"{lock} never had {count} waiter(s); last status {status}")
        await asyncio.sleep(0.05)


def next_event_for(lock):
    return lambda f: f.get("type") == "lock_event" and f.get("lock") == lock


async def expect_events(sub, subscription, lock, expected):
    """Checks the next lock_event frames of `lock` on `sub`, in order. `expected` holds
    (event, owner, token, extra-fields) tuples; a token of None is not checked."""
    for event, owner, token, extra in expected:
        frame = await sub.expect(f"lock_event {event} of {lock}", next_event_for(lock))
        check(frame.get("subscription") == subscription,
              f"lock_event for another subscription: {frame}")
        check(frame.get("event") == event and frame.get("owner") == owner,
              f"expected event {event} by {owner} on {lock}, got {frame}")
        check(token is None or frame.get("token") == token,
              f"expected event {event} with token {token}, got {frame}")
        for key, value in extra.items():
            check(frame.get(key) == value, f"expected {key}={value!r} in {frame}")
        check(isinstance(frame.get("at"), int), f"lock_event has no at: {frame}")
        if event in ("acquired", "renewed"):
            check(isinstance(frame.get("expiresAt"), int),
                  f"{event} event has no expiresAt: {frame}")
        else:
            check("expiresAt" not in frame, f"{event} event carries expiresAt: {frame}")


# --- the scenario ---------------------------------------------------------------------------------


async def scenario(port):
    a = await Peer.connect("A (holder)", port)
    b = await Peer.connect("B (waiter)", port)
    s = await Peer.connect("S (subscriber)", port)
    ok("hello on three sockets")

    # A lock held before the subscription starts must be in its snapshot.
    held = "interop:held"
    held_token = expect_granted(await a.call({"id": "h1", "op": "acquire", "lock": held,
                                              "owner": "a", "ttlMs": 120000}), "h1", held, "a")
    ok(f"acquire {held}: granted, token {held_token}")

    reply = await s.call({"id": "sub-1", "op": "subscribe", "prefix": "interop:"})
    result = expect_reply(reply, "subscribe")
    subscription = result.get("subscription")
    check(isinstance(subscription, int) and subscription >= 1, f"no subscription id: {reply}")
    snapshot = result.get("locks")
    check(isinstance(snapshot, list), f"subscribe result has no locks list: {reply}")
    by_name = {st.get("name"): st for st in snapshot}
    check(held in by_name and by_name[held].get("held") is True
          and by_name[held].get("token") == held_token and by_name[held].get("owner") == "a",
          f"snapshot does not show {held} held by a with token {held_token}: {reply}")
    ok(f"subscribe prefix interop:: snapshot shows {held}")

    # Acquire, a waiter on another socket, renew, release: the waiter is granted on release.
    lock = "interop:main"
    reply = await a.call({"id": 1, "op": "acquire", "lock": lock, "owner": "a", "ttlMs": 60000})
    first = expect_granted(reply, 1, lock, "a")
    ok(f"acquire {lock} (integer id 1): granted, token {first}")

    await b.send({"id": "b1", "op": "acquire", "lock": lock, "owner": "b", "ttlMs": 60000,
                  "waitMs": 30000})
    await wait_for_waiters(a, lock, 1)
    await b.expect_quiet(0.3, lambda f: f.get("id") == "b1", "answer while the lock is held")
    ok(f"B waits on {lock} (queued, no answer yet)")

    renewed = expect_reply(await a.call({"id": 2, "op": "renew", "lock": lock, "owner": "a",
                                         "token": first, "ttlMs": 60000}), "renew")
    check(isinstance(renewed, dict) and renewed.get("token") == first,
          f"renew changed the token or has no lease: {renewed}")
    ok("renew: same token")

    released = expect_reply(await a.call({"id": 3, "op": "release", "lock": lock, "owner": "a",
                                          "token": first}), "release")
    check(released == {"released": True}, f"release result is {released}")
    grant = await b.expect_answer("b1")
    second = expect_granted(grant, "b1", lock, "b")
    check(second > first, f"the waiter's token {second} is not larger than {first}")
    check(b.sent_count == 1, f"B sent {b.sent_count} frames; a waiter needs one")
    ok(f"release: B granted without polling, token {second} > {first}")

    await expect_events(s, subscription, lock, [
        ("acquired", "a", first, {"revision": 0}),
        ("renewed", "a", first, {"revision": 1}),
        ("released", "a", first, {"cause": "released"}),
        ("acquired", "b", second, {"revision": 0}),
    ])
    ok("subscriber: acquired, renewed, released, acquired, in order")

    # A lease nobody renews: its holder hears lease_lost "expired".
    short = "interop:short"
    reply = await a.call({"id": "t1", "op": "acquire", "lock": short, "owner": "a",
                          "ttlMs": 300})
    short_token = expect_granted(reply, "t1", short, "a")
    lost = await a.expect(f"lease_lost for {short}",
                          lambda f: f.get("type") == "lease_lost" and f.get("lock") == short)
    check(lost.get("token") == short_token and lost.get("owner") == "a"
          and lost.get("cause") == "expired",
          f"expected lease_lost of token {short_token} by a, cause expired: {lost}")
    await expect_events(s, subscription, short, [
        ("acquired", "a", short_token, {"revision": 0}),
        ("expired", "a", short_token, {"cause": "expired"}),
    ])
    ok(f"ttlMs 300, no renewal: lease_lost cause expired; subscriber saw expired")

    # Bad input gets an error frame, and the socket goes on working.
    err = await a.call({"id": "bad-1", "op": "acquire", "lock": "interop:x", "owner": "a"})
    check(err.get("type") == "error" and err.get("error") == "invalid_request"
          and "ttlMs" in str(err.get("message")),
          f"missing ttlMs: expected invalid_request naming ttlMs, got {err}")
    err = await a.call({"id": 42, "op": "frobnicate"})
    check(err.get("type") == "error" and err.get("error") == "invalid_request",
          f"unknown op: expected invalid_request with id 42, got {err}")
    err = await a.call({"id": "bad-3", "op": "acquire", "lock": "no spaces", "owner": "a",
                        "ttlMs": 1000})
    check(err.get("type") == "error" and err.get("error") == "invalid_request"
          and str(err.get("message", "")).startswith("lock"),
          f"bad lock name: expected invalid_request naming lock, got {err}")
    await a.send("this is not JSON")
    err = await a.expect("error frame for a text that is not JSON",
                         lambda f: f.get("type") == "error" and "id" not in f)
    check(err.get("error") == "invalid_request", f"not JSON: expected invalid_request: {err}")
    status = expect_reply(await a.call({"id": "after-bad", "op": "status", "lock": lock}),
                          "status")
    check(status.get("name") == lock and status.get("held") is True
          and status.get("owner") == "b" and status.get("token") == second,
          f"status after bad frames: expected {lock} held by b, got {status}")
    ok("invalid frames: error frames with the same id (none for non-JSON); socket still usable")

    # A session-bound lease goes when its socket closes; the next waiter gets the lock.
    bound = "interop:session"
    c = await Peer.connect("C (session-bound holder)", port)
    reply = await c.call({"id": "c1", "op": "acquire", "lock": bound, "owner": "c",
                          "ttlMs": 120000, "session": True})
    bound_token = expect_granted(reply, "c1", bound, "c")
    await b.send({"id": "b2", "op": "acquire", "lock": bound, "owner": "b", "ttlMs": 60000,
                  "waitMs": 30000})
    await wait_for_waiters(a, bound, 1)
    await b.expect_quiet(0.3, lambda f: f.get("id") == "b2", "answer while C holds the lock")
    await c.close()
    grant = await b.expect_answer("b2")
    next_token = expect_granted(grant, "b2", bound, "b")
    check(next_token > bound_token, f"token {next_token} is not larger than {bound_token}")
    await expect_events(s, subscription, bound, [
        ("acquired", "c", bound_token, {"revision": 0}),
        ("released", "c", bound_token, {"cause": "session_closed"}),
        ("acquired", "b", next_token, {"revision": 0}),
    ])
    ok(f"session-bound lease released when its socket closed; waiter granted {next_token}")

    # Clean up what this socket holds, and end the subscription.
    for request_id, name, token in (("r1", lock, second), ("r2", bound, next_token)):
        released = expect_reply(await b.call({"id": request_id, "op": "release", "lock": name,
                                              "owner": "b", "token": token}), "release")
        check(released == {"released": True}, f"release of {name}: {released}")
    result = expect_reply(await s.call({"id": "unsub-1", "op": "unsubscribe",
                                        "subscription": subscription}), "unsubscribe")
    check(result == {"unsubscribed": True}, f"unsubscribe result is {result}")
    ok("release and unsubscribe")

    for peer in (a, b, s):
        await peer.close()


def main():
    if len(sys.argv) != 2:
        print("usage: ws_interop.py <path/to/fencelock>", file=sys.stderr)
        return 2
    binary = sys.argv[1]
    if not os.access(binary, os.X_OK):
        print(f"FAILED: {binary} is not an executable (build the fencelock target first)")
        return 1
    print(f"websockets {websockets.__version__}, Python {sys.version.split()[0]}, {binary}")
    with tempfile.TemporaryDirectory(prefix="fencelock-ws-interop-") as data_dir:
        server = Server(binary, data_dir)
        try:
            server.start()
            print(f"server listening on 127.0.0.1:{server.port}")
            asyncio.run(asyncio.wait_for(scenario(server.port), 90))
        except Exception as e:  # every failure gets the same report, then a non-zero exit
            if isinstance(e, asyncio.TimeoutError):
                print("FAILED: the scenario ran out of its 90 s")
            elif isinstance(e, Failure):
                print(f"FAILED: {e}")
            else:
                print(f"FAILED: {type(e).__name__}: {e}")
                traceback.print_exc(file=sys.stdout)
            for peer in Peer.all_peers:
                peer.dump()
            out, err = server.tail()
            print("--- server stdout (last lines)")
            print("\n".join(out))
            print("--- server stderr (last lines)")
            print("\n".join(err))
            return 1
        finally:
            server.stop()
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
