"""The prompt contract: what a plain-chat model is shown, and how its reply is read.

- `render` (with `pieces`, `examples`): the system prompt, few-shot turns
  and projected history, from the Jinja2 templates under `templates/contract/`;
- `constrain`: the JSON schema every valid reply matches, for
  backends that decode under a grammar;
- `parser`: the tolerant, streaming reader of the four action syntaxes (typed, json,
  fenced, and the bare call object a grammar holds `fenced` to);
- `repair`: a parsed call's arguments fitted to its tool's schema;
- `grounding`: where a call's values came from (the conversation, the examples, nowhere);
- `state`: where a conversation stands in the tool protocol.


Pure and free of I/O: same request, same text.
"""
