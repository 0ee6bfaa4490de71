"""Session: an immutable context, a backend, tools, and the verbs that talk to the model."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self, overload

from pydantic import BaseModel
from typing_extensions import TypeVar

from parlay.backends.base import Backend
from parlay.branches import Branch, BranchTree
from parlay.components import Instruction
from parlay.context import Context, SystemMessage, UserMessage
from parlay.errors import InvalidRequestError
from parlay.image import Image
from parlay.observers import TurnObserver
from parlay.replay_branch import replay_session
from parlay.request import GenerationOptions, ToolChoice
from parlay.requirements import Requirement, Strategy, as_requirements
from parlay.requirements.sampling import SampledThunk
from parlay.requirements.verbs import CheckedTurns
from parlay.thunk import ModelOutputThunk
from parlay.tool_loop import settle
from parlay.tool_protocol import SessionToolCallingProtocol, ToolHooks, as_tool_result
from parlay.tools import DEFAULT_TOOL_TIMEOUT, Tool, Toolbox, timeout_problem
from parlay.turn_runner import TurnRunner

if TYPE_CHECKING:
    from parlay.replay_branch import ResultSource
    from parlay.store import Store, TurnRecorder
    from parlay.template_folders import Folders

# Unsolved (no `format=`), a verb's thunk is `ModelOutputThunk[Any]`; with a model class,
# `.parsed` has that class's type.
M = TypeVar("M", bound=BaseModel, default=Any)
DEFAULT_CHAIN_LIMIT = 5


class Session(ToolHooks, TurnRunner, CheckedTurns):
    """A conversation with one backend.

    `ctx` is the immutable context so far; every verb inserts its input and the model's
    output (a `ModelOutputThunk`, which renders to the turn's messages once computed).
    Assigning `session.ctx` is allowed: that is how results are inserted by hand.

    When the model asks for several calls in one round, `query` and `transform` run them
    at once (`parallel_tools=False`: one after another) and record the results in the
    order of the calls. `tool_timeout` bounds each call of a tool without a timeout of
    its own (default `DEFAULT_TOOL_TIMEOUT`, 120 s; None: no bound); a call that runs over
    is an error result the model sees. `close()` (or
    `with session:`) stops the MCP servers whose tools the session holds.

    Keep and branch: `save(path)` / `Session.load(path)`, `fork(at=n)` (a branch
    from turn n), `replay(backend)` (the user's turns again, on another backend, as a
    branch), `branches` (the tree of them).
    """

    def __init__(
        self,
        backend: Backend,
        *positional: object,
        ctx: Context | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | Toolbox | None = None,
        system: str | None = None,
        chain_limit: int = DEFAULT_CHAIN_LIMIT,
        options: GenerationOptions | None = None,
        log: bool | Store | TurnRecorder = False,
        observers: Sequence[TurnObserver] = (),
        parallel_tools: bool = True,
        tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    ) -> None:
        if positional:
            # `Session(backend, [add])` once took the list as the context and failed later,
            # far from the cause.
            raise TypeError(
                "Session takes only the backend by position; pass the rest by keyword: "
                "Session(backend, tools=[...], ctx=..., system=...)"
            )
        if chain_limit < 1:
            raise InvalidRequestError(f"chain_limit must be at least 1, got {chain_limit}")
        if (problem := timeout_problem(tool_timeout)) is not None:
            raise InvalidRequestError(f"tool_timeout {problem}")
        self.backend = backend
        self.tools = tools if isinstance(tools, Toolbox) else Toolbox(tools or ())
        self.parallel_tools = parallel_tools
        self.tool_timeout = tool_timeout
        self.chain_limit = chain_limit
        self.options = options or GenerationOptions()
        base = ctx if ctx is not None else Context()
        self._ctx = base.insert(SystemMessage(system)) if system else base
        # Told of every completed turn, in order (see `parlay.observers`).
        self.observers: list[TurnObserver] = list(observers)
        # `log=True` subscribes the SQLite log (`parlay logs`) as one more observer.
        self.log: TurnRecorder | None = None
        if log is not False:
            self.log = _sqlite_log(log, getattr(backend, "name", None), system, self.tools.names)
            self.observers.append(self.log)
        self._held_calls: set[str] = set()
        self.branch = Branch("main", self)

    # -- the context -----------------------------------------------------------------
    @property
    def ctx(self) -> Context:
        """The context so far. `len(session.ctx)` counts its items (a turn that ran a tool
        is several); `len(session.ctx.turns)` counts turns."""
        return self._ctx

    @ctx.setter
    def ctx(self, value: Context) -> None:
        if not isinstance(value, Context):
            raise TypeError(f"session.ctx must be a Context, not {type(value).__name__}")
        self._ctx = value

    def fork(self, *, at: int | None = None, name: str | None = None) -> Self:
        """A new session sharing this one's context, backend and tools (nothing is copied).

        `at=n` starts it from the context as it was after turn n (`ctx.at_turn(n)`; 0:
        the system prompt alone, -1: without the last turn). The fork is a branch of this
        session, `name`d (default `<this>.<n>`) in `session.branches`; when the session
        logs, the fork is a log session of its own whose parent is this one, so `parlay
        logs tree` shows it and `-c` continues it with its trunk.
        """
        return self._branch(self._ctx if at is None else self._ctx.at_turn(at), name)

    def _branch(self, ctx: Context, name: str | None) -> Self:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._ctx = ctx
        clone._held_calls = set()
        clone.observers = list(self.observers)  # the same observers, a list of its own
        if self.log is not None:
            clone.log = self.log.forked(clone._ctx)
            clone.observers = [clone.log if o is self.log else o for o in clone.observers]
        clone.branch = self.branch.child(clone, name)
        return clone

    @property
    def branches(self) -> BranchTree:
        """Every fork and replay of this session's root, as a tree (`print` it, or show
        it in a notebook; `.compare()` puts them side by side)."""
        return BranchTree(self.branch.root)

    # -- keeping -------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the context to `path` as JSON (`Context.to_json`), with what reopens it
        (`parlay.session_load`: the backend's name and embedded model, the tools' names
        and import paths, the session's class); `Session.load(path)` reads it back."""
        from parlay.context_schema import save
        from parlay.session_load import meta_of

        save(self.ctx, path, meta_of(self))

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        backend: Backend | None = None,
        *,
        tools: Iterable[Tool | Callable[..., Any]] | Toolbox | None = None,
        session_class: type[Session] | None = None,
        template_dirs: Folders = (),
        trust_template_dirs: bool = False,
        **kwargs: Any,
    ) -> Self:
        """The session saved at `path`, reopened from what `save` wrote: the embedded
        model it ran (else pass `backend`), its tools (imported by the paths saved, see
        `parlay.session_load`; `tools=` gives them instead, exactly), and its class (the
        one `load` is called on or `session_class`, else a subclass of Session imported).
        What it cannot rebuild it names, in one `ConfigurationError`. `kwargs` go to the
        constructor (`options=`, `log=`...). A file never chooses a template folder: an
        instruction naming one is refused unless it is one of `template_dirs` or you
        trust the file (`trust_template_dirs=True`); either way templates render in a
        sandbox."""
        from pathlib import Path

        from parlay.context_schema import from_json
        from parlay.session_load import reopen
        from parlay.template_folders import TemplateFolders

        folders = TemplateFolders(template_dirs, trust_template_dirs)
        items, meta = from_json(Path(path).read_bytes(), folders)
        kind, backend, found, kwargs = reopen(
            Session, cls, meta, backend, tools, session_class, kwargs
        )
        return kind(backend, ctx=Context(items), tools=found, **kwargs)  # type: ignore[return-value]

    # -- replaying -----------------------------------------------------------------------
    def replay(self, backend: Backend | None = None, **kwargs: Any) -> Session:
        """`areplay` from synchronous code (a notebook cell)."""
        from parlay._sync import run_sync

        return run_sync(self.areplay(backend, **kwargs))

    async def areplay(
        self,
        backend: Backend | None = None,
        *,
        ctx: Context | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | Toolbox | None = None,
        session_class: type[Session] | None = None,
        options: GenerationOptions | None = None,
        results: ResultSource = "run",
        name: str | None = None,
    ) -> Session:
        """The user's turns of `ctx` (default: this session's) sent again, one by one, on
        `backend` (default: this one's), as a new branch `name`d of this session (see
        `parlay.replay`). `tools`, `options` and `session_class` (another protocol mixin)
        replace this session's; `results="recorded"` answers a call the old turns made
        with the same arguments from its recorded result instead of running the tool."""
        return await replay_session(
            self, backend, ctx=ctx, tools=tools, session_class=session_class,
            options=options, results=results, name=name,
        )  # fmt: skip

    # -- closing -----------------------------------------------------------------------
    async def aclose(self) -> None:
        """Stop the MCP servers whose tools this session holds (forks share them)."""
        await self.tools.aclose()

    def close(self) -> None:
        self.tools.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- verbs -----------------------------------------------------------------------
    def chat(
        self,
        text: str | Iterable[str | Image],
        *,
        tool_choice: ToolChoice | str | None = None,
        format: type[M] | None = None,
        options: GenerationOptions | None = None,
        run_tools: bool = False,
        chain_limit: int | None = None,
    ) -> ModelOutputThunk[M]:
        """Send a user message. Tool calls are returned in `.tools`, not executed; with
        `run_tools=True` they are run (through the protocol hooks, if the session has
        them) and the model asked again, as `query` does, until it answers. `text` may
        be a list of texts and `parlay.Image`s: `chat(["What is this?", image])`."""
        item = UserMessage.of(text)
        return self._turn(item, tool_choice, format, options, run_tools, chain_limit)

    @overload
    def instruct(
        self,
        description: str,
        *,
        requirements: Sequence[str | Requirement] = ...,
        strategy: Strategy,
        grounding: Mapping[str, Any] | None = ...,
        examples: Sequence[str] = ...,
        tool_choice: ToolChoice | str | None = ...,
        format: type[M] | None = ...,
        options: GenerationOptions | None = ...,
        run_tools: bool = ...,
        chain_limit: int | None = ...,
    ) -> SampledThunk[M]: ...

    @overload
    def instruct(
        self,
        description: str,
        *,
        requirements: Sequence[str | Requirement] = ...,
        strategy: None = ...,
        grounding: Mapping[str, Any] | None = ...,
        examples: Sequence[str] = ...,
        tool_choice: ToolChoice | str | None = ...,
        format: type[M] | None = ...,
        options: GenerationOptions | None = ...,
        run_tools: bool = ...,
        chain_limit: int | None = ...,
    ) -> ModelOutputThunk[M]: ...

    def instruct(
        self,
        description: str,
        *,
        requirements: Sequence[str | Requirement] = (),
        strategy: Strategy | None = None,
        grounding: Mapping[str, Any] | None = None,
        examples: Sequence[str] = (),
        tool_choice: ToolChoice | str | None = None,
        format: type[M] | None = None,
        options: GenerationOptions | None = None,
        run_tools: bool = False,
        chain_limit: int | None = None,
    ) -> ModelOutputThunk[M]:
        """Give a task rendered from the instruction template. Calls are not executed
        unless `run_tools=True` (then as `query` does). With a `strategy`
        (`parlay.requirements`), the `requirements` are checked and the strategy tries
        again until they hold: the thunk is a `SampledThunk` (see docs/requirements.md)."""
        checked = as_requirements(requirements)
        shown = [r.description for r in checked if r.in_instruction and r.description]
        item = Instruction.instruct(
            description, requirements=shown, grounding=grounding, examples=examples
        )
        turn = (tool_choice, format, options, run_tools, chain_limit)
        if strategy is not None:
            return self._sampled_turn(item, checked, strategy, description, turn)
        return self._turn(item, *turn)

    def query(
        self,
        obj: Any,
        question: str,
        *,
        tool_choice: ToolChoice | str | None = None,
        format: type[M] | None = None,
        chain_limit: int | None = None,
        options: GenerationOptions | None = None,
    ) -> ModelOutputThunk[M]:
        """Ask a question about `obj`, running tools until the model answers."""
        item = Instruction.query(obj, question)
        return self._turn(item, tool_choice, format, options, True, chain_limit)

    def transform(
        self,
        obj: Any,
        instruction: str,
        *,
        tool_choice: ToolChoice | str | None = None,
        format: type[M] | None = None,
        chain_limit: int | None = None,
        options: GenerationOptions | None = None,
    ) -> ModelOutputThunk[M]:
        """Transform `obj` as instructed, running tools until the model answers."""
        item = Instruction.transform(obj, instruction)
        return self._turn(item, tool_choice, format, options, True, chain_limit)

    def respond(
        self,
        *,
        tool_choice: ToolChoice | str | None = None,
        format: type[M] | None = None,
        options: GenerationOptions | None = None,
    ) -> ModelOutputThunk[M]:
        """Ask the model for its next turn from the context as it is (say, after tool
        results were inserted by hand). Nothing new is inserted before the output."""
        return self._turn(None, tool_choice, format, options, run_tools=False)

    async def achat(self, text: str, **kwargs: Any) -> ModelOutputThunk[Any]:
        return await self.chat(text, **kwargs)

    async def ainstruct(self, description: str, **kwargs: Any) -> ModelOutputThunk[Any]:
        """`instruct` from async code (with a `strategy`, the thunk is a `SampledThunk`)."""
        reply: ModelOutputThunk[Any] = await self.instruct(description, **kwargs)
        return reply

    async def aquery(self, obj: Any, question: str, **kwargs: Any) -> ModelOutputThunk[Any]:
        return await self.query(obj, question, **kwargs)

    async def atransform(self, obj: Any, instruction: str, **kwargs: Any) -> ModelOutputThunk[Any]:
        return await self.transform(obj, instruction, **kwargs)

    async def arespond(self, **kwargs: Any) -> ModelOutputThunk[Any]:
        return await self.respond(**kwargs)


def _sqlite_log(
    log: bool | Store | TurnRecorder, backend: str | None, system: str | None, tools: Sequence[str]
) -> TurnRecorder:
    # Imported here: the session knows only the observer hook, and `log=` is a shorthand
    # for subscribing the store's recorder (which `observers=` takes as well).
    from parlay.store import Store, TurnRecorder

    if isinstance(log, TurnRecorder):
        return log
    store = Store() if log is True else log
    if not isinstance(store, Store):
        raise TypeError(
            f"log= takes True, a parlay.Store or a TurnRecorder, not {type(log).__name__}"
        )
    return TurnRecorder(store, backend=backend, system=system, tools=tools)


# The protocol mixin lives in parlay.tool_protocol; this module has always exported it.
__all__ = ["Session", "SessionToolCallingProtocol", "as_tool_result", "settle"]
