"""The ``EnvService`` servicer: thin rpc methods over the catalog, the session store and the runner.

Every env call runs on the runner with the per-call deadline. Failures become status codes with a
readable message (see ``env.proto``); an exception raised by an env fails that call only, as INTERNAL
naming the exception, and is logged with its traceback. A call that runs past the deadline is
DEADLINE_EXCEEDED and its session is closed, since its env may be in any state; a call still waiting
when the server stops is UNAVAILABLE.

``OpenSession`` checks the client's keyword arguments before anything is built: their size
(``max_kwargs_bytes``), their nesting, and what the env lets clients set (``Catalog.client_kwargs``).
Each session remembers the connection (peer) of its latest call, so that the server can close the
sessions of a client that disconnected.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import NoReturn, TypeVar

import grpc

from mrlm.envs.server.catalog import Catalog
from mrlm.envs.server.drivers import Driver
from mrlm.envs.server.errors import RequestError
from mrlm.envs.server.payload import decode_client_object
from mrlm.envs.server.runner import Abandoned, CallTimedOut, Runner, Stopped
from mrlm.envs.server.sessions import Session, SessionStore
from mrlm.proto.v1 import env_pb2 as pb
from mrlm.proto.v1 import env_pb2_grpc

__all__ = ["EnvServicer"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")


class EnvServicer(env_pb2_grpc.EnvServiceServicer):
    """Serves the hosted envs as sessions. Method names are the rpc names, as gRPC requires.

    Args:
        catalog: the hosted envs.
        store: the open sessions.
        runner: where env calls run.
        call_timeout_s: deadline of one env call (opening, reset, step, render, close); None for none.
        max_kwargs_bytes: largest ``kwargs_json`` of one OpenSession, in UTF-8 bytes; None for no cap.
    """

    def __init__(
        self,
        catalog: Catalog,
        store: SessionStore,
        runner: Runner,
        call_timeout_s: float | None,
        max_kwargs_bytes: int | None = None,
    ) -> None:
        self.catalog = catalog
        self.store = store
        self.runner = runner
        self.call_timeout_s = call_timeout_s
        self.max_kwargs_bytes = max_kwargs_bytes
        self._listing: pb.ListEnvsResponse | None = None
        self._listing_lock = threading.Lock()

    # Unary rpcs -----------------------------------------------------------------------------------

    def ListEnvs(self, request: pb.ListEnvsRequest, context: grpc.ServicerContext) -> pb.ListEnvsResponse:  # noqa: N802
        with self._listing_lock:  # built once: every hosted env is instantiated with default kwargs
            if self._listing is None:
                self._listing = pb.ListEnvsResponse(
                    envs=[
                        self.catalog.env_info(env_id, self._default_spec(env_id))
                        for env_id in self.catalog.ids
                    ]
                )
            return self._listing

    def OpenSession(  # noqa: N802
        self, request: pb.OpenSessionRequest, context: grpc.ServicerContext
    ) -> pb.OpenSessionResponse:
        try:
            kind = self.catalog.resolve_kind(request.env_id, request.kind)
            size = self._kwargs_size(request.kwargs_json)
            sent = decode_client_object(request.kwargs_json, "kwargs_json")
            kwargs = self.catalog.client_kwargs(request.env_id, kind, sent)
            with self.store.slot(size):
                driver = self._run(
                    lambda: self.catalog.build(request.env_id, kind, kwargs), on_abandon=_close
                )
                try:
                    spec = self._run(lambda: driver.spec(request.env_id))
                except RequestError:
                    self.runner.submit([driver.close])  # no session will ever close it
                    raise
                session = self.store.new_session(
                    request.env_id, driver, peer=context.peer(), kwargs_bytes=size
                )
                self.store.add(session)
        except RequestError as error:
            _abort(context, error)
        _log.info("session %s opened: %s as %s", session.id, request.env_id, kind)
        return pb.OpenSessionResponse(session_id=session.id, spec=spec)

    def Reset(self, request: pb.ResetRequest, context: grpc.ServicerContext) -> pb.ResetResponse:  # noqa: N802
        try:
            state = self._in_session(request.session_id, _reset_call(request), context)
        except RequestError as error:
            _abort(context, error)
        return pb.ResetResponse(state=state)

    def Step(self, request: pb.StepRequest, context: grpc.ServicerContext) -> pb.StepResponse:  # noqa: N802
        try:
            state = self._in_session(request.session_id, lambda driver: driver.step(request), context)
        except RequestError as error:
            _abort(context, error)
        return pb.StepResponse(state=state)

    def Render(self, request: pb.RenderRequest, context: grpc.ServicerContext) -> pb.RenderResponse:  # noqa: N802
        try:
            text = self._in_session(request.session_id, lambda driver: driver.render(), context)
        except RequestError as error:
            _abort(context, error)
        return pb.RenderResponse(text=text)

    def CloseSession(  # noqa: N802
        self, request: pb.CloseSessionRequest, context: grpc.ServicerContext
    ) -> pb.CloseSessionResponse:
        try:
            session = self.store.take(request.session_id)
            if self.close_sessions([session]):
                raise RequestError(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    f"closing the env took longer than {self.call_timeout_s} s; the session is closed",
                )
        except RequestError as error:
            _abort(context, error)
        return pb.CloseSessionResponse()

    # Batched rpcs ---------------------------------------------------------------------------------

    def Batch(self, request: pb.BatchRequest, context: grpc.ServicerContext) -> pb.BatchResponse:  # noqa: N802
        return pb.BatchResponse(results=self._batch(request.items, context.peer()))

    def StepStream(  # noqa: N802
        self, request_iterator: Iterable[pb.BatchRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.BatchResponse]:
        peer = context.peer()
        for request in request_iterator:
            yield pb.BatchResponse(results=self._batch(request.items, peer))

    def _batch(self, items: Iterable[pb.BatchItem], peer: str) -> list[pb.BatchResult]:
        """One result per item; each session's items run in order on one worker, sessions in parallel."""
        items = list(items)
        results: list[pb.BatchResult | None] = [None] * len(items)
        by_session: dict[str, list[int]] = {}
        for index, item in enumerate(items):
            which = item.WhichOneof("request")
            if which is None:
                results[index] = _error_result(
                    RequestError(grpc.StatusCode.INVALID_ARGUMENT, "a batch item needs a reset or a step")
                )
                continue
            by_session.setdefault(getattr(item, which).session_id, []).append(index)
        waiting = []
        for session_id, indices in by_session.items():
            try:
                session = self.store.get(session_id)
            except RequestError as error:
                for index in indices:
                    results[index] = _error_result(error)
                continue
            session.peer = peer
            calls = [_item_call(session, items[index]) for index in indices]
            waiting.append((session, indices, self.runner.submit(calls)))
        for session, indices, chain in waiting:
            outcomes, timed_out = chain.wait(self.call_timeout_s)
            if timed_out:
                self._timed_out(session)
            for index, outcome in zip(indices, outcomes, strict=True):
                results[index] = (
                    pb.BatchResult(state=outcome)
                    if isinstance(outcome, pb.EnvState)
                    else _error_result(self._request_error(outcome, session))
                )
        return [result for result in results if result is not None]

    # Closing ----------------------------------------------------------------------------------------

    def close_sessions(self, sessions: Iterable[Session], until: float | None = None) -> int:
        """Close sessions taken out of the store, in parallel, each with the deadline (and all by
        ``until``, a ``time.monotonic()`` instant, when given).

        Returns how many closes ran past it (their envs close whenever the stuck call returns).
        """
        chains = [(session, self.runner.submit([session.retire])) for session in sessions]
        late = 0
        for session, chain in chains:
            if chain.wait(self.call_timeout_s, until)[1]:
                late += 1
                self.runner.replace_stuck_worker()
                _log.warning("closing session %s (%s) ran past the deadline", session.id, session.env_id)
        return late

    # Helpers --------------------------------------------------------------------------------------

    def _in_session(self, session_id: str, fn: Callable[[Driver], _T], context: grpc.ServicerContext) -> _T:
        """Run ``fn`` on the session's driver with the deadline; a timed-out session is closed."""
        session = self.store.get(session_id)
        session.peer = context.peer()
        outcomes, timed_out = self.runner.run(self.call_timeout_s, [lambda: session.call(fn)])
        if timed_out:
            self._timed_out(session)
        outcome = outcomes[0]
        if isinstance(outcome, BaseException):
            raise self._request_error(outcome, session)
        return outcome

    def _run(self, fn: Callable[[], _T], on_abandon: Callable[[_T], None] | None = None) -> _T:
        """Run ``fn`` (outside any session) with the deadline."""
        outcomes, _ = self.runner.run(self.call_timeout_s, [fn], on_abandon)
        outcome = outcomes[0]
        if isinstance(outcome, BaseException):
            raise self._request_error(outcome, None)
        return outcome

    def _timed_out(self, session: Session) -> None:
        _log.warning(
            "session %s (%s): an env call ran past %s s; closing the session",
            session.id,
            session.env_id,
            self.call_timeout_s,
        )
        self.store.discard(session)
        session.retire()  # returns at once: the env closes when the stuck call returns

    def _request_error(self, outcome: BaseException, session: Session | None) -> RequestError:
        """The status to answer for a failed call."""
        where = f" ({session.env_id}, session {session.id})" if session is not None else ""
        if isinstance(outcome, RequestError):
            return outcome
        if isinstance(outcome, CallTimedOut):
            closed = "; the session is closed" if session is not None else ""
            return RequestError(grpc.StatusCode.DEADLINE_EXCEEDED, f"{outcome}{where}{closed}")
        if isinstance(outcome, Stopped):
            return RequestError(grpc.StatusCode.UNAVAILABLE, f"{outcome}{where}; call again once it is back")
        if isinstance(outcome, Abandoned):
            return RequestError(
                grpc.StatusCode.NOT_FOUND,
                f"not run: an earlier call of the session ran past its deadline{where}",
            )
        _log.warning("an env raised%s", where, exc_info=outcome)
        return RequestError(
            grpc.StatusCode.INTERNAL, f"the env raised {type(outcome).__name__}: {outcome}{where}"
        )

    def _kwargs_size(self, text: str) -> int:
        """The UTF-8 size of ``kwargs_json``; INVALID_ARGUMENT past ``max_kwargs_bytes``."""
        limit = self.max_kwargs_bytes
        # A character takes at least one byte: a text longer than the limit is refused uncounted.
        size = len(text) if limit is not None and len(text) > limit else len(text.encode("utf-8"))
        if limit is not None and size > limit:
            raise RequestError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"kwargs_json: the keyword arguments take {size} bytes or more, over the server's limit of "
                f"{limit} (--max-kwargs-bytes); send fewer inline records, or have the operator allow a "
                "records directory (--allow-records-dir) and send a path",
            )
        return size

    def _default_spec(self, env_id: str) -> pb.EnvSpec | None:
        """The spec of ``env_id`` built with default kwargs; None if it cannot be built."""

        def build() -> pb.EnvSpec:
            driver = self.catalog.build(
                env_id, self.catalog.resolve_kind(env_id, pb.ENV_KIND_UNSPECIFIED), {}
            )
            try:
                return driver.spec(env_id)
            finally:
                driver.close()

        try:
            return self._run(build)
        except RequestError as error:
            _log.info("no default spec for %s: %s", env_id, error.message)
            return None


def _reset_call(request: pb.ResetRequest) -> Callable[[Driver], pb.EnvState]:
    seed = request.seed if request.HasField("seed") else None
    options = decode_client_object(request.options_json, "options_json")
    if seed is not None and seed < 0:  # the wire's int64 allows it; no env takes it
        refusal = RequestError(grpc.StatusCode.INVALID_ARGUMENT, f"the seed must be >= 0, got {seed}")

        def refuse(driver: Driver) -> pb.EnvState:
            raise refusal

        return refuse
    if not options:
        return lambda driver: driver.reset(seed, options)

    def reset(driver: Driver) -> pb.EnvState:
        # An env refuses reset options it does not take (an unknown key, a task index out of range)
        # with ValueError, as a local caller sees it; the client should hear a refused argument
        # (RemoteArgumentError, also a ValueError), not a failure of the env.
        try:
            return driver.reset(seed, options)
        except ValueError as error:
            raise RequestError(
                grpc.StatusCode.INVALID_ARGUMENT, f"the env refused the reset options: {error}"
            ) from None

    return reset


def _item_call(session: Session, item: pb.BatchItem) -> Callable[[], pb.EnvState]:
    """The call of one batch item, run on a worker (so its errors become that item's outcome)."""
    if item.HasField("reset"):
        reset = item.reset

        def run_reset() -> pb.EnvState:
            return session.call(_reset_call(reset))

        return run_reset
    step = item.step
    return lambda: session.call(lambda driver: driver.step(step))


def _error_result(error: RequestError) -> pb.BatchResult:
    return pb.BatchResult(error=pb.Error(code=error.code.value[0], message=error.message))


def _abort(context: grpc.ServicerContext, error: RequestError) -> NoReturn:
    context.abort(error.code, error.message)
    raise AssertionError("context.abort returns only by raising")


def _close(driver: Driver) -> None:
    """Close an env whose building finished after its OpenSession gave up waiting."""
    driver.close()
