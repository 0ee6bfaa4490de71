"""The prompted engine: tool calling for a model that only offers a plain chat API.

`PromptedBackend` (`backend`) wraps any backend. For each request it decides the turn's
`policy` once (may call, must call, which tool, how many calls, retries), opens the
`turn` (the prompt `contract` rendered, the first grammar) and runs `attempt`s: each
reply is parsed as it streams, judged by the ordered `checks`, and either released or
asked again with a message naming what was wrong (`judging`).
Nothing in this package imports the session side, the proxy or the CLI.
"""
