"""The prompted engine: tool calling for a model that only offers a plain chat API.

`PromptedBackend` (`backend`) wraps any backend. For each request it

1. decides the turn's `policy` once, from `tool_choice`, `parallel_tool_calls`, the offered
   tools and the history (may call, must call, which tool, how many calls, retries);
2. renders the prompt `contract` (templates, few-shot examples, the grammar when the
   backend decodes under one) in `opening`;
3. runs attempts (`attempt`, one round trip each, its state in `turn`): the reply is
   parsed as it streams, and what it shows or holds depends on the turn;
4. judges each reply by the ordered `checks` (`judging`); a verdict asks again with a
   message naming what was wrong (`next_attempt`), or drops what must not go out.

Nothing in this package imports the session side, the proxy or the CLI.
"""
